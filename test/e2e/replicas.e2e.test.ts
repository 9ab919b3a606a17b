// Two control-plane replicas as real processes on one PostgreSQL database, a real runner given
// both addresses (CARAPACE_RUNNER_URL "A,B"), a real lab host that joined the documented way,
// and real ansible-playbook running hello_world. The execution is created through A and its log
// followed through B while the runner reports to A; A is killed (SIGKILL) mid-run. The runner
// moves to B, the run completes there, the log is whole and nothing in it is doubled, and no
// lease is left. (apps/control-plane/test/replicas.test.ts proves the same in one process.)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, generateKeyPair, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { ADMIN_PASSWORD, Api, ControlPlane, DISCOVERY_TOKEN, executionLog, finishedExecution, startRunner, type Proc } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;

const RUNNER = 'replicated-runner';
const SLOTS = 2;
/** Short leases, so that what a dead replica held would show (and expire) within the test. */
const LEASES = { CARAPACE_RUNNER_LEASE_TIMEOUT_MS: '6000', CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' };

/** A log followed live (`?follow=yes`): the text so far, and the whole of it once the execution ended. */
class FollowedLog {
  text = '';
  readonly done: Promise<string>;

  constructor(url: string, token: string) {
    this.done = (async () => {
      const res = await fetch(url, { headers: { authorization: token, accept: 'text/plain' } });
      if (!res.ok || !res.body) throw new Error(`follow ${url}: ${res.status} ${await res.text()}`);
      const decoder = new TextDecoder();
      for await (const chunk of res.body) this.text += decoder.decode(chunk as Uint8Array, { stream: true });
      this.text += decoder.decode();
      return this.text;
    })();
    // Awaited by the test; a failure before that is not an unhandled rejection.
    this.done.catch(() => undefined);
  }
}

/** The JSON lines of a process's log. */
function jsonLines(proc: Proc): Json[] {
  return proc.lines.flatMap((line) => {
    try {
      const parsed: unknown = JSON.parse(line);
      return parsed && typeof parsed === 'object' ? [parsed as Json] : [];
    } catch {
      return [];
    }
  });
}

/** The lines of an Ansible log that say what ran: plays, tasks, handlers and the recap. */
function headers(log: string): string[] {
  return log.split('\n').filter((l) => /^(PLAY \[|TASK \[|RUNNING HANDLER \[|PLAY RECAP)/.test(l));
}

const SECRETS_KEY = randomBytes(32).toString('base64');

describe('two control-plane replicas on one PostgreSQL database; one killed mid-run', { timeout: 300_000 }, () => {
  let dir: string;
  let database: TestDatabase;
  let db: pg.Client;
  let a: ControlPlane;
  let b: ControlPlane;
  let apiA: Api;
  let apiB: Api;
  let runner: Proc;
  let lab: Lab;
  let server: Json;
  let clusterId: string;

  async function startReplica(): Promise<ControlPlane> {
    // On the lab bridge, where the hosts register at first boot.
    // Replicas of one database share its secrets key.
    return ControlPlane.start({ httpHost: LAB_GATEWAY, runner: 'none', env: { CARAPACE_DATABASE_URL: database.url, CARAPACE_SECRETS_KEY: SECRETS_KEY, ...LEASES } });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-replicas-'));
    const key = await generateKeyPair(dir);
    await ensureBridge();
    database = await testPostgresDatabase();
    db = new pg.Client({ connectionString: database.url });
    db.on('error', () => undefined);
    await db.connect();
    // One after the other: the first start may build the workspace, and migrates the database.
    a = await startReplica();
    b = await startReplica();
    apiA = new Api(a.url);
    apiB = new Api(b.url);
    await apiA.login();
    await apiB.login();
    const token = (await apiA.ok('POST', '/v1/runner/', { name: RUNNER, labels: { site: 'lab' } })).token as string;
    runner = await startRunner({
      controlPlane: `${a.grpcAddress},${b.grpcAddress}`,
      token,
      workDir: join(dir, 'runner'),
      sshKeyFile: key.privateKeyPath,
      slots: SLOTS,
    });
    const access = await controlPlaneAccess({
      dataDir: a.dataDir,
      url: a.url,
      publicKeyFile: key.publicKeyPath,
      env: { CARAPACE_DISCOVERY_TOKEN: DISCOVERY_TOKEN, CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD },
    });
    const discovered = await discoverLab({ hosts: 1, name: 'e2e-replicas', access, timeoutMs: 120_000 });
    lab = discovered.lab;
    server = discovered.hosts[0]?.server as Json;
    clusterId = (await apiA.ok('POST', '/v1/cluster/', { name: 'replicated' })).id as string;
  }, 40 * 60_000);

  afterAll(async () => {
    await runner?.stop();
    await a?.stop();
    await b?.stop();
    await lab?.destroy();
    await db?.end().catch(() => undefined);
    await database?.drop();
    a?.removeData();
    b?.removeData();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  async function run(api: Api, name: string): Promise<string> {
    const config = await api.ok('POST', '/v1/playbook_configuration/', { name, cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] });
    const execution = await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } });
    return execution.id as string;
  }

  async function log(api: Api, id: string): Promise<string> {
    return executionLog(api, id);
  }

  async function steps(api: Api, id: string): Promise<Json[]> {
    return (await api.ok('GET', `/v1/execution/${id}/steps/?all=true`)).items as Json[];
  }

  /** Waits for the execution to end; a failed one's reason carries the end of its log. */
  async function finished(api: Api, id: string, timeoutMs = 120_000): Promise<Json> {
    return finishedExecution(api, id, timeoutMs, 'not completed');
  }

  async function runnerSessions(): Promise<{ name: string; replica: string }[]> {
    return (await db.query<{ name: string; replica: string }>('SELECT name, replica FROM runner_sessions')).rows;
  }

  async function leases(): Promise<Json[]> {
    return (await db.query('SELECT server_id, execution_id, owner, expires_at FROM server_locks')).rows as Json[];
  }

  it('follows through B while the runner reports to A; after SIGKILL of A the runner moves to B and the run completes, whole and undoubled', async () => {
    // The reference: the same idempotent run, undisturbed (the first run applies the change).
    expect((await finished(apiA, await run(apiA, 'warm'))).data.state).toBe('completed');
    const reference = await run(apiA, 'reference');
    const referenceDone = await finished(apiA, reference);
    expect(referenceDone.data.state, referenceDone.data.reason).toBe('completed');
    const referenceLog = await log(apiA, reference);
    const referenceSteps = await steps(apiA, reference);
    expect(headers(referenceLog).filter((l) => l.startsWith('TASK [')).length).toBeGreaterThan(5);

    // The runner reports to A.
    const [onA] = await runnerSessions();
    expect(onA?.name).toBe(RUNNER);
    expect(jsonLines(runner).filter((l) => l.msg === 'connected to the control plane').map((l) => l.controlPlane)).toEqual([a.grpcAddress]);

    // Created through A, followed through B from the start.
    const id = await run(apiA, 'failover');
    const followed = new FollowedLog(`${b.url}/v1/execution/${id}/log/?follow=yes`, apiB.authToken);
    await eventually(
      'the run started and its first tasks followed through B',
      async () => ((await apiB.ok('GET', `/v1/execution/${id}/`)).data.state === 'started' && followed.text.includes('TASK [') ? true : undefined),
      60_000,
    );
    expect((await leases()).map((l) => l.execution_id)).toEqual([id]);
    const beforeKill = followed.text;
    const killedAt = Date.now();
    await a.proc.kill();
    expect(a.proc.exited?.signal).toBe('SIGKILL');
    // Killed mid-run: the playbook had not reached its end.
    expect(beforeKill).not.toContain('PLAY RECAP');

    // The runner lost A and moved to B.
    await eventually(
      'the runner connected to B',
      async () => (jsonLines(runner).some((l) => l.msg === 'connected to the control plane' && l.controlPlane === b.grpcAddress) ? true : undefined),
      30_000,
    );
    const runnerLog = jsonLines(runner);
    expect(runnerLog.find((l) => l.msg === 'stream to the control plane lost')).toMatchObject({ controlPlane: a.grpcAddress, next: b.grpcAddress });
    expect(runnerLog.filter((l) => l.msg === 'connected to the control plane').map((l) => l.controlPlane)).toEqual([a.grpcAddress, b.grpcAddress]);
    expect(runnerLog.find((l) => l.msg === 'connected to the control plane' && l.controlPlane === b.grpcAddress)?.running).toEqual([id]);

    // The run completes through B, without a reason (nothing failed it).
    const done = await finished(apiB, id);
    expect(done.data.state, done.data.reason).toBe('completed');
    expect(done.data.reason ?? null).toBeNull();
    const completedAfterMs = Date.now() - killedAt;

    // The stored log is whole, nothing doubled: each play, task and recap once, and byte for
    // byte what the undisturbed run printed.
    const stored = await log(apiB, id);
    expect(headers(stored)).toEqual(headers(referenceLog));
    expect(new Set(headers(stored)).size).toBe(headers(stored).length);
    expect(stored.match(/PLAY RECAP/g)).toHaveLength(1);
    expect(stored.match(/pre-flight SSH check/g)).toHaveLength(1);
    expect(stored.startsWith(beforeKill)).toBe(true);
    expect(stored).toBe(referenceLog);
    // The log followed through B is the stored log.
    expect(await followed.done).toBe(stored);
    // And the steps those of the undisturbed run.
    const all = await steps(apiB, id);
    expect(all.map((s) => `${s.data.role}|${s.data.name}|${s.data.result}`)).toEqual(referenceSteps.map((s) => `${s.data.role}|${s.data.name}|${s.data.result}`));

    // No lease is left, the runner's one session is on B now, and it holds nothing.
    expect(await leases()).toEqual([]);
    const sessions = await runnerSessions();
    expect(sessions).toHaveLength(1);
    expect(sessions[0]?.replica).not.toBe(onA?.replica);
    const listed = await eventually(
      'the runner connected to B with every slot free',
      async () => {
        const r = ((await apiB.ok('GET', '/v1/runner/')).items as Json[]).find((r) => r.name === RUNNER);
        return r?.state === 'connected' && r.free_slots === SLOTS ? r : undefined;
      },
      15_000,
    );
    expect(listed).toMatchObject({ state: 'connected', slots: SLOTS, free_slots: SLOTS, executions: [] });
    process.stderr.write(`replicas e2e: A killed ${beforeKill.length} bytes into the log; completed through B ${completedAfterMs} ms later\n`);

    // B goes on alone: the next run on the same host completes.
    const next = await run(apiB, 'after-failover');
    const nextDone = await finished(apiB, next);
    expect(nextDone.data.state, nextDone.data.reason).toBe('completed');
    expect(await leases()).toEqual([]);
  });
});
