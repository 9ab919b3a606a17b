// Cluster status end to end with real parts (issue 30): the control plane (its services and
// HTTP API in this process, on a real database), its real gRPC server on port 0, a real runner
// agent collecting over ssh2, and a real lab host (systemd-nspawn, real sshd) whose `ceph` is
// a small script printing recorded Pacific outputs (test/fixtures/ceph-pacific: real Ceph is
// tested by the Ceph end-to-end files). A dead monitor address listed first makes the runner
// try the next one; the login is a user with passwordless sudo, and the host's `ceph` answers
// root only. Checked: the status API, the history, the webhook and the e-mail sent once
// per change of health, the unreachable state (sshd stopped: reason and since), /metrics.
import { createServer, type Server } from 'node:http';
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterData } from '@carapace/models';
import { STATUS_LIMITS } from '@carapace/protocol';
import { createLogger, startGrpcServer, type GrpcServer } from '@carapace/control-plane';
import { schema, VersionedRepository } from '@carapace/control-plane/testing';
import { grpc } from '@carapace/protocol';
import { collectStatus, fileRunRecords, gatherFacts, RunnerAgent, type AgentPorts } from '@carapace/runner';
import { makeFacts } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';
import { createLab, generateKeyPair, type Lab, type LabHost } from '../lab/lab.js';
import { eventually } from '@carapace/test-support/eventually';

const FIXTURES = join(import.meta.dirname, '../fixtures/ceph-pacific');
const SECRET = 'webhook-secret-for-status-tests-0123';
const DEAD = '10.77.0.250';

/** The host's `ceph`: prints the recorded output of the command given, from the set named in /etc/carapace-ceph/mode. */
const FAKE_CEPH = `#!/bin/sh
# A recorded Ceph (test/fixtures/ceph-pacific): the output of the command given, from the set
# named in /etc/carapace-ceph/mode (ok, warn).
# Only root may (as Ceph's admin keyring is root's): the collection must become root.
[ "$(id -u)" = 0 ] || { echo "error: ceph run as $(id -un), not root" >&2; exit 13; }
dir=/etc/carapace-ceph/$(cat /etc/carapace-ceph/mode)
cmd=
while [ $# -gt 0 ]; do
  case "$1" in
    --cluster|--connect-timeout|-f|--format) shift 2 ;;
    *) cmd="\${cmd:+\${cmd}_}$1"; shift ;;
  esac
done
[ -f "$dir/$cmd.json" ] || { echo "error: unknown command $cmd" >&2; exit 22; }
cat "$dir/$cmd.json"
`;

describe('cluster status through a runner and a real host', { timeout: 120_000 }, () => {
  let dir: string;
  let h: Harness;
  let grpcServer: GrpcServer;
  let agent: RunnerAgent;
  let root: string;
  let lab: Lab;
  let host: LabHost;
  let stopBackground: () => void = () => undefined;
  let clusterId: string;
  const hooks: { body: string; signature: string }[] = [];
  let hookServer: Server;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-status-it-'));
    const key = await generateKeyPair(dir);
    hookServer = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        hooks.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['x-carapace-signature'] ?? '') });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
    const hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/status-hook`;
    const file = join(dir, 'carapace.yaml');
    writeFileSync(
      file,
      stringify({
        notifications: {
          email: [{ to: 'ops@example.com', events: ['cluster_health'] }],
          webhooks: [{ url: hookUrl, secret: SECRET, events: ['cluster_health'] }],
        },
      }),
    );
    const [started, booted] = await Promise.all([
      Harness.start({ CARAPACE_CONFIG: file, CARAPACE_GRPC_PORT: '0', CARAPACE_STATUS_INTERVAL_S: '2', CARAPACE_STATUS_CONNECT_TIMEOUT_S: '3' }),
      createLab({ hosts: 1, name: 'status', sshKey: key }),
    ]);
    h = started;
    lab = booted;
    host = lab.hosts[0] as LabHost;
    root = await h.rootToken();
    stopBackground = await h.container.startBackground();
    grpcServer = await startGrpcServer(h.config, h.container.services, createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'));

    // The host's recorded Ceph.
    await host.exec('mkdir -p /etc/carapace-ceph/ok /etc/carapace-ceph/warn && echo ok > /etc/carapace-ceph/mode');
    for (const kind of ['ok', 'warn']) {
      for (const name of ['status', 'df', 'osd_tree', 'osd_dump', 'mon_dump', 'mgr_dump']) {
        await host.exec(`cat > /etc/carapace-ceph/${kind}/${name}.json`, { input: readFileSync(join(FIXTURES, kind, `${name}.json`), 'utf8') });
      }
    }
    await host.exec('cat > /usr/local/bin/ceph && chmod 755 /usr/local/bin/ceph', { input: FAKE_CEPH });
    // The login is not root but `ansible`, with passwordless sudo, as the playbooks expect.
    await host.exec(
      'useradd -m -s /bin/bash ansible && mkdir -p /home/ansible/.ssh && cp /root/.ssh/authorized_keys /home/ansible/.ssh/ && chown -R ansible: /home/ansible/.ssh && chmod 700 /home/ansible/.ssh && echo "ansible ALL=(ALL) NOPASSWD: ALL" > /etc/sudoers.d/ansible && chmod 440 /etc/sudoers.d/ansible',
    );

    // The runner: real ssh2 for facts and status, with the lab's key.
    const privateKey = readFileSync(key.privateKeyPath);
    const ports: AgentPorts = {
      startRun: () => {
        throw new Error('no execution in this test');
      },
      preflight: async () => [],
      gatherFacts: (target) => gatherFacts(target, { privateKey, timeoutMs: 10_000 }),
      collectStatus: (request) =>
        collectStatus(request.monitors, {
          privateKey,
          timeoutMs: 2_000,
          cephCluster: request.cephCluster,
          connectTimeoutS: request.connectTimeoutS,
          maxOutputBytes: STATUS_LIMITS.maxOutputBytes,
        }),
      records: fileRunRecords(join(dir, 'runs')),
    };
    const issued = await h.request('POST', '/v1/runner/', { token: root, body: { name: 'near', labels: { site: 'lab' } } });
    expect(issued.status, issued.body).toBe(200);
    agent = new RunnerAgent(
      {
        controlPlanes: [`127.0.0.1:${grpcServer.port}`],
        credentials: grpc.credentials.createInsecure(),
        token: issued.json.token,
        name: 'near',
        version: '0.1.0-test',
        labels: { site: 'lab' },
        slots: 1,
        sshPublicKey: key.publicKey,
        workDir: join(dir, 'runner'),
        drainGraceMs: 1000,
        reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
        outboxMemoryBytes: 1024 * 1024,
      },
      ports,
      createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    );
    agent.start();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'lab-ceph' } })).json.id;

    // The host registers (its facts and host key gathered over SSH); a dead monitor too.
    const discovery = { authorization: h.config.discoveryTokens[0] ?? '' };
    const live = '00000000-0000-4000-8000-00000000a001';
    const dead = '00000000-0000-4000-8000-00000000a002';
    expect((await h.request('POST', '/v1/server/', { headers: discovery, body: { id: live, host: host.ip, username: 'ansible' } })).status).toBe(200);
    expect((await h.request('POST', '/v1/server/', { headers: discovery, body: { id: dead, host: DEAD, username: 'root' } })).status).toBe(200);
    await h.container.services.servers.recordFacts(dead, makeFacts('deadmon', DEAD), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDeadMonitorKey');
    const server = await eventually('the host\'s facts', async () => {
      const s = await h.container.services.servers.get(live);
      return s.data.ssh_host_key ? s : undefined;
    });
    const deadServer = await h.container.services.servers.get(dead);

    // Deployed: its monitors in the configuration, the dead one first; an execution ended.
    const repo = new VersionedRepository<ClusterData>(h.db, schema.clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
    const latest = await repo.get(clusterId);
    const member = (s: typeof server) => ({ server_id: s.id, version: s.version, fqdn: s.data.fqdn, ip: s.data.ip, server_name: s.data.name });
    await h.db.transaction(() =>
      repo.append(latest!, { data: { ...latest!.data, configuration: { mons: [member(deadServer), member(server)], osds: [member(server)] } } }, null, Math.floor(Date.now() / 1000)),
    );
    await h.container.services.status.executionEnded(clusterId);
  }, 40 * 60_000);

  afterAll(async () => {
    stopBackground();
    agent?.stop();
    await grpcServer?.close();
    await h?.stop();
    await lab?.destroy();
    await new Promise<void>((resolve) => (hookServer ? hookServer.close(() => resolve()) : resolve()));
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  const get = async (path: string) => {
    const res = await h.request('GET', path, { token: root });
    expect(res.status, res.body).toBe(200);
    return res.json;
  };
  const status = () => get(`/v1/cluster/${clusterId}/status/`);
  const healthHooks = () => hooks.map((h) => JSON.parse(h.body) as { event: string; health: { previous: string | null; current: string }; checks: { code: string; playbook: string | null }[] });

  it('shows HEALTH_OK with the monitors, managers, OSDs and capacity `ceph` printed, from the monitor that answered', async () => {
    const s = await eventually('the first collection', async () => {
      const s = await status();
      return s.state === 'collected' ? s : undefined;
    });
    expect(s.collection).toMatchObject({ runner: 'near', monitor: host.ip });
    expect(s.collection.duration_ms).toBeGreaterThan(0);
    expect(s.ceph.health).toEqual({ status: 'HEALTH_OK', checks: [] });
    expect(s.ceph.monitors.in_quorum).toEqual(['carlab1', 'carlab2', 'carlab3']);
    expect(s.ceph.managers).toEqual({ active: 'carlab1', standbys: ['carlab2'] });
    expect(s.ceph.osds).toMatchObject({ total: 3, up: 3, in: 3 });
    const df = JSON.parse(readFileSync(join(FIXTURES, 'ok/df.json'), 'utf8')) as { stats: { total_bytes: number; total_used_raw_bytes: number } };
    expect(s.ceph.capacity.raw_total_bytes).toBe(df.stats.total_bytes);
    expect(s.ceph.capacity.raw_used_bytes).toBe(df.stats.total_used_raw_bytes);
    const list = await get('/v1/cluster_status/');
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({ cluster_id: clusterId, state: 'collected' });
    // The first healthy report is no change: nothing sent.
    expect(hooks).toHaveLength(0);
  });

  it('an OSD down: HEALTH_WARN with OSD_DOWN, one webhook and one e-mail; back to OK: one more each', async () => {
    await host.exec('echo warn > /etc/carapace-ceph/mode');
    const warn = await eventually('HEALTH_WARN', async () => {
      const s = await status();
      return s.ceph?.health.status === 'HEALTH_WARN' ? s : undefined;
    });
    expect(warn.ceph.health.checks.find((c: { code: string }) => c.code === 'OSD_DOWN')).toMatchObject({ summary: '1 osds down', playbook: 'replace_osd' });
    expect(warn.ceph.osds.by_host.find((h: { host: string }) => h.host === 'carlab3')).toMatchObject({ total: 1, up: 0 });
    const mail = await h.mail.waitFor('ops@example.com', 'is HEALTH_WARN (was HEALTH_OK)');
    expect(mail.text).toContain('OSD_DOWN: 1 osds down [playbook replace_osd]');
    await eventually('the webhook', () => (hooks.length >= 1 ? true : undefined));
    const [first] = healthHooks();
    expect(first).toMatchObject({ event: 'cluster.health_changed', health: { previous: 'HEALTH_OK', current: 'HEALTH_WARN' } });
    expect(first?.checks.map((c) => c.code)).toContain('OSD_DOWN');
    expect(hooks[0]?.signature).not.toBe('');
    // Two more intervals, still WARN: nothing more.
    const seen = (await status()).attempted_at as number;
    await eventually('two more collections', async () => (((await status()).attempted_at as number) >= seen + 4 ? true : undefined), 20_000);
    expect(hooks).toHaveLength(1);

    await host.exec('echo ok > /etc/carapace-ceph/mode');
    await eventually('HEALTH_OK again', async () => ((await status()).ceph?.health.status === 'HEALTH_OK' ? true : undefined));
    await h.mail.waitFor('ops@example.com', 'is HEALTH_OK (was HEALTH_WARN)');
    await eventually('the second webhook', () => (hooks.length >= 2 ? true : undefined));
    expect(healthHooks().map((h) => `${h.health.previous}->${h.health.current}`)).toEqual(['HEALTH_OK->HEALTH_WARN', 'HEALTH_WARN->HEALTH_OK']);
    expect(h.mail.mails.filter((m) => m.to === 'ops@example.com').map((m) => m.subject)).toEqual([
      `Carapace: cluster lab-ceph is HEALTH_WARN (was HEALTH_OK)`,
      `Carapace: cluster lab-ceph is HEALTH_OK (was HEALTH_WARN)`,
    ]);
  });

  it('sshd stopped: unreachable, with the reason and since when; the last report stays; one notification', async () => {
    const before = Math.floor(Date.now() / 1000);
    await host.exec('systemctl stop ssh.socket ssh.service 2>/dev/null; systemctl stop ssh');
    const s = await eventually(
      'unreachable',
      async () => {
        const s = await status();
        return s.state === 'unreachable' ? s : undefined;
      },
      30_000,
    );
    expect(s.unreachable.reason).toContain(DEAD);
    expect(s.unreachable.reason).toContain(host.ip);
    expect(s.unreachable.since).toBeGreaterThanOrEqual(before);
    expect(s.ceph.health.status).toBe('HEALTH_OK');
    await h.mail.waitFor('ops@example.com', 'is UNREACHABLE (was HEALTH_OK)');
    await eventually('the third webhook', () => (hooks.length >= 3 ? true : undefined));
    expect(healthHooks()[2]).toMatchObject({ health: { current: 'UNREACHABLE' } });
    // The streak's start stays while it lasts.
    const since = s.unreachable.since as number;
    await eventually('another failed attempt', async () => (((await status()).attempted_at as number) > (s.attempted_at as number) ? true : undefined), 30_000);
    expect((await status()).unreachable.since).toBe(since);
    await host.exec('systemctl start ssh');
    await eventually('reachable again', async () => ((await status()).state === 'collected' ? true : undefined), 30_000);
  });

  it('keeps the history and exports the gauges', async () => {
    const history = await get(`/v1/cluster/${clusterId}/status/history/?hours=1`);
    expect(history.points.length).toBeGreaterThanOrEqual(1);
    expect(history.points[0]).toMatchObject({ health: 'HEALTH_OK', osds_total: 3 });
    const metrics = (await h.request('GET', '/metrics')).body;
    const labels = `cluster_id="${clusterId}",cluster_name="lab-ceph"`;
    expect(metrics).toContain(`carapace_cluster_health{${labels}} 0`);
    expect(metrics).toContain(`carapace_cluster_osds{${labels},state="up"} 3`);
    expect(metrics).toMatch(new RegExp(`carapace_cluster_raw_used_bytes\\{${labels}\\} [1-9]`));
  });
});
