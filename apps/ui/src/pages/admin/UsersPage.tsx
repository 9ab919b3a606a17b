import type { User } from '@carapace/models';
import { Button, Group, Select, Stack, Text, TextInput } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { keepPreviousData, useMutation, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { queryKeys, useAllRoles, useUsers } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { FormModal, ListTitle, ModalForm, RowAction, useEditDialog } from '../../components/AdminList.tsx';
import { ConfirmDialog, useConfirmedAction } from '../../components/ConfirmDialog.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
import { PAGE_SIZES, useListParams, type ListSpec } from '../../components/listParams.ts';

interface UserForm {
  login: string;
  email: string;
  fullName: string;
  roleId: string | null;
}

/** Creates a user, or edits `user`. */
function UserDialog({ user, opened, onClose, formKey }: { user: User | null; opened: boolean; onClose: () => void; formKey: number }) {
  return (
    <FormModal opened={opened} onClose={onClose} title={user ? `Edit user ${user.data.login}` : 'New user'}>
      <UserFormFields key={formKey} user={user} opened={opened} onClose={onClose} />
    </FormModal>
  );
}

function UserFormFields({ user, opened, onClose }: { user: User | null; opened: boolean; onClose: () => void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const roles = useAllRoles(opened);
  // Mounted at each opening (keyed by it): the form starts from the user as it is now.
  const [form, setForm] = useState<UserForm>(() =>
    user ? { login: user.data.login, email: user.data.email, fullName: user.data.full_name, roleId: user.data.role_id } : { login: '', email: '', fullName: '', roleId: null },
  );
  const save = useMutation({
    mutationFn: () =>
      user
        ? client.updateUser({ ...user, data: { ...user.data, login: form.login.trim(), email: form.email.trim(), full_name: form.fullName, role_id: form.roleId } })
        : client.createUser(form.login.trim(), form.email.trim(), form.fullName, form.roleId),
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.users.all });
      notifications.show({
        color: 'green',
        title: user ? 'User saved' : 'User created',
        message: user ? saved.data.login : `${saved.data.login}: a password was e-mailed to ${saved.data.email}.`,
      });
      save.reset();
      onClose();
    },
  });
  return (
    <ModalForm
      onClose={onClose}
      formLabel={user ? 'Edit user' : 'New user'}
      onSubmit={() => save.mutate()}
      error={save.error ?? roles.error}
      pending={save.isPending}
      submitLabel={user ? 'Save user' : 'Create user'}
    >
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
    </ModalForm>
  );
}

/** The page's state in the address: `?page=&per_page=`. */
const LIST: ListSpec = { pageSizes: PAGE_SIZES };

export function UsersPage() {
  const client = useClient();
  const { can, user: self } = useSession();
  const list = useListParams(LIST);
  const users = useUsers({ page: list.page, perPage: list.perPage, sortBy: { login: 1 } }, { placeholderData: keepPreviousData });
  const roles = useAllRoles();
  const roleName = useMemo(() => new Map((roles.data?.items ?? []).map((r) => [r.id, r.data.name])), [roles.data]);
  const dialog = useEditDialog<User>();
  const remove = useConfirmedAction({
    action: (u: User) => client.deleteUser(u.id),
    queryKey: queryKeys.users.all,
    doneTitle: 'User deleted',
    name: (u) => u.data.login,
  });

  const columns: Column<User>[] = [
    { header: 'Login', cell: (u) => u.data.login },
    { header: 'Full name', cell: (u) => u.data.full_name || '—' },
    { header: 'Email', cell: (u) => u.data.email },
    {
      header: 'Role',
      cell: (u) =>
        u.data.role_id ? (
          (roleName.get(u.data.role_id) ?? u.data.role_id.slice(0, 8))
        ) : (
          <Text c="dimmed" size="sm">
            none
          </Text>
        ),
    },
    {
      header: 'Actions',
      cell: (u) => (
        <Group gap={4} wrap="nowrap">
          {can('edit_user') ? <RowAction tooltip="Edit" label={`Edit user ${u.data.login}`} icon="✎" onClick={() => dialog.open(u)} /> : null}
          {can('delete_user') && u.id !== self.id ? <RowAction tooltip="Delete" label={`Delete user ${u.data.login}`} icon="✕" danger onClick={() => remove.ask(u)} /> : null}
        </Group>
      ),
    },
  ];

  return (
    <Stack gap="md">
      <ListTitle title="Users" action={can('create_user') ? <Button onClick={() => dialog.open(null)}>New user</Button> : null} />
      <div>
        <DataTable
          label="Users"
          columns={columns}
          query={users}
          rowKey={(u) => u.id}
          minWidth={640}
          empty="No user."
          paging={list.paging('users')}
        />
      </div>
      <UserDialog formKey={dialog.key} user={dialog.item} opened={dialog.opened} onClose={dialog.close} />
      <ConfirmDialog
        {...remove.dialog}
        title="Delete this user?"
        message={`${remove.target?.data.login ?? ''} can no longer sign in; their sessions end now.`}
        confirmLabel="Delete user"
      />
    </Stack>
  );
}
