import type { ClusterStatus } from '@carapace/models';
import { Badge, Group, Text } from '@mantine/core';
import { formatAgo, formatTime } from './format.ts';

/** What the badge of a cluster's status says: Ceph's health when collected, else the state. */
export type HealthWord = 'HEALTH_OK' | 'HEALTH_WARN' | 'HEALTH_ERR' | 'UNREACHABLE' | 'PENDING' | 'NOT_DEPLOYED';

const COLORS: Record<HealthWord, string> = {
  HEALTH_OK: 'green',
  HEALTH_WARN: 'yellow',
  HEALTH_ERR: 'red',
  UNREACHABLE: 'red',
  PENDING: 'gray',
  NOT_DEPLOYED: 'gray',
};

const LABELS: Record<HealthWord, string> = {
  HEALTH_OK: 'HEALTH_OK',
  HEALTH_WARN: 'HEALTH_WARN',
  HEALTH_ERR: 'HEALTH_ERR',
  UNREACHABLE: 'unreachable',
  PENDING: 'no status yet',
  NOT_DEPLOYED: 'not deployed',
};

/** The word of a status (a missing status, a cluster the list does not hold yet, is pending). */
export function healthWord(status: ClusterStatus | null | undefined): HealthWord {
  if (!status) return 'PENDING';
  if (status.state === 'collected' && status.ceph) return status.ceph.health.status;
  if (status.state === 'unreachable') return 'UNREACHABLE';
  if (status.state === 'not_deployed') return 'NOT_DEPLOYED';
  return 'PENDING';
}

/** The colour of a health word, also for a history point's `UNREACHABLE`. */
export function healthColor(word: string): string {
  return COLORS[word as HealthWord] ?? 'gray';
}

/**
 * A cluster's health as a coloured badge: HEALTH_OK green, HEALTH_WARN yellow, HEALTH_ERR and
 * unreachable red (with since when), no status yet and not deployed grey.
 */
export function HealthBadge({ status, name, size = 'md' }: { status: ClusterStatus | null | undefined; name: string; size?: 'sm' | 'md' | 'lg' }) {
  const word = healthWord(status);
  const since = word === 'UNREACHABLE' ? (status?.unreachable?.since ?? null) : null;
  const label = `Health of ${name}: ${LABELS[word]}${since ? ` since ${formatTime(since)}` : ''}`;
  return (
    <Group gap={6} wrap="nowrap" role="status" aria-label={label} title={status?.unreachable?.reason ?? label}>
      <Badge color={COLORS[word]} variant={word === 'UNREACHABLE' ? 'outline' : 'light'} tt="none" size={size} data-health={word}>
        {LABELS[word]}
      </Badge>
      {since !== null && (
        <Text size="xs" c="red" title={formatTime(since)}>
          since {formatAgo(since)}
        </Text>
      )}
    </Group>
  );
}
