import type { PermissionGroup, Role } from '@carapace/models';
import { Badge, Button, Checkbox, Fieldset, Group, SimpleGrid, Stack, TextInput } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { keepPreviousData, useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { queryKeys, usePermissions, useRoles } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { FormModal, ListTitle, ModalForm, RowAction, useEditDialog } from '../../components/AdminList.tsx';
import { ConfirmDialog, useConfirmedAction } from '../../components/ConfirmDialog.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
import { PAGE_SIZES, useListParams, type ListSpec } from '../../components/listParams.ts';
import { countPermissions, groupsOf, groupTitle, selectionOf } from './rolePermissions.ts';

/** Creates a role, or edits `role`. */
function RoleDialog({ role, opened, onClose, known, formKey }: { role: Role | null; opened: boolean; onClose: () => void; known: readonly PermissionGroup[]; formKey: number }) {
  return (
    <FormModal opened={opened} onClose={onClose} title={role ? `Edit role ${role.data.name}` : 'New role'} size="xl">
      <RoleFormFields key={formKey} role={role} onClose={onClose} known={known} />
    </FormModal>
  );
}

function RoleFormFields({ role, onClose, known }: { role: Role | null; onClose: () => void; known: readonly PermissionGroup[] }) {
  const client = useClient();
  const queryClient = useQueryClient();
  // Mounted at each opening (keyed by it): the form starts from the role as it is now.
  const [name, setName] = useState(() => role?.data.name ?? '');
  const [selection, setSelection] = useState<Record<string, string[]>>(() => selectionOf(role?.data.permissions ?? []));
  const save = useMutation({
    mutationFn: () => {
      const permissions = groupsOf(selection, known);
      return role ? client.updateRole({ ...role, data: { ...role.data, name: name.trim(), permissions } }) : client.createRole(name.trim(), permissions);
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.roles.all });
      notifications.show({ color: 'green', title: role ? 'Role saved' : 'Role created', message: saved.data.name });
      save.reset();
      onClose();
    },
  });
  return (
    <ModalForm
      onClose={onClose}
      formLabel={role ? 'Edit role' : 'New role'}
      onSubmit={() => save.mutate()}
      error={save.error}
      pending={save.isPending}
      submitLabel={role ? 'Save role' : 'Create role'}
    >
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
    </ModalForm>
  );
}

/** The page's state in the address: `?page=&per_page=`. */
const LIST: ListSpec = { pageSizes: PAGE_SIZES };

export function RolesPage() {
  const client = useClient();
  const { can } = useSession();
  const list = useListParams(LIST);
  const roles = useRoles({ page: list.page, perPage: list.perPage, sortBy: { name: 1 } }, { placeholderData: keepPreviousData });
  const permissions = usePermissions();
  const dialog = useEditDialog<Role>();
  const remove = useConfirmedAction({
    action: (r: Role) => client.deleteRole(r.id),
    queryKey: queryKeys.roles.all,
    doneTitle: 'Role deleted',
    name: (r) => r.data.name,
  });
  const known = permissions.data?.items ?? [];

  const columns: Column<Role>[] = [
    { header: 'Name', cell: (r) => r.data.name },
    {
      header: 'Permissions',
      cell: (r) => (
        <Group gap={4}>
          {r.data.permissions.map((g) => (
            <Badge key={g.name} variant="light" tt="none">
              {g.name}: {g.permissions.length}
            </Badge>
          ))}
          {countPermissions(r.data.permissions) === 0 ? (
            <Badge color="gray" variant="outline" tt="none">
              none
            </Badge>
          ) : null}
        </Group>
      ),
    },
    {
      header: 'Actions',
      cell: (r) => (
        <Group gap={4} wrap="nowrap">
          {can('edit_role') ? <RowAction tooltip="Edit" label={`Edit role ${r.data.name}`} icon="✎" disabled={!permissions.data} onClick={() => dialog.open(r)} /> : null}
          {can('delete_role') ? <RowAction tooltip="Delete" label={`Delete role ${r.data.name}`} icon="✕" danger onClick={() => remove.ask(r)} /> : null}
        </Group>
      ),
    },
  ];

  return (
    <Stack gap="md">
      <ListTitle
        title="Roles"
        action={
          can('create_role') ? (
            <Button disabled={!permissions.data} onClick={() => dialog.open(null)}>
              New role
            </Button>
          ) : null
        }
      />
      <ErrorNotice error={permissions.error} onRetry={() => void permissions.refetch()} />
      <div>
        <DataTable
          label="Roles"
          columns={columns}
          query={roles}
          rowKey={(r) => r.id}
          minWidth={560}
          empty="No role."
          paging={list.paging('roles')}
        />
      </div>
      <RoleDialog formKey={dialog.key} role={dialog.item} opened={dialog.opened} onClose={dialog.close} known={known} />
      <ConfirmDialog
        {...remove.dialog}
        title="Delete this role?"
        message={`${remove.target?.data.name ?? ''} is deleted. A role that users still hold cannot be deleted.`}
        confirmLabel="Delete role"
      />
    </Stack>
  );
}
