import type { ExecutionStep } from '@carapace/models';
import { Badge, Button, Code, Table, Text } from '@mantine/core';
import { Fragment, useState, type ReactNode } from 'react';
import { formatDuration, formatTime } from '../../components/format.ts';
import { resultColor, stepSeconds } from '../../components/runFormat.ts';

/** The steps of an execution: host, role, task, result, duration; failed ones expand to their error. */
export function StepsTable({ steps, hostName }: { steps: readonly ExecutionStep[]; hostName: (serverId: string | null) => string }): ReactNode {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((o) => {
      const next = new Set(o);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  if (!steps.length) return <Text size="sm" c="dimmed">No step has finished yet.</Text>;
  return (
    <Table.ScrollContainer minWidth={720}>
      <Table striped aria-label="Steps">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Host</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>Task</Table.Th>
            <Table.Th>Result</Table.Th>
            <Table.Th>Duration</Table.Th>
            <Table.Th>Finished</Table.Th>
            <Table.Th>
              <span className="sr-only" style={{ position: 'absolute', width: 1, height: 1, overflow: 'hidden', clip: 'rect(0 0 0 0)' }}>
                Error
              </span>
            </Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {steps.map((step) => {
            const hasError = step.data.error && Object.keys(step.data.error).length > 0;
            const expanded = open.has(step.id);
            return (
              <Fragment key={step.id}>
                <Table.Tr>
                  <Table.Td>{hostName(step.data.server_id)}</Table.Td>
                  <Table.Td>{step.data.role || '—'}</Table.Td>
                  <Table.Td>{step.data.name}</Table.Td>
                  <Table.Td>
                    <Badge color={resultColor(step.data.result)} variant="light" tt="none">
                      {step.data.result}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{formatDuration(stepSeconds(step.data.time_started, step.data.time_finished))}</Table.Td>
                  <Table.Td>{formatTime(step.data.time_finished)}</Table.Td>
                  <Table.Td>
                    {hasError ? (
                      <Button size="compact-xs" variant="subtle" color="red" aria-expanded={expanded} onClick={() => toggle(step.id)}>
                        {expanded ? 'Hide error' : 'Show error'}
                      </Button>
                    ) : null}
                  </Table.Td>
                </Table.Tr>
                {hasError && expanded ? (
                  <Table.Tr>
                    <Table.Td colSpan={7}>
                      <Code block style={{ maxHeight: 320, overflow: 'auto', whiteSpace: 'pre-wrap' }} aria-label={`Error of ${step.data.name}`}>
                        {typeof step.data.error.msg === 'string' ? `${step.data.error.msg}\n\n` : ''}
                        {JSON.stringify(step.data.error, null, 2)}
                      </Code>
                    </Table.Td>
                  </Table.Tr>
                ) : null}
              </Fragment>
            );
          })}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
