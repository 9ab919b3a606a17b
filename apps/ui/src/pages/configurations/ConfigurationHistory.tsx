import { Group, Loader, Select, Skeleton, Stack, Text } from '@mantine/core';
import { lazy, Suspense, useMemo, useState } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { useConfigurationVersions } from '../../api/queries.ts';
import { formatTime } from '../../components/format.ts';
import { VersionTable } from '../../components/VersionTable.tsx';
import { configToText, type ConfigMode } from './configText.ts';

const DiffView = lazy(() => import('../../components/DiffView.tsx'));

interface HistoryProps {
  id: string;
  /** The configuration's latest version: the diff starts from it and the one before. */
  latest: number;
  mode: ConfigMode;
}

/** The versions of a configuration and a diff between two of them; a new version starts it afresh. */
export function ConfigurationHistory(props: HistoryProps) {
  return <History key={props.latest} {...props} />;
}

function History({ id, latest, mode }: HistoryProps) {
  const versions = useConfigurationVersions(id, latest);
  const items = useMemo(() => versions.data?.items ?? [], [versions.data]);
  const [older, setOlder] = useState<string | null>(() => String(Math.max(1, latest - 1)));
  const [newer, setNewer] = useState<string | null>(() => String(latest));
  const byVersion = useMemo(() => new Map(items.map((v) => [String(v.version), v])), [items]);
  const a = older ? byVersion.get(older) : undefined;
  const b = newer ? byVersion.get(newer) : undefined;
  const options = items.map((v) => ({ value: String(v.version), label: `Version ${v.version} (${formatTime(v.time_updated)})` }));

  if (versions.isPending) return <Skeleton height={200} />;
  if (versions.error) return <ErrorNotice error={versions.error} onRetry={() => void versions.refetch()} />;

  return (
    <Stack gap="md">
      <VersionTable
        items={items}
        label="Versions"
        markDeleted={false}
        columns={[
          { header: 'Name', cell: (v) => v.data.name },
          { header: 'Saved', cell: (v) => formatTime(v.time_updated) },
          {
            header: 'By',
            cell: (v) => (
              <Text size="xs" ff="monospace">
                {v.initiator_id ? v.initiator_id.slice(0, 8) : '—'}
              </Text>
            ),
          },
        ]}
      />
      <Group align="end">
        <Select label="Older version" data={options} value={older} onChange={setOlder} w={300} />
        <Select label="Newer version" data={options} value={newer} onChange={setNewer} w={300} />
      </Group>
      {a && b ? (
        a.version === b.version ? (
          <Text size="sm" c="dimmed">
            Choose two different versions to compare.
          </Text>
        ) : (
          <Suspense fallback={<Loader aria-label="Loading the diff" />}>
            <DiffView
              a={configToText(a.data.configuration, mode)}
              b={configToText(b.data.configuration, mode)}
              mode={mode}
              labelA={`Version ${a.version}`}
              labelB={`Version ${b.version}`}
            />
          </Suspense>
        )
      ) : items.length < 2 ? (
        <Text size="sm" c="dimmed">
          Only one version so far: save a change to compare versions.
        </Text>
      ) : null}
    </Stack>
  );
}
