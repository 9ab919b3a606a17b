// npm run bench:exec — the overhead of running a playbook through Carapace (issue 5).
//
// Three real Debian hosts of the lab (test/lab), a control plane and a runner as real
// processes. The same trivial playbook (hello_world, already applied once so that every
// round is the same idempotent run) on the same three hosts, alternately:
//   - through the API: POST /v1/execution/ until the execution is finished (the log
//     follower's stream ends with it), and
//   - by hand: ansible-playbook with the same playbook, inventory and SSH settings
//     (ControlPersist, pipelining; the runner's own callback plugin left out). As with
//     Ansible's defaults, its SSH master connections persist 60 s, so each round by hand
//     reuses the previous round's connections, whereas every execution through Carapace
//     opens its own (its ssh2 pre-flight, then Ansible's masters, closed at the end): the
//     ratio includes that cost.
// Prints the wall-time ratio (target ≤ 1.10) and the time from POST /v1/execution/ to the
// execution's `started` state (target p50 < 100 ms), measured on every API round plus on
// extra executions whose start alone is timed.
//
// Needs root and the lab's packages (scripts/install-system-deps.sh); the first run builds
// the lab image (a few minutes).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createLab, generateKeyPair, type Lab } from '../lab/lab.js';
import { Api, ControlPlane, DISCOVERY_TOKEN, startRunner, type Proc } from '../e2e/system.js';
import { eventually } from '@carapace/test-support/eventually';

const ROUNDS = Number(process.env.BENCH_EXEC_ROUNDS ?? 5);
const START_SAMPLES = Number(process.env.BENCH_EXEC_START_SAMPLES ?? 20);
const PLAYBOOK = resolve(import.meta.dirname, '../../libs/playbooks/ansible/hello_world/playbook.yml');

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

const ms = (v: number) => `${v.toFixed(1)} ms`;

function run(cmd: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number; stdout: string }> {
  return new Promise((resolveRun) => {
    execFile(cmd, args, { ...options, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolveRun({ code, stdout: stdout + stderr });
    });
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-bench-exec-'));
  let lab: Lab | undefined;
  let cp: ControlPlane | undefined;
  let runner: Proc | undefined;
  try {
    const key = await generateKeyPair(dir);
    console.log('booting 3 lab hosts…');
    lab = await createLab({ hosts: 3, name: 'bench-exec', sshKey: key });
    cp = await ControlPlane.start({ runner: 'none', env: { CARAPACE_LOG_LEVEL: 'warn' } });
    const api = new Api(cp.url);
    await api.login();
    const token = (await api.ok('POST', '/v1/runner/', { name: 'bench-runner' })).token as string;
    runner = await startRunner({ controlPlane: cp.grpcAddress, token, workDir: join(dir, 'runner'), sshKeyFile: key.privateKeyPath, slots: 4 });

    const serverIds: string[] = [];
    for (const host of lab.hosts) {
      const id = randomUUID();
      const res = await api.call('POST', '/v1/server/', { id, host: host.ip, username: 'root' }, false, { authorization: DISCOVERY_TOKEN });
      if (res.status !== 200) throw new Error(`registration of ${host.ip}: ${res.status} ${res.text}`);
      serverIds.push(id);
    }
    for (const id of serverIds) {
      await eventually(`facts of ${id}`, async () => ((await api.ok('GET', `/v1/server/${id}/`)).data.state === 'operational' ? true : undefined), 60_000);
    }
    const cluster = await api.ok('POST', '/v1/cluster/', { name: 'bench' });
    const config = await api.ok('POST', '/v1/playbook_configuration/', { name: 'bench', cluster_id: cluster.id, playbook_id: 'hello_world', server_ids: serverIds });
    const body = { playbook_configuration: { id: config.id, version: config.version } };

    /** One execution through the API: wall time to its end, and time to `started`. */
    async function throughApi(): Promise<{ wallMs: number; startMs: number }> {
      const t0 = performance.now();
      const execution = await api.ok('POST', '/v1/execution/', body);
      // The follower's response ends when the execution does.
      const followed = fetch(`${cp?.url}/v1/execution/${execution.id}/log/?follow=yes`, { headers: { authorization: api.authToken, accept: 'text/plain' } }).then((r) => r.text());
      const startMs = await timeToStarted(execution.id as string, t0);
      await followed;
      const wallMs = performance.now() - t0;
      const done = await api.ok('GET', `/v1/execution/${execution.id}/`);
      if (done.data.state !== 'completed') throw new Error(`execution ${execution.id} ended ${done.data.state}: ${done.data.reason}`);
      return { wallMs, startMs };
    }

    /** Polls the execution every 2 ms until it is `started` (or further). */
    async function timeToStarted(id: string, t0: number): Promise<number> {
      for (;;) {
        const e = await api.ok('GET', `/v1/execution/${id}/`);
        if (e.data.state !== 'created') return performance.now() - t0;
        await new Promise((r) => setTimeout(r, 2));
      }
    }

    // By hand: the same playbook, hosts and SSH settings; Ansible's default output.
    const handDir = join(dir, 'by-hand');
    const inventory = join(handDir, 'inventory.json');
    rmSync(handDir, { recursive: true, force: true });
    mkdirSync(join(handDir, 'cp'), { recursive: true });
    writeFileSync(
      inventory,
      JSON.stringify({ all: { hosts: Object.fromEntries(lab.hosts.map((h) => [h.ip, { ansible_user: 'root' }])) } }, null, 2),
    );
    writeFileSync(
      join(handDir, 'ansible.cfg'),
      [
        '[defaults]',
        'forks = 3',
        'host_key_checking = False',
        'retry_files_enabled = False',
        'nocolor = True',
        'interpreter_python = auto_silent',
        '[ssh_connection]',
        `ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes`,
        `control_path_dir = ${join(handDir, 'cp')}`,
        'pipelining = True',
        '',
      ].join('\n'),
    );
    async function byHand(): Promise<number> {
      const t0 = performance.now();
      const result = await run('ansible-playbook', ['-i', inventory, '--private-key', key.privateKeyPath, PLAYBOOK], {
        cwd: handDir,
        env: { ...process.env, ANSIBLE_CONFIG: join(handDir, 'ansible.cfg') },
      });
      const wall = performance.now() - t0;
      if (result.code !== 0) throw new Error(`ansible-playbook by hand failed (${result.code}):\n${result.stdout.slice(-3000)}`);
      return wall;
    }

    console.log('warming up (first hello_world applies the service; one run by hand)…');
    await throughApi();
    await byHand();

    const api_: number[] = [];
    const hand: number[] = [];
    const starts: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Alternate which goes first, so drift of the machine's load hits both alike.
      if (i % 2 === 0) {
        const a = await throughApi();
        api_.push(a.wallMs);
        starts.push(a.startMs);
        hand.push(await byHand());
      } else {
        hand.push(await byHand());
        const a = await throughApi();
        api_.push(a.wallMs);
        starts.push(a.startMs);
      }
      console.log(`round ${i + 1}/${ROUNDS}: API ${ms(api_.at(-1) as number)}, by hand ${ms(hand.at(-1) as number)}, POST→started ${ms(starts.at(-1) as number)}`);
    }

    // More samples of POST → started: executions that are canceled once started.
    for (let i = 0; i < START_SAMPLES; i++) {
      const t0 = performance.now();
      const execution = await api.ok('POST', '/v1/execution/', body);
      starts.push(await timeToStarted(execution.id as string, t0));
      await api.ok('DELETE', `/v1/execution/${execution.id}/`);
      await eventually(
        'the canceled execution to end',
        async () => (['canceled', 'completed', 'failed'].includes((await api.ok('GET', `/v1/execution/${execution.id}/`)).data.state) ? true : undefined),
        120_000,
      );
    }

    const apiMedian = quantile(api_, 0.5);
    const handMedian = quantile(hand, 0.5);
    const ratio = apiMedian / handMedian;
    const startP50 = quantile(starts, 0.5);
    console.log('');
    console.log(`hello_world on 3 lab hosts, ${ROUNDS} rounds (medians)`);
    console.log(`  through the API (POST → finished):  ${ms(apiMedian)}`);
    console.log(`  ansible-playbook by hand:           ${ms(handMedian)}`);
    console.log(`  ratio API / by hand:                ${ratio.toFixed(3)}   target ≤ 1.10   ${ratio <= 1.1 ? 'PASS' : 'MISS'}`);
    console.log(`POST /v1/execution/ → started, ${starts.length} executions`);
    console.log(`  p50 ${ms(startP50)}   p90 ${ms(quantile(starts, 0.9))}   max ${ms(Math.max(...starts))}   target p50 < 100 ms   ${startP50 < 100 ? 'PASS' : 'MISS'}`);
  } finally {
    await runner?.stop();
    await cp?.stop();
    cp?.removeData();
    await lab?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
