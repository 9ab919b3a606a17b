// A run whose log the bench feeds itself: a protocol client stands in for the runner (its
// hello, the facts of a fake server, numbered 32 KiB log chunks sent as the runner agent does,
// waiting for the stream's drain, then the result), so the figures are the control plane's.
// Shared by bench:log (the follow stream) and bench:ui (the log view following it).
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createRunnerClient, grpc, PROTOCOL_VERSION, type ControlMessage__Output, type RunnerMessage } from '@carapace/protocol';
import { type Api, type ControlPlane, DISCOVERY_TOKEN } from '../e2e/system.js';
import { eventually } from '@carapace/test-support/eventually';

const CHUNK_CHARS = 32 * 1024;

/** Line `i` of a bench log (about 100 characters, like Ansible's). */
export function logLine(i: number): string {
  return `ok: [10.0.0.${i % 250}] => (item=osd.${i % 97}) task ${String(i).padStart(7, '0')} of the bench playbook, changed=false\n`;
}

/** `lines` lines of bench log in chunks of about 32 KiB. */
export function logChunks(lines: number): string[] {
  const out: string[] = [];
  let buf = '';
  for (let i = 0; i < lines; i++) {
    buf += logLine(i);
    if (buf.length >= CHUNK_CHARS) {
      out.push(buf);
      buf = '';
    }
  }
  if (buf) out.push(buf);
  return out;
}

function benchFacts(ip: string) {
  return {
    hostname: 'bench',
    fqdn: 'bench.example.net',
    os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
    cpu: { count: 8, model: 'bench' },
    memory: { total_bytes: 34359738368 },
    interfaces: [{ name: 'eth0', mac: '52:54:00:00:00:01', mtu: 1500, addresses: [{ family: 'inet', address: ip, prefix: 24 }], default_route: true }],
    default_ipv4: ip,
    disks: [],
    gathered_at: Math.floor(Date.now() / 1000),
  };
}

/** A started execution of the control plane `cp` whose runner is this process. */
export interface FedRun {
  readonly executionId: string;
  /** Sends the chunks as log, in order; resolves when the last is written. */
  sendLog(parts: readonly string[], onChunk?: (index: number) => void): Promise<void>;
  /** Ends the run (completed) and resolves once the control plane acknowledged it. */
  finish(): Promise<void>;
  close(): void;
}

/**
 * Connects a bench runner to `cp` (`api` logged in as root), registers a fake server, runs
 * hello_world on it and resolves once the execution is assigned to the bench runner.
 */
export async function startFedRun(cp: ControlPlane, api: Api): Promise<FedRun> {
  const { token } = await api.ok('POST', '/v1/runner/', { name: 'bench' });
  const client = createRunnerClient(cp.grpcAddress, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  const call = client.Connect(md);
  let assigned: (id: string) => void = () => {};
  const assignment = new Promise<string>((resolve) => (assigned = resolve));
  let acked = 0;
  call.on('data', (m: ControlMessage__Output) => {
    if (m.body === 'assignment' && m.assignment) assigned(m.assignment.execution_id);
    if (m.body === 'ack' && m.ack) acked = Math.max(acked, m.ack.seq);
    // The bench runner answers fact requests itself: the server is not reachable.
    if (m.body === 'gather_facts' && m.gather_facts) {
      const g = m.gather_facts;
      call.write({ facts: { request_id: g.request_id, server_id: g.server_id, facts_json: JSON.stringify(benchFacts(g.address)), host_key: 'ssh-ed25519 AAAAbench', error: '' } });
    }
  });
  call.on('error', () => {});
  call.write({ hello: { protocol_version: PROTOCOL_VERSION, name: 'bench', version: 'bench', labels: {}, slots: 1, running_execution_ids: [], ssh_public_key: '' } });
  const serverId = randomUUID();
  await api.call('POST', '/v1/server/', { id: serverId, host: '10.0.0.1', username: 'ansible' }, false, { authorization: DISCOVERY_TOKEN });
  await eventually('facts', async () => ((await api.ok('GET', `/v1/server/${serverId}/`)).data.state === 'operational' ? true : undefined), 30_000);
  const cluster = await api.ok('POST', '/v1/cluster/', { name: 'bench' });
  const config = await api.ok('POST', '/v1/playbook_configuration/', { name: 'bench', cluster_id: cluster.id, playbook_id: 'hello_world', server_ids: [serverId] });
  const execution = await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } });
  const executionId = await assignment;
  if (executionId !== execution.id) throw new Error('unexpected assignment');

  let offset = 0;
  let seq = 0;
  const write = async (m: RunnerMessage) => {
    if (!call.write(m)) await once(call, 'drain');
  };
  return {
    executionId,
    async sendLog(parts, onChunk) {
      for (const [i, text] of parts.entries()) {
        await write({ log: { execution_id: executionId, seq: ++seq, offset, text } });
        offset += text.length;
        onChunk?.(i);
      }
    },
    async finish() {
      await write({ result: { execution_id: executionId, seq: ++seq, outcome: 'completed', reason: '' } });
      await eventually('the last ack', async () => (acked >= seq ? true : undefined), 30_000);
    },
    close() {
      call.end();
      client.close();
    },
  };
}
