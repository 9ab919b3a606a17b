// The cluster status in the web UI, in a real browser: headless Chromium (Debian's,
// /usr/bin/chromium) driven by playwright-core against a real control plane (in this process,
// serving the built UI) whose status rows come from the status collection's own ingestion
// (the Pacific outputs of test/fixtures/ceph-pacific, as a runner sends them), with a
// history over the last 24 hours made by moving the control plane's clock. The dashboard
// shows a badge per cluster (unreachable with since when); the cluster page shows the
// checks linked to their playbook, the daemons by host, the pools and the capacity chart.
// Screenshots go to test-output/ui/ (the cluster page's also to docs/screenshots/ with CARAPACE_UPDATE_SCREENSHOTS=1).
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@carapace/client';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { collectedStatus, unreachableStatus } from '../cli/cluster-status.support.js';
import { publishScreenshot } from './browser.js';

const ROOT = resolve(import.meta.dirname, '../..');
const SHOTS = join(ROOT, 'test-output', 'ui');
const UI_DIR = join(ROOT, 'apps', 'ui', 'dist');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const UI_WAIT_MS = 30_000;

describe('the cluster status in the web UI, in a real browser', { timeout: 300_000 }, () => {
  let cp: TestControlPlane;
  let client: Client;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];
  const ids = { ok: '', warn: '', down: '' };
  /** History points of the WARN cluster, as the API has them. */
  let points = 0;

  async function shot(name: string): Promise<void> {
    await expect.poll(() => page.locator('.mantine-Skeleton-root, .mantine-Loader-root').count(), { timeout: UI_WAIT_MS }).toBe(0);
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const helper = (await import(join(ROOT, 'scripts', 'build-if-stale.js'))) as { buildUiIfStale: (o?: object) => Promise<string> };
    const [built, launched] = await Promise.all([helper.buildUiIfStale({ output: 'pipe' }), chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })]);
    expect(['fresh', 'built']).toContain(built);
    browser = launched;
    cp = await TestControlPlane.start({ CARAPACE_UI_DIR: UI_DIR });
    client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });

    ids.ok = (await client.createCluster('alpha')).id;
    ids.warn = (await client.createCluster('bravo')).id;
    ids.down = (await client.createCluster('charlie')).id;
    // 24 hours of history: a collection every 10 minutes from 23 h 50 min ago, the clock
    // moved back and forward again; bravo turns WARN 2 hours ago, charlie stops answering.
    const start = -24 * 3600 + 600;
    cp.clock.offsetMs = start * 1000;
    for (let t = start; t <= 0; t += 600) {
      cp.clock.offsetMs = t * 1000;
      await collectedStatus(cp, ids.ok, 'ok');
      await collectedStatus(cp, ids.warn, t < -2 * 3600 ? 'ok' : 'warn');
      if (t < -3600) await collectedStatus(cp, ids.down, 'ok');
      else await unreachableStatus(cp, ids.down, 'ssh: connect to host 10.0.0.9 port 22: No route to host');
    }
    cp.clock.offsetMs = 0;
    points = (await client.getClusterStatusHistory(ids.warn)).points.length;
    expect(points).toBeGreaterThan(100);

    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(String(err)));
  }, 600_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await client?.close();
    await cp?.stop();
  });

  it('the dashboard shows every cluster\'s health as a badge, the unreachable one with since when', async () => {
    await page.goto(`${cp.url}/`);
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.waitFor({ timeout: UI_WAIT_MS });
    await form.getByRole('textbox', { name: 'Login' }).fill('root');
    await form.getByLabel(/^Password/).fill(ROOT_PASSWORD);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor({ timeout: UI_WAIT_MS });
    const panel = page.getByRole('region', { name: 'Clusters' });
    await panel.getByRole('status', { name: /^Health of alpha: HEALTH_OK$/ }).waitFor({ timeout: UI_WAIT_MS });
    await panel.getByRole('status', { name: /^Health of bravo: HEALTH_WARN$/ }).waitFor({ timeout: UI_WAIT_MS });
    const down = await client.getClusterStatus(ids.down);
    expect(down.state).toBe('unreachable');
    const badge = panel.getByRole('status', { name: /^Health of charlie: unreachable since / });
    await badge.waitFor({ timeout: UI_WAIT_MS });
    expect(await badge.textContent()).toMatch(/unreachable\s*since (\d+ min|1 h) ago/);
    expect(await badge.getAttribute('title')).toContain('No route to host');
    // The unhealthy first: the unreachable one, then WARN, then OK.
    const order = await panel.getByRole('status', { name: /^Health of / }).evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')?.split(':')[0]));
    expect(order).toEqual(['Health of charlie', 'Health of bravo', 'Health of alpha']);
    await shot('dashboard-health');
  });

  it('the cluster page shows the checks linked to their playbook, the daemons by host, the capacity chart and the pools', async () => {
    await page.getByRole('region', { name: 'Clusters' }).getByRole('link', { name: 'bravo' }).click();
    await page.waitForURL(new RegExp(`/clusters/${ids.warn}$`), { timeout: UI_WAIT_MS });
    expect(await page.getByRole('tab', { name: 'Status' }).getAttribute('aria-selected')).toBe('true');
    const status = await client.getClusterStatus(ids.warn);
    const ceph = status.ceph!;
    await page.getByRole('status', { name: 'Health of bravo: HEALTH_WARN' }).waitFor({ timeout: UI_WAIT_MS });

    const checks = page.getByRole('table', { name: 'Health checks' });
    await checks.waitFor({ timeout: UI_WAIT_MS });
    expect(await checks.getByRole('row').count()).toBe(ceph.health.checks.length + 1);
    const osdDown = checks.getByRole('row').filter({ hasText: 'OSD_DOWN' });
    expect(await osdDown.textContent()).toContain('1 osds down');
    const link = osdDown.getByRole('link', { name: 'Address OSD_DOWN with replace_osd' });
    expect(await link.getAttribute('href')).toBe(`/playbook-configurations/new?cluster=${ids.warn}&playbook=replace_osd`);
    for (const check of ceph.health.checks.filter((c) => c.playbook === null)) {
      expect(await checks.getByRole('row').filter({ hasText: check.code }).getByRole('link').count(), check.code).toBe(0);
    }

    const hosts = page.getByRole('table', { name: 'OSDs by host' });
    for (const host of ceph.osds.by_host) {
      const row = hosts.getByRole('row').filter({ hasText: host.host });
      expect(await row.first().textContent(), host.host).toContain(`${host.up}/${host.total}`);
    }
    const downHost = ceph.osds.by_host.find((h) => h.up < h.total);
    expect(downHost).toBeDefined();
    const downOsd = downHost!.osds.find((o) => !o.up)!;
    expect(await hosts.getByRole('row').filter({ hasText: downHost!.host }).first().textContent()).toContain(`osd.${downOsd.id}`);
    expect(await page.getByLabel('Monitors').textContent()).toContain(`${ceph.monitors.in_quorum.length}/${ceph.monitors.total} in quorum`);
    expect(await page.getByLabel('Monitors').textContent()).toContain(`out of quorum: ${ceph.monitors.out_of_quorum.join(', ')}`);
    expect(await page.getByLabel('Managers').textContent()).toContain(ceph.managers.active ?? 'none active');

    // The chart: every history point in it, the used area and total line drawn, the health strip turning WARN.
    const chart = page.getByTestId('capacity-chart');
    await chart.waitFor({ timeout: UI_WAIT_MS });
    expect(Number(await chart.getAttribute('data-points'))).toBe(points);
    expect(await chart.getAttribute('aria-label')).toMatch(/^Raw capacity over the last 24 hours: \d+ points from /);
    expect((await chart.locator('[data-series="raw-used"]').getAttribute('d'))?.length).toBeGreaterThan(100);
    expect(await chart.locator('[data-series="raw-total"]').count()).toBe(1);
    const strip = chart.locator('[data-series="health"] rect');
    expect(await strip.count()).toBe(points);
    expect(await chart.locator('rect[data-health="HEALTH_WARN"]').count()).toBeGreaterThan(5);
    expect(await chart.locator('rect[data-health="HEALTH_OK"]').count()).toBeGreaterThan(100);
    const box = await chart.boundingBox();
    expect(box?.width).toBeGreaterThan(400);

    const pools = page.getByRole('table', { name: 'Pools' });
    for (const pool of ceph.capacity.pools) await pools.getByRole('row').filter({ hasText: pool.name }).first().waitFor({ timeout: UI_WAIT_MS });
    expect(await page.getByLabel('Raw capacity', { exact: true }).textContent()).toMatch(/^Raw: .* used of .* \(\d+\.\d %\)/);
    await shot('cluster-status');
    publishScreenshot('cluster-status');

    // The playbook link leads to a new configuration of replace_osd for this cluster, filled in.
    await link.click();
    await page.waitForURL(/\/playbook-configurations\/new\?/, { timeout: UI_WAIT_MS });
    await expect.poll(() => page.getByLabel(/^Playbook/).first().inputValue(), { timeout: UI_WAIT_MS }).toMatch(/replace.osd/i);
    await expect.poll(() => page.getByLabel(/^Cluster/).first().inputValue(), { timeout: UI_WAIT_MS }).toBe('bravo');
  });

  it('an unreachable cluster\'s page says since when and why, and keeps its last report', async () => {
    await page.goto(`${cp.url}/clusters/${ids.down}`);
    const alert = page.getByRole('alert').filter({ hasText: 'The monitors do not answer' });
    await alert.waitFor({ timeout: UI_WAIT_MS });
    expect(await alert.textContent()).toContain('No route to host');
    expect(await alert.textContent()).toContain('What follows is the last report, of ');
    await page.getByRole('table', { name: 'OSDs by host' }).waitFor({ timeout: UI_WAIT_MS });
    const chart = page.getByTestId('capacity-chart');
    await chart.waitFor({ timeout: UI_WAIT_MS });
    expect(await chart.locator('rect[data-health="UNREACHABLE"]').count()).toBeGreaterThan(3);
    await shot('cluster-status-unreachable');
    expect(consoleErrors).toEqual([]);
  });
});
