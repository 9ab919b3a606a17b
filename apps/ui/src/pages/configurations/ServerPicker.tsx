import type { Server } from '@carapace/models';
import { Badge, Button, Checkbox, Fieldset, Group, ScrollArea, Table, Text, TextInput } from '@mantine/core';
import { useMemo, useState, type ReactNode } from 'react';

const SHOWN = 200;

function serverText(server: Server): string {
  return `${server.data.name} ${server.data.fqdn} ${server.data.ip} ${server.data.state} ${server.id}`.toLowerCase();
}

/** A filterable list of servers with check boxes. */
export function ServerPicker({
  servers,
  selected,
  onChange,
  clusterName,
  required,
}: {
  servers: readonly Server[];
  selected: ReadonlySet<string>;
  onChange: (next: Set<string>) => void;
  clusterName: (id: string | null) => string;
  required: boolean;
}): ReactNode {
  const [filter, setFilter] = useState('');
  const matching = useMemo(() => {
    const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
    return servers.filter((s) => {
      const text = serverText(s);
      return words.every((w) => text.includes(w));
    });
  }, [servers, filter]);
  const shown = matching.slice(0, SHOWN);
  const toggle = (id: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    onChange(next);
  };
  const allShownSelected = shown.length > 0 && shown.every((s) => selected.has(s.id));

  return (
    <Fieldset legend={`Servers${required ? ' (required)' : ' (optional: the cluster\'s servers when none)'}`} aria-label="Servers">
      <Group align="end" mb="xs" wrap="wrap">
        <TextInput label="Filter servers" placeholder="Name, address, state" value={filter} onChange={(e) => setFilter(e.currentTarget.value)} w={300} />
        <Button
          variant="light"
          size="xs"
          disabled={!matching.length}
          onClick={() => onChange(new Set([...selected, ...matching.map((s) => s.id)]))}
        >
          Select all {matching.length} matching
        </Button>
        <Button variant="subtle" size="xs" disabled={!selected.size} onClick={() => onChange(new Set())}>
          Clear selection
        </Button>
        <Text size="sm" c="dimmed" aria-live="polite">
          {selected.size} selected
        </Text>
      </Group>
      <ScrollArea.Autosize mah={320} type="auto">
        <Table striped aria-label="Servers to choose from">
          <Table.Thead>
            <Table.Tr>
              <Table.Th w={40}>
                <Checkbox
                  aria-label="Select the servers shown"
                  checked={allShownSelected}
                  indeterminate={!allShownSelected && shown.some((s) => selected.has(s.id))}
                  onChange={(e) => {
                    const next = new Set(selected);
                    for (const s of shown) {
                      if (e.currentTarget.checked) next.add(s.id);
                      else next.delete(s.id);
                    }
                    onChange(next);
                  }}
                />
              </Table.Th>
              <Table.Th>Name</Table.Th>
              <Table.Th>Address</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Cluster</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {shown.map((s) => (
              <Table.Tr key={s.id}>
                <Table.Td>
                  <Checkbox aria-label={`Server ${s.data.name || s.data.fqdn}`} checked={selected.has(s.id)} onChange={(e) => toggle(s.id, e.currentTarget.checked)} />
                </Table.Td>
                <Table.Td>{s.data.name || s.data.fqdn}</Table.Td>
                <Table.Td>{s.data.ip}</Table.Td>
                <Table.Td>
                  <Badge variant="light" color={s.data.state === 'operational' ? 'green' : 'gray'}>
                    {s.data.state}
                  </Badge>
                </Table.Td>
                <Table.Td>{clusterName(s.data.cluster_id)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollArea.Autosize>
      {matching.length > SHOWN ? (
        <Text size="xs" c="dimmed" mt="xs">
          Showing {SHOWN} of {matching.length} matching servers: refine the filter to see the others.
        </Text>
      ) : null}
      {!servers.length ? (
        <Text size="sm" c="dimmed">
          No server has registered yet.
        </Text>
      ) : null}
    </Fieldset>
  );
}
