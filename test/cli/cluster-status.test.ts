import { Client } from '@carapace/client';
import type { ClusterStatus, ClusterStatusList } from '@carapace/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';
import { collectedStatus, deploy, unreachableStatus } from './cluster-status.support.js';

/**
 * `carapace cluster status` as a subprocess against a real control plane whose status rows
 * come from the status collection's own ingestion (the Pacific outputs of
 * test/fixtures/ceph-pacific, as a runner sends them).
 */
describe('carapace cluster status', () => {
  let cp: TestControlPlane;
  let client: Client;
  let env: Record<string, string>;
  const ids = { ok: '', warn: '', err: '', down: '', fresh: '' };
  const carapace = (...args: string[]) => runCli(args, { env: { ...env, COLUMNS: '400' } });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
  }, 300_000);
  afterAll(async () => {
    await client.close();
    await cp.stop();
  });

  it('without clusters: "(none)", exit status 0; --help says the exit statuses', async () => {
    const [none, json, help] = await Promise.all([carapace('cluster', 'status'), carapace('cluster', 'status', '--json'), runCli(['cluster', 'status', '--help'])]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('(none)\n');
    expect(json.code, json.stderr).toBe(0);
    expect(parsed(json)).toEqual({ items: [] });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: carapace cluster status \[options\] \[cluster-id\]/);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('0 every cluster HEALTH_OK');
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('1 at least one HEALTH_WARN, none worse; 2 at least one HEALTH_ERR, unreachable, or pending');
  });

  it('one HEALTH_OK cluster: its line (monitors, OSDs, raw use), exit status 0', async () => {
    ids.ok = (await client.createCluster('alpha')).id;
    await collectedStatus(cp, ids.ok, 'ok');
    const run = await carapace('cluster', 'status');
    expect(run.code, run.stderr).toBe(0);
    const [header, rule, row, ...rest] = run.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^cluster\s+id\s+health\s+mons\s+osds up\/in\/total\s+raw used\s+collected\s+problem$/);
    expect(rule).toMatch(/^-+( +-+)+$/);
    expect(rest).toEqual([]);
    const status = await client.getClusterStatus(ids.ok);
    const ceph = status.ceph!;
    expect(ceph.health.status).toBe('HEALTH_OK');
    expect(row).toMatch(new RegExp(`^alpha\\s+${ids.ok}\\s+HEALTH_OK\\s+${ceph.monitors.in_quorum.length}/${ceph.monitors.total}\\s+${ceph.osds.up}/${ceph.osds.in}/${ceph.osds.total}\\s+`));
    const pct = ((ceph.capacity.raw_used_bytes / ceph.capacity.raw_total_bytes) * 100).toFixed(1);
    expect(row).toMatch(new RegExp(`\\d[\\d.]* [KMGTP]iB / \\d[\\d.]* [KMGTP]iB \\(${pct.replace('.', '\\.')}%\\)`));
    expect(row).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+s ago\)$/);
  });

  it('a HEALTH_WARN cluster makes it exit status 1; the detail view lists its checks with their playbooks, daemons by host, pools', async () => {
    ids.warn = (await client.createCluster('bravo')).id;
    await collectedStatus(cp, ids.warn, 'warn');
    const [list, detail, okDetail] = await Promise.all([carapace('cluster', 'status'), carapace('cluster', 'status', ids.warn), carapace('cluster', 'status', ids.ok)]);
    expect(list.code, list.stderr).toBe(1);
    expect(list.stdout).toMatch(new RegExp(`^bravo\\s+${ids.warn}\\s+HEALTH_WARN\\s+2/3\\s+`, 'm'));
    expect(list.stdout).toMatch(new RegExp(`^alpha\\s+${ids.ok}\\s+HEALTH_OK\\s+`, 'm'));
    expect(okDetail.code, okDetail.stderr).toBe(0);

    expect(detail.code, detail.stderr).toBe(1);
    const out = detail.stdout;
    const status = await client.getClusterStatus(ids.warn);
    const ceph = status.ceph!;
    expect(out).toMatch(/^cluster\s+bravo$/m);
    expect(out).toMatch(/^health\s+HEALTH_WARN$/m);
    expect(out).toMatch(new RegExp(`^fsid\\s+${ceph.fsid}$`, 'm'));
    // Every check, with the playbook that addresses it (OSD_DOWN → replace_osd, MON_DOWN → replace_mon).
    const checks = section(out, 'Health checks');
    expect(checks.split('\n')[0]).toMatch(/^code\s+severity\s+summary\s+count\s+muted\s+playbook$/);
    for (const check of ceph.health.checks) {
      const line = checks.split('\n').find((l) => l.startsWith(`${check.code} `));
      expect(line, check.code).toBeDefined();
      expect(line).toContain(check.severity);
      expect(line).toContain(check.summary.slice(0, 20));
      if (check.playbook) expect(line).toMatch(new RegExp(`\\s${check.playbook}$`));
    }
    expect(checks).toMatch(/^OSD_DOWN\s+HEALTH_WARN\s+1 osds down\s+1\s+replace_osd$/m);
    expect(checks).toMatch(/^MON_DOWN\s+HEALTH_WARN\s+.*replace_mon$/m);

    const daemons = section(out, 'Daemons');
    expect(daemons).toMatch(new RegExp(`^monitors\\s+2/3 in quorum: ${ceph.monitors.in_quorum.join(', ')}$`, 'm'));
    expect(daemons).toMatch(new RegExp(`^out_of_quorum\\s+${ceph.monitors.out_of_quorum.join(', ')}$`, 'm'));
    expect(daemons).toMatch(new RegExp(`^manager_active\\s+${ceph.managers.active}$`, 'm'));
    expect(daemons).toMatch(new RegExp(`^osds\\s+${ceph.osds.up} up, ${ceph.osds.in} in, ${ceph.osds.total} in all$`, 'm'));
    const hosts = section(out, 'OSDs by host');
    expect(hosts.split('\n')[0]).toMatch(/^host\s+server\s+up\s+in\s+total\s+down\s+out$/);
    for (const host of ceph.osds.by_host) {
      const down = host.osds.filter((o) => !o.up).map((o) => `osd.${o.id}`);
      expect(hosts).toMatch(new RegExp(`^${host.host}\\s+.*${host.up}\\s+${host.in}\\s+${host.total}${down.length ? `\\s+${down.join(',')}` : ''}`, 'm'));
    }
    expect(ceph.osds.by_host.some((h) => h.up < h.total)).toBe(true);
    const pools = section(out, 'Pools');
    for (const pool of ceph.capacity.pools) expect(pools).toMatch(new RegExp(`^${pool.name.replace(/\./g, '\\.')}\\s+${pool.id}\\s+${pool.size}\\s+`, 'm'));
    expect(section(out, 'Capacity')).toMatch(/^raw\s+.* used of .* \(\d+\.\d%\), .* available$/m);
    expect(section(out, 'Placement groups')).toMatch(new RegExp(`${ceph.pgs.total} in all`));
  });

  it('--json prints the API\'s JSON, exactly; the exit status is the same', async () => {
    const [list, one, viaOutput] = await Promise.all([carapace('cluster', 'status', '--json'), carapace('cluster', 'status', ids.warn, '--json'), carapace('-o', 'json', 'cluster', 'status')]);
    expect(list.code, list.stderr).toBe(1);
    const api = await client.getClusterStatuses();
    expect(sortById(parsed(list) as ClusterStatusList)).toEqual(sortById(api));
    expect(one.code).toBe(1);
    expect(parsed(one)).toEqual(await client.getClusterStatus(ids.warn));
    expect(viaOutput.code).toBe(1);
    expect(sortById(parsed(viaOutput) as ClusterStatusList)).toEqual(sortById(api));
    // CARAPACE_OUTPUT=json as well; the default (no -o) is the table.
    const fromEnv = await runCli(['cluster', 'status'], { env: { ...env, CARAPACE_OUTPUT: 'json' } });
    expect(parsed(fromEnv).items).toHaveLength(2);
  });

  it('HEALTH_ERR, unreachable and pending (never collected) each make it exit status 2; unreachable says why and since when', async () => {
    ids.err = (await client.createCluster('charlie')).id;
    await collectedStatus(cp, ids.err, 'warn', (s) => ({ ...s, health: { ...(s.health as object), status: 'HEALTH_ERR' } }));
    const err = await carapace('cluster', 'status', ids.err);
    expect(err.code, err.stderr).toBe(2);
    expect(err.stdout).toMatch(/^health\s+HEALTH_ERR$/m);

    ids.down = (await client.createCluster('delta')).id;
    await collectedStatus(cp, ids.down, 'ok');
    await unreachableStatus(cp, ids.down, 'ssh: connect to 10.0.0.9 port 22: Connection refused');
    const down = await client.getClusterStatus(ids.down);
    expect(down.state).toBe('unreachable');
    const since = down.unreachable!.since;
    const [list, detail] = await Promise.all([carapace('cluster', 'status'), carapace('cluster', 'status', ids.down)]);
    expect(list.code, list.stderr).toBe(2);
    const sinceText = new Date(since * 1000).toISOString().replace('T', ' ').slice(0, 19);
    expect(list.stdout).toMatch(new RegExp(`^delta\\s+${ids.down}\\s+UNREACHABLE\\s+.*unreachable since ${sinceText} \\(\\d+s ago\\): ssh: connect to 10\\.0\\.0\\.9 port 22: Connection refused$`, 'm'));
    expect(detail.code).toBe(2);
    expect(detail.stdout).toMatch(/^state\s+unreachable$/m);
    expect(detail.stdout).toMatch(new RegExp(`^unreachable_since\\s+${sinceText}`, 'm'));
    expect(detail.stdout).toMatch(/^unreachable_reason\s+ssh: connect to 10\.0\.0\.9 port 22: Connection refused$/m);
    expect(detail.stdout).toContain('the monitors do not answer now');

    // A deployed cluster never collected yet is pending (2); one without monitors does not count (0).
    ids.fresh = (await client.createCluster('echo')).id;
    await deploy(cp, ids.fresh);
    const bare = (await client.createCluster('foxtrot')).id;
    const [fresh, bareRun, all] = await Promise.all([carapace('cluster', 'status', ids.fresh), carapace('cluster', 'status', bare), carapace('cluster', 'status')]);
    expect(fresh.code, fresh.stderr).toBe(2);
    expect(fresh.stdout).toMatch(/^state\s+pending$/m);
    expect(fresh.stdout).toMatch(/^health\s+PENDING$/m);
    expect(bareRun.code, bareRun.stderr).toBe(0);
    expect(bareRun.stdout).toMatch(/^health\s+NOT_DEPLOYED$/m);
    expect(all.stdout).toMatch(new RegExp(`^echo\\s+${ids.fresh}\\s+PENDING\\s*$`, 'm'));
    expect(all.stdout).toMatch(new RegExp(`^foxtrot\\s+${bare}\\s+NOT_DEPLOYED\\s*$`, 'm'));
    expect(all.stdout.trimEnd().split('\n')).toHaveLength(2 + 6);
  });

  it('an unknown cluster, no view_cluster, or no API: exit status 3 (unknown), never a health', async () => {
    const unknown = await carapace('cluster', 'status', '00000000-0000-4000-8000-00000000dead');
    expect(unknown.code).toBe(3);
    expect(unknown.stdout).toBe('');
    expect(JSON.parse(unknown.stderr)).toMatchObject({ code: 404 });

    const role = await client.createRole('nothing', { api: [] });
    await client.createUser('nobody', 'nobody@example.com', 'Nobody', role.id);
    const password = await cp.mail.passwordOf('nobody@example.com');
    const refused = await runCli(['cluster', 'status'], { env: { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'nobody', CARAPACE_PASSWORD: password } });
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stderr)).toMatchObject({ code: 403 });

    const away = await runCli(['cluster', 'status'], { env: { ...env, CARAPACE_URL: 'http://127.0.0.1:9' } });
    expect(away.code).toBe(3);
    expect(away.stderr).toMatch(/^carapace: /);

    const usage = await carapace('cluster', 'status', '--no-such-option');
    expect(usage.code).toBe(2);
  });
});

/** The lines of a titled section of the detail view, up to the next title. */
function section(out: string, title: string): string {
  const start = out.indexOf(`\n${title}\n${'='.repeat(title.length)}\n`);
  expect(start, title).toBeGreaterThanOrEqual(0);
  const body = out.slice(start + title.length * 2 + 3);
  const next = /\n[A-Z][a-z ]+\n=+\n/.exec(body);
  return next ? body.slice(0, next.index + 1) : body;
}

function sortById(list: ClusterStatusList): ClusterStatus[] {
  return [...list.items].sort((a, b) => a.cluster_id.localeCompare(b.cluster_id));
}
