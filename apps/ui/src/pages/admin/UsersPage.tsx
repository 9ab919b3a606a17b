import type { User } from '@carapace/models';
import { ActionIcon, Button, Group, Modal, Select, Skeleton, Stack, Table, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { keys, useAllRoles } from '../../components/queries.ts';
import { ConfirmDialog } from './ConfirmDelete.tsx';

interface UserForm {
  login: string;
  email: string;
  fullName: string;
  roleId: string | null;
}

function UserDialog({ user, opened, onClose }: { user: User | null; opened: boolean; onClose: () => void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const roles = useAllRoles(opened);
  const [form, setForm] = useState<UserForm>({ login: '', email: '', fullName: '', roleId: null });
  const [lastOpened, setLastOpened] = useState(false);
  if (opened !== lastOpened) {
    setLastOpened(opened);
    if (opened) setForm(user ? { login: user.data.login, email: user.data.email, fullName: user.data.full_name, roleId: user.data.role_id } : { login: '', email: '', fullName: '', roleId: null });
  }
  const save = useMutation({
    mutationFn: () =>
      user
        ? client.updateUser({ ...user, data: { ...user.data, login: form.login.trim(), email: form.email.trim(), full_name: form.fullName, role_id: form.roleId } })
        : client.createUser(form.login.trim(), form.email.trim(), form.fullName, form.roleId),
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: keys.users });
      notifications.show({
        color: 'green',
        title: user ? 'User saved' : 'User created',
        message: user ? saved.data.login : `${saved.data.login}: a password was e-mailed to ${saved.data.email}.`,
      });
      save.reset();
      onClose();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <Modal opened={opened} onClose={onClose} title={user ? `Edit user ${user.data.login}` : 'New user'}>
      <form onSubmit={submit} aria-label={user ? 'Edit user' : 'New user'}>
        <Stack>
          <TextInput label="Login" required value={form.login} onChange={(e) => setForm({ ...form, login: e.currentTarget.value })} data-autofocus />
          <TextInput label="Email" type="email" required value={form.email} onChange={(e) => setForm({ ...form, email: e.currentTarget.value })} />
          <TextInput label="Full name" value={form.fullName} onChange={(e) => setForm({ ...form, fullName: e.currentTarget.value })} />
          <Select
            label="Role"
            placeholder={roles.isLoading ? 'Loading…' : 'No role'}
            data={(roles.data?.items ?? []).map((r) => ({ value: r.id, label: r.data.name }))}
            value={form.roleId}
            onChange={(v) => setForm({ ...form, roleId: v })}
            clearable
            disabled={!roles.data}
          />
          <ErrorNotice error={save.error ?? roles.error} />
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Close
            </Button>
            <Button type="submit" loading={save.isPending}>
              {user ? 'Save user' : 'Create user'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export function UsersPage() {
  const client = useClient();
  const { can, user: self } = useSession();
  const queryClient = useQueryClient();
  const users = useQuery({ queryKey: keys.users, queryFn: () => client.getUsers({ all: true, sortBy: { login: 1 } }) });
  const roles = useAllRoles();
  const roleName = useMemo(() => new Map((roles.data?.items ?? []).map((r) => [r.id, r.data.name])), [roles.data]);
  const [editing, setEditing] = useState<User | null>(null);
  const [dialog, setDialog] = useState(false);
  const [deleting, setDeleting] = useState<User | null>(null);
  const remove = useMutation({
    mutationFn: (u: User) => client.deleteUser(u.id),
    onSuccess: (u) => {
      void queryClient.invalidateQueries({ queryKey: keys.users });
      notifications.show({ color: 'green', title: 'User deleted', message: u.data.login });
      setDeleting(null);
    },
  });

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={2}>Users</Title>
        {can('create_user') ? (
          <Button
            onClick={() => {
              setEditing(null);
              setDialog(true);
            }}
          >
            New user
          </Button>
        ) : null}
      </Group>
      <ErrorNotice error={users.error} onRetry={() => void users.refetch()} />
      {users.isPending ? (
        <Skeleton height={200} />
      ) : users.data ? (
        <Table.ScrollContainer minWidth={640}>
          <Table striped highlightOnHover aria-label="Users">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Login</Table.Th>
                <Table.Th>Full name</Table.Th>
                <Table.Th>Email</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {users.data.items.map((u) => (
                <Table.Tr key={u.id}>
                  <Table.Td>{u.data.login}</Table.Td>
                  <Table.Td>{u.data.full_name || '—'}</Table.Td>
                  <Table.Td>{u.data.email}</Table.Td>
                  <Table.Td>{u.data.role_id ? (roleName.get(u.data.role_id) ?? u.data.role_id.slice(0, 8)) : <Text c="dimmed" size="sm">none</Text>}</Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      {can('edit_user') ? (
                        <Tooltip label="Edit">
                          <ActionIcon
                            variant="subtle"
                            aria-label={`Edit user ${u.data.login}`}
                            onClick={() => {
                              setEditing(u);
                              setDialog(true);
                            }}
                          >
                            ✎
                          </ActionIcon>
                        </Tooltip>
                      ) : null}
                      {can('delete_user') && u.id !== self.id ? (
                        <Tooltip label="Delete">
                          <ActionIcon variant="subtle" color="red" aria-label={`Delete user ${u.data.login}`} onClick={() => setDeleting(u)}>
                            ✕
                          </ActionIcon>
                        </Tooltip>
                      ) : null}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      ) : null}
      <UserDialog user={editing} opened={dialog} onClose={() => setDialog(false)} />
      <ConfirmDialog
        opened={deleting !== null}
        title="Delete this user?"
        message={`${deleting?.data.login ?? ''} can no longer sign in; their sessions end now.`}
        confirmLabel="Delete user"
        onConfirm={() => deleting && remove.mutate(deleting)}
        onClose={() => {
          setDeleting(null);
          remove.reset();
        }}
        pending={remove.isPending}
        error={remove.error}
      />
    </Stack>
  );
}
