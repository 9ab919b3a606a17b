import { Badge } from '@mantine/core';

const SERVER_COLORS: Record<string, string> = {
  operational: 'green',
  off: 'gray',
  maintenance_no_reconfig: 'yellow',
  maintenance_reconfig: 'orange',
  gathering_facts: 'blue',
  unreachable: 'red',
};

const EXECUTION_COLORS: Record<string, string> = {
  created: 'gray',
  started: 'blue',
  completed: 'green',
  failed: 'red',
  canceling: 'orange',
  canceled: 'yellow',
};

const RUNNER_COLORS: Record<string, string> = { connected: 'green', draining: 'yellow', disconnected: 'gray' };

/** A state as words: `maintenance_no_reconfig` → `maintenance no reconfig`. */
export function stateLabel(state: string): string {
  return state.replace(/_/g, ' ');
}

/** A coloured badge for a server, execution or runner state. */
export function StateBadge({ state, kind = 'server' }: { state: string; kind?: 'server' | 'execution' | 'runner' }) {
  const colors = kind === 'execution' ? EXECUTION_COLORS : kind === 'runner' ? RUNNER_COLORS : SERVER_COLORS;
  return (
    <Badge color={colors[state] ?? 'gray'} variant="light" tt="none">
      {stateLabel(state)}
    </Badge>
  );
}
