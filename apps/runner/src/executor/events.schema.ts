// The JSON lines written by the carapace callback plugin (ansible/callback_plugins/carapace.py),
// validated before anything of them reaches the agent. Extra fields are tolerated so the
// plugin can grow fields without breaking older runners.
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';

/** The result of a step: one task on one host. */
export const StepResultSchema = Type.Union([
  Type.Literal('ok'),
  Type.Literal('error'),
  Type.Literal('skipped'),
  Type.Literal('unreachable'),
]);
/** The result of a step: one task on one host. */
export type StepResult = Static<typeof StepResultSchema>;

/** A preview's verdict on one task on one host (check mode). */
export const StepPreviewEventSchema = Type.Object({
  status: Type.Union([Type.Literal('would_change'), Type.Literal('unchanged'), Type.Literal('would_fail'), Type.Literal('unknown')]),
  diff: Type.Optional(Type.String()),
  why: Type.Optional(Type.String()),
});

/** One task on one host, as the callback plugin reports it. */
export const StepEventSchema = Type.Object({
  /** The inventory host name (the server's IP address in Carapace inventories). */
  host: Type.String(),
  /** `ansible_host` of the host, else its name. */
  address: Type.String(),
  /** The role of the task, `''` outside roles. */
  role: Type.String(),
  /** The task name as Ansible templated it. */
  name: Type.String(),
  result: StepResultSchema,
  changed: Type.Boolean(),
  /** The error was ignored (`ignore_errors`, `ignore_unreachable`). */
  ignored: Type.Boolean(),
  /** The module result, trimmed, for `error` and `unreachable`; `{}` otherwise. */
  error: Type.Record(Type.String(), Type.Unknown()),
  /** Unix time in seconds (fractional). */
  time_started: Type.Number(),
  /** Unix time in seconds (fractional). */
  time_finished: Type.Number(),
  /** In check mode only: what the task would do. */
  preview: Type.Optional(StepPreviewEventSchema),
});
/** One task on one host, as the callback plugin reports it. */
export type StepEvent = Static<typeof StepEventSchema>;

const HostStatsSchema = Type.Object({
  ok: Type.Number(),
  changed: Type.Number(),
  failures: Type.Number(),
  unreachable: Type.Number(),
  skipped: Type.Number(),
  rescued: Type.Number(),
  ignored: Type.Number(),
});

/** The statistics the plugin writes at the end of a run (what PLAY RECAP shows). */
export const StatsEventSchema = Type.Object({
  hosts: Type.Record(Type.String(), HostStatsSchema),
});
/** The statistics the plugin writes at the end of a run (what PLAY RECAP shows). */
export type StatsEvent = Static<typeof StatsEventSchema>;

const TypedLineSchema = Type.Object({ type: Type.String() });

/** What one line of the events stream turned out to be. */
export type ParsedEventLine =
  | { readonly kind: 'step'; readonly step: StepEvent }
  | { readonly kind: 'stats'; readonly stats: StatsEvent }
  | { readonly kind: 'other' }
  | { readonly kind: 'malformed'; readonly problem: string };

/**
 * Parses one line of the events stream. Never throws: a line that is not JSON, or a known
 * event that lacks its fields, is `malformed`; an event type this runner does not know
 * (or does not need, like `play_start`) is `other`.
 */
export function parseEventLine(line: string): ParsedEventLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { kind: 'malformed', problem: 'not JSON' };
  }
  if (!Value.Check(TypedLineSchema, value)) return { kind: 'malformed', problem: 'not an event object' };
  switch (value.type) {
    case 'step':
      if (!Value.Check(StepEventSchema, value)) return { kind: 'malformed', problem: 'a step without its fields' };
      return { kind: 'step', step: pickStep(value) };
    case 'stats':
      if (!Value.Check(StatsEventSchema, value)) return { kind: 'malformed', problem: 'stats without their fields' };
      return { kind: 'stats', stats: { hosts: value.hosts } };
    default:
      return { kind: 'other' };
  }
}

// Only the documented fields travel on: the agent serializes what it is given.
function pickStep(event: StepEvent): StepEvent {
  return {
    host: event.host,
    address: event.address,
    role: event.role,
    name: event.name,
    result: event.result,
    changed: event.changed,
    ignored: event.ignored,
    error: event.error,
    time_started: event.time_started,
    time_finished: event.time_finished,
    ...(event.preview ? { preview: { status: event.preview.status, ...(event.preview.diff ? { diff: event.preview.diff } : {}), ...(event.preview.why ? { why: event.preview.why } : {}) } } : {}),
  };
}

/**
 * A one-line summary of the statistics for a failure reason: `1 host failed, 2 hosts
 * unreachable`; `null` when no host failed or was unreachable.
 */
export function summarizeStats(stats: StatsEvent): string | null {
  let failed = 0;
  let unreachable = 0;
  for (const host of Object.values(stats.hosts)) {
    if (host.failures > 0) failed += 1;
    if (host.unreachable > 0) unreachable += 1;
  }
  const parts: string[] = [];
  if (failed > 0) parts.push(`${failed} ${failed === 1 ? 'host' : 'hosts'} failed`);
  if (unreachable > 0) parts.push(`${unreachable} ${unreachable === 1 ? 'host' : 'hosts'} unreachable`);
  return parts.length > 0 ? parts.join(', ') : null;
}
