// The OCI images of `npm run package:images` under Debian's podman, with the compose file of
// deploy/compose/: PostgreSQL, the control plane on it and a runner, all built on this
// machine from Debian's packages and the .debs (no registry). The API answers through the
// port published on loopback, the control plane's tables are in the PostgreSQL container, and
// the runner, enrolled with the token file, connects over the compose network.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, freePort } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const PASSWORD = 'oci-admin-password-0123';
const RUNNER = 'oci-runner-1';
const DB_PASSWORD = 'oci-db-password-0123456789';
/** uids the images run as (scripts/package-images.js). */
const UIDS = { controlPlane: 10001, runner: 10002, postgres: 10003 };

function hasPodman(): boolean {
  try {
    return readFileSync('/usr/bin/podman').length > 0 && process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/**
 * A containers.conf for machines that are themselves containers: without CAP_SYS_RESOURCE,
 * podman's default rlimits (above this process's hard limits) cannot be set; with cgroups in
 * hybrid mode (v1 controllers beside a v2 tree that has one) crun refuses to start, runc works.
 * Empty where neither applies.
 */
function containersConf(): string {
  const status = readFileSync('/proc/self/status', 'utf8');
  const capEff = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)/m.exec(status)?.[1] ?? '0'}`);
  const lines: string[] = [];
  if ((capEff & (1n << 24n)) === 0n) {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const hard = (name: string) => /\s(\d+)\s+\S+\s*$/.exec(limits.split('\n').find((l) => l.startsWith(name)) ?? '')?.[1];
    const nofile = hard('Max open files') ?? '1024';
    lines.push('[containers]', `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=4096:4096"]`);
  }
  let hybrid = false;
  try {
    hybrid = readFileSync('/sys/fs/cgroup/unified/cgroup.controllers', 'utf8').trim() !== '';
  } catch {
    hybrid = false;
  }
  if (hybrid) lines.push('[engine]', 'runtime = "runc"');
  return lines.length ? `${lines.join('\n')}\n` : '';
}

describe.skipIf(!hasPodman())('the OCI images under podman: control plane on PostgreSQL and a runner, from deploy/compose', { timeout: 300_000 }, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let project: string;
  let httpPort: number;
  let api: Api;
  let built = '';

  const podman = async (args: string[], timeout = 120_000) => (await exec('podman', args, { env, timeout, maxBuffer: 16 << 20 })).stdout;
  const compose = async (args: string[], timeout = 180_000) =>
    (await exec('podman-compose', ['-p', project, '-f', join(dir, 'compose.yaml'), ...args], { env, cwd: dir, timeout, maxBuffer: 16 << 20 })).stdout;
  const container = (service: string) => `${project}_${service}_1`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-oci-'));
    project = `carapace-e2e-${process.pid}`;
    env = { ...process.env };
    const conf = containersConf();
    if (conf) {
      writeFileSync(join(dir, 'containers.conf'), conf);
      env.CONTAINERS_CONF = join(dir, 'containers.conf');
    }
    const started = Date.now();
    built = (await exec(process.execPath, [join(ROOT, 'scripts', 'package-images.js')], { cwd: ROOT, env, timeout: 40 * 60_000, maxBuffer: 16 << 20 })).stdout;
    process.stderr.write(`package-images: ${((Date.now() - started) / 1000).toFixed(1)} s\n${built}`);

    copyFileSync(join(ROOT, 'deploy', 'compose', 'compose.yaml'), join(dir, 'compose.yaml'));
    const secrets = join(dir, 'secrets');
    mkdirSync(secrets);
    const secret = (name: string, content: string, uid: number) => {
      writeFileSync(join(secrets, name), content, { mode: 0o400 });
      return exec('chown', [`${uid}:${uid}`, join(secrets, name)]);
    };
    await secret('postgres_password', `${DB_PASSWORD}\n`, UIDS.postgres);
    await secret(
      'carapace.yaml',
      [
        'dataDir: /var/lib/carapace/control-plane',
        'runner: none',
        `database: { url: "postgres://carapace:${DB_PASSWORD}@postgres:5432/carapace" }`,
        `admin: { password: "${PASSWORD}" }`,
        'discoveryTokens: ["oci-discovery-token-0123456789"]',
        'metrics: { token: "oci-metrics-token-0123456789" }',
        '',
      ].join('\n'),
      UIDS.controlPlane,
    );
    // The runner starts once its token exists (below); an empty file until then.
    await secret('runner_token', '', UIDS.runner);
    httpPort = await freePort();
    env.CARAPACE_HTTP_PUBLISH = `127.0.0.1:${httpPort}`;
    env.CARAPACE_GRPC_PUBLISH = `127.0.0.1:${await freePort()}`;
    await compose(['up', '-d', 'postgres', 'control-plane']);
    api = new Api(`http://127.0.0.1:${httpPort}`);
  }, 45 * 60_000);

  afterAll(async () => {
    if (project && dir) {
      await compose(['down', '-v'], 180_000).catch((e: unknown) => process.stderr.write(`compose down: ${String(e)}\n`));
      await exec('podman', ['volume', 'prune', '-f', '--filter', `label=io.podman.compose.project=${project}`], { env }).catch(() => undefined);
      // podman-compose 1.0.3's down leaves the project's network.
      await exec('podman', ['network', 'rm', '-f', `${project}_default`], { env }).catch(() => undefined);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 240_000);

  it('builds the three images from no registry, each with a non-root user, volumes and a healthcheck', async () => {
    for (const name of ['carapace-control-plane', 'carapace-runner', 'carapace-postgres']) {
      expect(built).toMatch(new RegExp(`localhost/${name}:in-[0-9a-f]{16}\\t`));
      const [config] = JSON.parse(await podman(['image', 'inspect', `localhost/${name}:latest`])) as { Config: { User: string; Volumes?: Record<string, unknown> }; Healthcheck?: { Test: string[] } }[];
      expect(config?.Config.User).toMatch(/^1000[123]:1000[123]$/);
      expect(Object.keys(config?.Config.Volumes ?? {}).length).toBeGreaterThan(0);
      expect(config?.Healthcheck?.Test[0]).toBe('CMD');
    }
  });

  it('answers /v1/info/ through the port published on loopback, from the control-plane container', async () => {
    const info = await eventually('the control plane to answer', async () => {
      const r = await api.call('GET', '/v1/info/', undefined, false);
      return r.status === 200 ? (r.json as Json) : undefined;
    }, 90_000);
    expect(info).toHaveProperty('version');
    expect((await podman(['exec', container('control-plane'), 'id', '-u'])).trim()).toBe(String(UIDS.controlPlane));
    await eventually('the control plane healthy', async () => ((await podman(['healthcheck', 'run', container('control-plane')]).catch(() => 'unhealthy')).includes('unhealthy') ? undefined : true), 60_000);
  });

  it('keeps its tables in the PostgreSQL container', async () => {
    await api.login('root', PASSWORD);
    await api.ok('POST', '/v1/cluster/', { name: 'oci' });
    const out = await podman(['exec', '-e', `PGPASSWORD=${DB_PASSWORD}`, container('postgres'), '/usr/lib/postgresql/15/bin/psql', '-h', '127.0.0.1', '-U', 'carapace', '-d', 'carapace', '-Atc', "SELECT data::json->>'name' FROM clusters WHERE is_latest = 1"]);
    expect(out.split('\n')).toContain('oci');
  });

  it('starts the runner with the token file and it connects to the control plane', async () => {
    const token = (await api.ok('POST', '/v1/runner/', { name: RUNNER, labels: { site: 'oci' } })).token as string;
    const file = join(dir, 'secrets', 'runner_token');
    rmSync(file);
    writeFileSync(file, `${token}\n`, { mode: 0o400 });
    await exec('chown', [`${UIDS.runner}:${UIDS.runner}`, file]);
    await compose(['up', '-d', 'runner']);
    const seen = await eventually(`runner ${RUNNER} to connect`, async () => {
      const r = ((await api.ok('GET', '/v1/runner/')).items as Json[]).find((x) => x.name === RUNNER);
      return r?.state === 'connected' ? r : undefined;
    }, 90_000);
    expect(seen.state).toBe('connected');
    expect((await podman(['exec', container('runner'), 'id', '-u'])).trim()).toBe(String(UIDS.runner));
    await eventually('the runner healthy', async () => ((await podman(['healthcheck', 'run', container('runner')]).catch(() => 'unhealthy')).includes('unhealthy') ? undefined : true), 60_000);
  });
});
