// The cluster status (issue 30) on a real cluster: what GET /v1/cluster/{id}/status/ says is
// what `ceph status` and `ceph df` say on a monitor; an OSD stopped by hand turns the health to
// HEALTH_WARN with OSD_DOWN on its host within two intervals, with one webhook and one e-mail,
// and back; all monitors stopped: the status says they do not answer, since when, and an
// execution on another cluster starts as fast as before.
import { mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { expect } from 'vitest';
import { MailSink } from '@carapace/test-support/mail-sink';
import { TinyServer } from '@carapace/test-support/tiny-servers';
import { ADMIN_PASSWORD } from '../system.js';
import { LAB_HEALTH_CHECKS, waitHealthy, type DeployedCluster } from './deploy.checks.js';
import type { CephSystem, Json } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

/** The collection interval of the control plane of these tests (seconds). */
export const STATUS_INTERVAL_S = 5;
/** `ceph --connect-timeout` of the collection: short, so that all monitors down is seen soon. */
const CONNECT_TIMEOUT_S = 5;
const WEBHOOK_SECRET = 'e2e-status-webhook-secret';

/** Where the health notifications of the tests go: a real SMTP server and a webhook receiver. */
export class StatusSinks {
  readonly hooks: Json[];
  private constructor(
    readonly mail: MailSink,
    readonly mailPort: number,
    readonly webhook: TinyServer,
    hooks: Json[],
  ) {
    this.hooks = hooks;
  }

  static async start(): Promise<StatusSinks> {
    const mail = new MailSink();
    const mailPort = await mail.start();
    const hooks: Json[] = [];
    const webhook = await TinyServer.start((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          hooks.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json);
        } catch {
          hooks.push({ unparsable: Buffer.concat(chunks).toString('utf8') });
        }
        res.writeHead(204).end();
      });
    });
    return new StatusSinks(mail, mailPort, webhook, hooks);
  }

  /** The control plane's configuration of these sinks and the collection (CephSystemOptions.controlPlaneEnv and its config file). */
  controlPlane(): { env: Record<string, string>; config: string } {
    return {
      env: {
        CARAPACE_STATUS_INTERVAL_S: String(STATUS_INTERVAL_S),
        CARAPACE_STATUS_CONNECT_TIMEOUT_S: String(CONNECT_TIMEOUT_S),
        CARAPACE_SMTP_HOST: '127.0.0.1',
        CARAPACE_SMTP_PORT: String(this.mailPort),
      },
      config: [
        'notifications:',
        '  email:',
        '    - { to: "storage-oncall@example.test", events: [cluster_health] }',
        '  webhooks:',
        `    - { url: "${this.webhook.url}/hook", secret: "${WEBHOOK_SECRET}", events: [cluster_health] }`,
        '',
      ].join('\n'),
    };
  }

  healthHooks(clusterId: string): Json[] {
    return this.hooks.filter((h) => h.event === 'cluster.health_changed' && h.cluster?.id === clusterId);
  }

  healthMails(): { subject: string; text: string }[] {
    return this.mail.mails.filter((m) => m.to.includes('storage-oncall@example.test'));
  }

  async stop(): Promise<void> {
    await this.webhook.stop().catch(() => undefined);
    await this.mail.stop().catch(() => undefined);
  }
}

async function status(sys: CephSystem, clusterId: string): Promise<Json> {
  return sys.api.ok('GET', `/v1/cluster/${clusterId}/status/`);
}

/** Waits for a status newer than `after` (Unix seconds) that passes `test`. */
async function statusWhere(sys: CephSystem, clusterId: string, what: string, test: (s: Json) => boolean, timeoutMs: number): Promise<Json> {
  return eventually(
    what,
    async () => {
      const s = await status(sys, clusterId);
      return test(s) ? s : undefined;
    },
    timeoutMs,
  );
}

/**
 * The checks of a small lab (LAB_HEALTH_CHECKS: the machine's shared disk may be low on space
 * for a monitor) muted, so that the cluster is HEALTH_OK and a change of health is Ceph's own.
 */
export async function muteLabChecks(sys: CephSystem, deployed: DeployedCluster): Promise<void> {
  const mon = sys.host(deployed.monIds[0] as string);
  for (const code of LAB_HEALTH_CHECKS) await mon.exec(`ceph health mute ${code}`, { timeoutMs: 60_000 });
  await waitHealthy(sys, deployed.monIds[0] as string, 'healthy with the lab checks muted');
  await eventually('HEALTH_OK with the lab checks muted', async () => ((await sys.ceph(mon, 'status')).health.status === 'HEALTH_OK' ? true : undefined), 120_000);
}

/** The status matches `ceph status` and `ceph df` on a monitor. */
export async function statusMatchesCeph(sys: CephSystem, deployed: DeployedCluster, osds: number): Promise<Json> {
  const mon = sys.host(deployed.monIds[0] as string);
  const s = await statusWhere(sys, deployed.clusterId, 'a collected status saying HEALTH_OK', (x) => x.state === 'collected' && x.ceph?.health.status === 'HEALTH_OK', 3 * 60_000);
  const cephStatus = await sys.ceph(mon, 'status');
  const df = await sys.ceph(mon, 'df');
  const report = s.ceph as Json;
  expect(report.fsid).toBe(cephStatus.fsid);
  expect([...report.monitors.in_quorum].sort()).toEqual([...cephStatus.quorum_names].sort());
  expect(report.monitors.out_of_quorum).toEqual([]);
  expect(report.monitors.total).toBe(deployed.monIds.length);
  expect(report.managers.active).toBe(cephStatus.mgrmap?.active_name ?? (await sys.ceph(mon, 'mgr dump')).active_name);
  expect({ total: report.osds.total, up: report.osds.up, in: report.osds.in }).toEqual({ total: osds, up: osds, in: osds });
  expect(report.osds.by_host.reduce((n: number, h: Json) => n + h.total, 0)).toBe(osds);
  for (const h of report.osds.by_host) expect(h.server_id, `host ${h.host} is a server of Carapace`).not.toBeNull();
  expect(report.pgs.total).toBe(cephStatus.pgmap.num_pgs);
  const within = (got: number, want: number, what: string): void => {
    expect(Math.abs(got - want) <= 0.01 * want, `${what}: ${got} vs ceph df ${want}`).toBe(true);
  };
  within(report.capacity.raw_total_bytes, df.stats.total_bytes, 'raw total');
  within(report.capacity.raw_available_bytes, df.stats.total_avail_bytes, 'raw available');
  for (const pool of df.pools as Json[]) {
    const ours = (report.capacity.pools as Json[]).find((p) => p.name === pool.name);
    expect(ours, `pool ${pool.name}`).toBeDefined();
    within(ours!.max_available_bytes, pool.stats.max_avail, `max_avail of ${pool.name}`);
  }
  const muted = (report.health.checks as Json[]).filter((c) => !c.muted);
  expect(muted, 'no unmuted check while HEALTH_OK').toEqual([]);
  const history = await sys.api.ok('GET', `/v1/cluster/${deployed.clusterId}/status/history/?hours=1`);
  // At most a point a minute: the last may be of the minute before the lab checks were muted.
  expect(history.points.length).toBeGreaterThan(0);
  expect(history.points.at(-1).at).toBeLessThanOrEqual(s.collected_at);
  expect(history.points.at(-1).raw_total_bytes).toBeGreaterThan(0);
  return s;
}

/** An OSD stopped by hand: HEALTH_WARN with OSD_DOWN on its host within two intervals, one webhook and one e-mail; started again: OK, one more of each. */
export async function osdDownAlerts(sys: CephSystem, deployed: DeployedCluster, sinks: StatusSinks): Promise<{ downSeconds: number; backSeconds: number }> {
  const hostId = deployed.osdIds[deployed.osdIds.length - 1] as string;
  const host = sys.host(hostId);
  const fqdn = (await sys.server(hostId)).data.fqdn as string;
  const osdId = Number((await host.exec('ls /var/lib/ceph/osd | sed -n "s/^ceph-//p" | sort -n | head -1')).stdout.trim());
  const hooksBefore = sinks.healthHooks(deployed.clusterId).length;
  const mailsBefore = sinks.healthMails().length;

  const stopped = Date.now();
  await host.exec(`systemctl stop ceph-osd@${osdId}`, { timeoutMs: 120_000 });
  const warn = await statusWhere(
    sys,
    deployed.clusterId,
    `HEALTH_WARN with OSD_DOWN after osd.${osdId} was stopped`,
    (x) => x.ceph?.health.status === 'HEALTH_WARN' && x.ceph.health.checks.some((c: Json) => c.code === 'OSD_DOWN'),
    // Two intervals, and the monitor's mark-down and the collection's round trip.
    2 * STATUS_INTERVAL_S * 1000 + 20_000,
  );
  const downSeconds = (Date.now() - stopped) / 1000;
  const check = (warn.ceph.health.checks as Json[]).find((c) => c.code === 'OSD_DOWN') as Json;
  expect(check.severity).toBe('HEALTH_WARN');
  expect(check.playbook).not.toBeNull();
  const onHost = (warn.ceph.osds.by_host as Json[]).find((h) => h.server_id === hostId);
  expect(onHost, `the OSDs of ${fqdn} in the status`).toBeDefined();
  expect(onHost!.osds.find((o: Json) => o.id === osdId)?.up).toBe(false);
  expect(onHost!.up).toBe(onHost!.total - 1);

  await eventually('a webhook and an e-mail of the change to HEALTH_WARN', async () => (sinks.healthHooks(deployed.clusterId).length > hooksBefore && sinks.healthMails().length > mailsBefore ? true : undefined), 60_000);
  const hook = sinks.healthHooks(deployed.clusterId).at(-1)!;
  expect(hook.health).toEqual({ previous: 'HEALTH_OK', current: 'HEALTH_WARN' });
  expect((hook.checks as Json[]).map((c) => c.code)).toContain('OSD_DOWN');
  expect(sinks.healthMails().at(-1)!.text).toContain('OSD_DOWN');

  const started = Date.now();
  await host.exec(`systemctl start ceph-osd@${osdId}`, { timeoutMs: 120_000 });
  await statusWhere(sys, deployed.clusterId, `HEALTH_OK again after osd.${osdId} was started`, (x) => x.ceph?.health.status === 'HEALTH_OK' && x.ceph.osds.up === x.ceph.osds.total, 3 * 60_000);
  const backSeconds = (Date.now() - started) / 1000;
  await eventually('the webhook of the return to HEALTH_OK', async () => (sinks.healthHooks(deployed.clusterId).length === hooksBefore + 2 ? true : undefined), 60_000);
  // Once per change: a few more intervals bring nothing new.
  await new Promise((r) => setTimeout(r, 3 * STATUS_INTERVAL_S * 1000));
  const hooks = sinks.healthHooks(deployed.clusterId).slice(hooksBefore);
  expect(hooks.map((h) => `${h.health.previous}>${h.health.current}`)).toEqual(['HEALTH_OK>HEALTH_WARN', 'HEALTH_WARN>HEALTH_OK']);
  expect(sinks.healthMails().length - mailsBefore).toBe(2);
  return { downSeconds, backSeconds };
}

/** Seconds from creating an execution of `configuration` to its first step on the host (its run under way). */
async function secondsToStart(sys: CephSystem, configuration: Json): Promise<number> {
  const t0 = Date.now();
  const created = await sys.api.ok('POST', '/v1/execution/', { playbook_configuration: { id: configuration.id, version: configuration.version } });
  await eventually(
    'the first step of the execution',
    async () => {
      const steps = await sys.api.ok('GET', `/v1/execution/${created.id}/steps/`);
      return (steps.items as Json[]).length > 0 ? true : undefined;
    },
    120_000,
  );
  const seconds = (Date.now() - t0) / 1000;
  await eventually(
    'the execution to end',
    async () => {
      const e = await sys.api.ok('GET', `/v1/execution/${created.id}/`);
      return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
    },
    300_000,
  );
  return seconds;
}

/**
 * Every monitor stopped: within two intervals and the connect timeout of every monitor, the
 * status is `unreachable` with the reason and since when; a hello_world on `otherServerId` in
 * another cluster starts as fast as before; the monitors started again, it is collected again.
 */
export async function monitorsDownUnreachable(sys: CephSystem, deployed: DeployedCluster, otherServerId: string): Promise<{ before: number; during: number }> {
  const other = await sys.createCluster('e2e-status-other');
  const hello = await sys.configure('hello_world', other, [otherServerId]);
  const before = await secondsToStart(sys, hello);

  const mons = deployed.monIds.map((id) => sys.host(id));
  const stoppedAt = Math.floor(Date.now() / 1000);
  await Promise.all(mons.map((h) => h.exec('systemctl stop ceph-mon.target', { timeoutMs: 120_000 })));
  try {
    const down = await statusWhere(
      sys,
      deployed.clusterId,
      'the status to say the monitors do not answer',
      (x) => x.state === 'unreachable',
      2 * STATUS_INTERVAL_S * 1000 + deployed.monIds.length * (CONNECT_TIMEOUT_S + 10) * 1000 + 30_000,
    );
    expect(down.unreachable.reason.length).toBeGreaterThan(0);
    expect(down.unreachable.since).toBeGreaterThanOrEqual(stoppedAt - 1);
    // The last report is kept beside it.
    expect(down.ceph?.fsid).toBe(deployed.clusterId);
    const during = await secondsToStart(sys, hello);
    expect(during, `an execution on another cluster started in ${during} s, ${before} s before the monitors stopped`).toBeLessThanOrEqual(Math.max(2 * before, before + 3));
    const still = await status(sys, deployed.clusterId);
    expect(still.state).toBe('unreachable');
    expect(still.unreachable.since).toBe(down.unreachable.since);
    return { before, during };
  } finally {
    await Promise.all(mons.map((h) => h.exec('systemctl start ceph-mon.target', { timeoutMs: 120_000 })));
    await statusWhere(sys, deployed.clusterId, 'collected again once the monitors are back', (x) => x.state === 'collected', 3 * 60_000);
  }
}

/**
 * The web UI in a real browser (Debian's headless Chromium, driven by playwright-core) shows
 * the cluster's health as the API has it, and its capacity chart with every history point;
 * after osdDownAlerts, the chart's health strip has the HEALTH_WARN of the stopped OSD.
 */
export async function statusInBrowser(sys: CephSystem, deployed: DeployedCluster, screenshot: string): Promise<void> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    const wait = 30_000;
    await page.goto(`${sys.cp.url}/`);
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.waitFor({ timeout: wait });
    await form.getByRole('textbox', { name: 'Login' }).fill('root');
    await form.getByLabel(/^Password/).fill(ADMIN_PASSWORD);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor({ timeout: wait });
    const name = (await sys.cluster(deployed.clusterId)).data.name as string;
    const s = await status(sys, deployed.clusterId);
    const health = s.ceph?.health.status as string;
    await page.getByRole('region', { name: 'Clusters' }).getByRole('status', { name: `Health of ${name}: ${health}` }).waitFor({ timeout: wait });
    // The history as it was before the page asked for it: the page has these points at least.
    const history = await sys.api.ok('GET', `/v1/cluster/${deployed.clusterId}/status/history/`);
    await page.goto(`${sys.cp.url}/clusters/${deployed.clusterId}`);
    await page.getByRole('status', { name: `Health of ${name}: ${health}` }).waitFor({ timeout: wait });
    const chart = page.getByTestId('capacity-chart');
    await chart.waitFor({ timeout: wait });
    expect(Number(await chart.getAttribute('data-points'))).toBeGreaterThanOrEqual(history.points.length);
    expect(await chart.locator('[data-series="raw-total"]').count()).toBe(1);
    const warn = (history.points as Json[]).filter((p) => p.health === 'HEALTH_WARN').length;
    expect(warn, 'a HEALTH_WARN point of the stopped OSD in the history').toBeGreaterThan(0);
    expect(await chart.locator('rect[data-health="HEALTH_WARN"]').count()).toBeGreaterThan(0);
    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
  } finally {
    await browser.close();
  }
}
