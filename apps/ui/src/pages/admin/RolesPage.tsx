import type { PermissionGroup, Role } from '@carapace/models';
import { ActionIcon, Badge, Button, Checkbox, Fieldset, Group, Modal, SimpleGrid, Skeleton, Stack, Table, TextInput, Title, Tooltip } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { keys, useAllRoles } from '../../components/queries.ts';
import { ConfirmDialog } from './ConfirmDelete.tsx';
import { countPermissions, groupsOf, groupTitle, selectionOf } from './rolePermissions.ts';

function RoleDialog({ role, opened, onClose, known }: { role: Role | null; opened: boolean; onClose: () => void; known: readonly PermissionGroup[] }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [selection, setSelection] = useState<Record<string, string[]>>({});
  const [lastOpened, setLastOpened] = useState(false);
  if (opened !== lastOpened) {
    setLastOpened(opened);
    if (opened) {
      setName(role?.data.name ?? '');
      setSelection(selectionOf(role?.data.permissions ?? []));
    }
  }
  const save = useMutation({
    mutationFn: () => {
      const permissions = groupsOf(selection, known);
      return role ? client.updateRole({ ...role, data: { ...role.data, name: name.trim(), permissions } }) : client.createRole(name.trim(), permissions);
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: keys.roles });
      notifications.show({ color: 'green', title: role ? 'Role saved' : 'Role created', message: saved.data.name });
      save.reset();
      onClose();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <Modal opened={opened} onClose={onClose} title={role ? `Edit role ${role.data.name}` : 'New role'} size="xl">
      <form onSubmit={submit} aria-label={role ? 'Edit role' : 'New role'}>
        <Stack>
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} maw={360} data-autofocus />
          {known.map((group) => (
            <Fieldset key={group.name} legend={groupTitle(group.name)}>
              <Group gap="xs" mb="xs">
                <Button size="compact-xs" variant="light" onClick={() => setSelection({ ...selection, [group.name]: [...group.permissions] })}>
                  Select all {group.name}
                </Button>
                <Button size="compact-xs" variant="subtle" onClick={() => setSelection({ ...selection, [group.name]: [] })}>
                  Clear {group.name}
                </Button>
              </Group>
              <Checkbox.Group value={selection[group.name] ?? []} onChange={(v) => setSelection({ ...selection, [group.name]: v })} aria-label={groupTitle(group.name)}>
                <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }} spacing={6}>
                  {group.permissions.map((p) => (
                    <Checkbox key={p} value={p} label={p} />
                  ))}
                </SimpleGrid>
              </Checkbox.Group>
            </Fieldset>
          ))}
          <ErrorNotice error={save.error} />
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Close
            </Button>
            <Button type="submit" loading={save.isPending}>
              {role ? 'Save role' : 'Create role'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export function RolesPage() {
  const client = useClient();
  const { can } = useSession();
  const queryClient = useQueryClient();
  const roles = useAllRoles();
  const permissions = useQuery({ queryKey: keys.permissions, queryFn: () => client.getPermissions(), staleTime: 5 * 60_000 });
  const [editing, setEditing] = useState<Role | null>(null);
  const [dialog, setDialog] = useState(false);
  const [deleting, setDeleting] = useState<Role | null>(null);
  const remove = useMutation({
    mutationFn: (r: Role) => client.deleteRole(r.id),
    onSuccess: (r) => {
      void queryClient.invalidateQueries({ queryKey: keys.roles });
      notifications.show({ color: 'green', title: 'Role deleted', message: r.data.name });
      setDeleting(null);
    },
  });
  const known = permissions.data?.items ?? [];

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={2}>Roles</Title>
        {can('create_role') ? (
          <Button
            disabled={!permissions.data}
            onClick={() => {
              setEditing(null);
              setDialog(true);
            }}
          >
            New role
          </Button>
        ) : null}
      </Group>
      <ErrorNotice error={roles.error ?? permissions.error} onRetry={() => void roles.refetch()} />
      {roles.isPending ? (
        <Skeleton height={200} />
      ) : roles.data ? (
        <Table.ScrollContainer minWidth={560}>
          <Table striped highlightOnHover aria-label="Roles">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Permissions</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {roles.data.items.map((r) => (
                <Table.Tr key={r.id}>
                  <Table.Td>{r.data.name}</Table.Td>
                  <Table.Td>
                    <Group gap={4}>
                      {r.data.permissions.map((g) => (
                        <Badge key={g.name} variant="light" tt="none">
                          {g.name}: {g.permissions.length}
                        </Badge>
                      ))}
                      {countPermissions(r.data.permissions) === 0 ? <Badge color="gray" variant="outline" tt="none">none</Badge> : null}
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      {can('edit_role') ? (
                        <Tooltip label="Edit">
                          <ActionIcon
                            variant="subtle"
                            aria-label={`Edit role ${r.data.name}`}
                            disabled={!permissions.data}
                            onClick={() => {
                              setEditing(r);
                              setDialog(true);
                            }}
                          >
                            ✎
                          </ActionIcon>
                        </Tooltip>
                      ) : null}
                      {can('delete_role') ? (
                        <Tooltip label="Delete">
                          <ActionIcon variant="subtle" color="red" aria-label={`Delete role ${r.data.name}`} onClick={() => setDeleting(r)}>
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
      <RoleDialog role={editing} opened={dialog} onClose={() => setDialog(false)} known={known} />
      <ConfirmDialog
        opened={deleting !== null}
        title="Delete this role?"
        message={`${deleting?.data.name ?? ''} is deleted. A role that users still hold cannot be deleted.`}
        confirmLabel="Delete role"
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
