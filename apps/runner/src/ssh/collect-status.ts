import { SshError, lastOutputLine } from './ssh-error.js';
import { openSession, type SshConnectOptions, type SshTarget } from './session.js';

/** The `ceph` commands of a status collection, by section name, in the order they run. */
export const STATUS_COMMANDS = [
  ['status', 'status'],
  ['df', 'df'],
  ['osd_tree', 'osd tree'],
  ['osd_dump', 'osd dump'],
  ['mon_dump', 'mon dump'],
  ['mgr_dump', 'mgr dump'],
] as const;

export type StatusSection = (typeof STATUS_COMMANDS)[number][0];

/** What one monitor host answered: the JSON text of every command. */
export type StatusOutputs = Record<StatusSection, string>;

/** Options of {@link collectStatus}. */
export interface CollectStatusOptions extends SshConnectOptions {
  /** Ceph's cluster name (`--cluster`), `ceph` by default. */
  readonly cephCluster?: string;
  /** `ceph --connect-timeout`, in seconds (10 by default); the whole command gets 4 times that plus 5 s. */
  readonly connectTimeoutS?: number;
  /** The most bytes all outputs together may take. */
  readonly maxOutputBytes: number;
  /** The clock, in milliseconds; `Date.now` by default. */
  readonly now?: () => number;
}

/** What {@link collectStatus} got. */
export type CollectedStatus =
  | { readonly ok: true; readonly outputs: StatusOutputs; readonly monitor: string; readonly durationMs: number }
  | { readonly ok: false; readonly error: string; readonly monitor: string; readonly durationMs: number };

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * The script run by `/bin/sh -s` on a monitor host: each `ceph` command framed by marker lines
 * with its exit status; as root, or through `sudo -n` (as the playbooks become root) when the
 * login is not root. The first command that fails ends the script: the monitors did not
 * answer, the others would wait as long.
 */
export function statusScript(cephCluster: string, connectTimeoutS: number): string {
  if (!NAME.test(cephCluster)) throw new RangeError(`not a Ceph cluster name: ${JSON.stringify(cephCluster)}`);
  const t = Math.max(1, Math.min(300, Math.round(connectTimeoutS)));
  const lines = [
    'LC_ALL=C',
    'export LC_ALL',
    'PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin"',
    'export PATH',
    'if [ "$(id -u)" = 0 ]; then S=; else S="sudo -n"; fi',
    'section() {',
    '  name=$1',
    '  shift',
    "  printf '@@carapace-status begin %s@@\\n' \"$name\"",
    `  $S ceph --cluster ${cephCluster} --connect-timeout ${t} "$@" -f json </dev/null`,
    '  rc=$?',
    "  printf '\\n@@carapace-status end %s %s@@\\n' \"$name\" \"$rc\"",
    '  [ "$rc" = 0 ] || exit 0',
    '}',
    ...STATUS_COMMANDS.map(([name, command]) => `section ${name} ${command}`),
    '',
  ];
  return lines.join('\n');
}

/** Reads the framed sections of the script's output; an error names the first command that failed. */
export function splitStatusOutput(stdout: string, stderr: string): StatusOutputs | { error: string } {
  const out: Partial<StatusOutputs> = {};
  const re = /@@carapace-status begin ([a-z_]+)@@\n([\s\S]*?)\n@@carapace-status end \1 (\d+)@@/g;
  for (const m of stdout.matchAll(re)) {
    const [, name, body, rc] = m as unknown as [string, StatusSection, string, string];
    if (rc !== '0') {
      const why = lastOutputLine(stderr) || lastOutputLine(body) || 'no output';
      return { error: `ceph ${STATUS_COMMANDS.find(([n]) => n === name)?.[1] ?? name} exited with ${rc}: ${why}` };
    }
    out[name] = body;
  }
  for (const [name, command] of STATUS_COMMANDS) {
    if (out[name] === undefined) {
      const said = lastOutputLine(stderr) || lastOutputLine(stdout);
      return { error: `ceph ${command} did not run${said ? `: ${said}` : ''}` };
    }
  }
  return out as StatusOutputs;
}

/** `ceph mgr dump` without what is not shown (every module's options): `{active_name, available, standbys: [{name}]}`. */
export function reduceMgrDump(json: string): string {
  let dump: unknown;
  try {
    dump = JSON.parse(json);
  } catch {
    return json; // the control plane says why it is not JSON
  }
  if (typeof dump !== 'object' || dump === null) return json;
  const d = dump as Record<string, unknown>;
  const standbys = Array.isArray(d.standbys) ? d.standbys : [];
  return JSON.stringify({
    active_name: typeof d.active_name === 'string' ? d.active_name : '',
    available: d.available === true,
    standbys: standbys.flatMap((s) => (typeof s === 'object' && s !== null && typeof (s as { name?: unknown }).name === 'string' ? [{ name: (s as { name: string }).name }] : [])),
  });
}

/**
 * Collects what Ceph says of a cluster from the first of `monitors` that answers: one SSH
 * session and one exec of {@link statusScript} per host tried, the recorded host key
 * enforced as for facts and runs (a monitor without a recorded key is not tried). A host that
 * cannot be reached, or whose `ceph` fails, gives way to the next; the error of a failure
 * lists every host's reason.
 */
export async function collectStatus(monitors: readonly SshTarget[], options: CollectStatusOptions): Promise<CollectedStatus> {
  const now = options.now ?? Date.now;
  const started = now();
  const connectTimeoutS = options.connectTimeoutS && options.connectTimeoutS > 0 ? options.connectTimeoutS : 10;
  const script = statusScript(options.cephCluster || 'ceph', connectTimeoutS);
  const reasons: string[] = [];
  let last = '';
  for (const target of monitors) {
    last = target.address;
    if (target.expectedHostKey === null) {
      reasons.push(`${target.address}: no host key is recorded for this server`);
      continue;
    }
    try {
      const session = await openSession(target, options);
      try {
        const result = await session.exec('/bin/sh -s', {
          stdin: script,
          timeoutMs: STATUS_COMMANDS.length * connectTimeoutS * 1000 + 5000,
          what: 'status collection',
          maxOutputBytes: options.maxOutputBytes,
        });
        const split = splitStatusOutput(result.stdout, result.stderr);
        if ('error' in split) throw new SshError('command', session.host, split.error);
        return { ok: true, outputs: { ...split, mgr_dump: reduceMgrDump(split.mgr_dump) }, monitor: target.address, durationMs: Math.max(0, now() - started) };
      } finally {
        await session.close();
      }
    } catch (err) {
      reasons.push(err instanceof Error ? err.message : String(err));
    }
  }
  const error = reasons.length === 0 ? 'the cluster has no monitor host to ask' : reasons.join('; ');
  return { ok: false, error: error.slice(0, 2000), monitor: last, durationMs: Math.max(0, now() - started) };
}
