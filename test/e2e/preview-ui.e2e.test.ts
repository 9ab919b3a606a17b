// Previews and relaunches in the web UI (issue 31), in a real browser: headless Chromium
// driven by playwright-core against a real control plane with its embedded runner and a lab
// host that discovered itself. An operator previews a hello_world configuration with
// **Preview** (next to **Run**) and reads what it would change, with the unit's diff; lists
// previews apart from runs; runs a configuration that fails and relaunches it with **Relaunch
// failed hosts**, the pages linking the relaunch and the original; **Relaunch all** too.
// Screenshots go to test-output/ui/ (the preview's also to docs/screenshots/ with CARAPACE_UPDATE_SCREENSHOTS=1).
import { mkdirSync } from 'node:fs';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { executionIdOf, keepConsoleErrors, launchChromium, publishScreenshot, screenshot, SHOTS, signIn, UI_WAIT_MS } from './browser.js';
import { ADMIN_PASSWORD, Api, ControlPlane } from './system.js';

type Json = Record<string, any>;

/** How long a run on the lab host may take. */
const RUN_WAIT_MS = 180_000;

describe('previews and relaunches in the web UI', { timeout: 600_000 }, () => {
  let cp: ControlPlane;
  let api: Api;
  let lab: Lab;
  let server: Json;
  let clusterId: string;
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];

  async function shot(name: string): Promise<void> {
    await screenshot(page, name);
  }

  function executionId(): string {
    return executionIdOf(page);
  }

  async function finalState(id: string): Promise<string> {
    let state = '';
    await expect
      .poll(
        async () => {
          state = (await api.ok('GET', `/v1/execution/${id}/`)).data.state as string;
          return ['completed', 'failed', 'canceled'].includes(state);
        },
        { timeout: RUN_WAIT_MS, interval: 500 },
      )
      .toBe(true);
    return state;
  }

  async function configuration(name: string, globalVars?: Json): Promise<Json> {
    const created = await api.ok('POST', '/v1/playbook_configuration/', { name, cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] });
    if (!globalVars) return created;
    const data = { ...created.data, configuration: { ...created.data.configuration, global_vars: { ...created.data.configuration.global_vars, ...globalVars } } };
    return api.ok('PUT', `/v1/playbook_configuration/${created.id}/`, { ...created, data });
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await ensureBridge();
    cp = await ControlPlane.start({ httpHost: LAB_GATEWAY, runner: 'embedded', env: { CARAPACE_DISCOVERY_TOKEN: '' } });
    api = new Api(cp.url);
    await api.login();
    const access = await controlPlaneAccess({ dataDir: cp.dataDir, url: cp.url, env: { CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    const [discovered, launched] = await Promise.all([
      discoverLab({ name: 'e2e-preview-ui', hosts: 1, access, timeoutMs: 120_000 }),
      launchChromium(),
    ]);
    lab = discovered.lab;
    browser = launched;
    server = await api.ok('GET', `/v1/server/${discovered.hosts[0]?.serverId}/`);
    clusterId = (await api.ok('POST', '/v1/cluster/', { name: 'ui-previews' })).id;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    keepConsoleErrors(page, consoleErrors);
    await page.goto(`${cp.url}/`);
    await signIn(page, 'root', ADMIN_PASSWORD);
  }, 40 * 60_000);

  afterAll(async () => {
    await browser?.close();
    await cp?.stop();
    await lab?.destroy();
    cp?.removeData();
  }, 120_000);

  it('previews a configuration: Preview next to Run, then per host what would change, with the diffs', async () => {
    const config = await configuration('ui-preview');
    await page.goto(`${cp.url}/playbook-configurations/${config.id}`);
    await page.getByRole('button', { name: 'Run', exact: true }).waitFor({ timeout: UI_WAIT_MS });
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    await page.waitForURL(/\/executions\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    const id = executionId();
    await page.getByRole('heading', { name: 'Preview of hello_world' }).waitFor({ timeout: UI_WAIT_MS });
    expect(['completed', 'failed']).toContain(await finalState(id));
    const result = page.getByLabel('Preview result');
    const card = result.getByLabel(/^Preview of /);
    await card.first().waitFor({ timeout: UI_WAIT_MS });
    await expect.poll(() => card.first().textContent(), { timeout: UI_WAIT_MS }).toContain('Install the systemd unit');
    await expect.poll(() => page.getByLabel('Diff of Install the systemd unit').textContent(), { timeout: UI_WAIT_MS }).toContain('+ExecStart=');
    expect(await card.first().textContent()).toMatch(/\d+ would change/);
    await shot('preview');
    publishScreenshot('preview');
    // nothing happened on the host
    const answer = await fetch(`http://${server.data.ip}:8085/`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    expect(answer).toBeNull();

    // listed apart: in Previews, not in Runs
    await page.goto(`${cp.url}/executions`);
    const link = page.getByRole('link', { name: `Execution ${id}` });
    await page.getByRole('table', { name: 'Executions' }).waitFor({ timeout: UI_WAIT_MS });
    expect(await link.count()).toBe(0);
    await page.getByText('Previews', { exact: true }).click();
    await link.waitFor({ timeout: UI_WAIT_MS });
  });

  it('relaunches a failed execution: Relaunch failed hosts, then Relaunch all, linked both ways', async () => {
    // an invalid port: the play's first check fails on the host
    const config = await configuration('ui-failing', { port_number: 'not-a-port' });
    const failed = (await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } })).id as string;
    expect(await finalState(failed)).toBe('failed');
    await page.goto(`${cp.url}/executions/${failed}`);
    await page.getByRole('button', { name: 'Relaunch all' }).waitFor({ timeout: UI_WAIT_MS });
    await shot('execution-failed-relaunch');
    await page.getByRole('button', { name: 'Relaunch failed hosts' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/executions/') && !url.pathname.endsWith(failed), { timeout: UI_WAIT_MS });
    const relaunch = executionId();
    await page.getByText('Relaunch of').waitFor({ timeout: UI_WAIT_MS });
    const data = (await api.ok('GET', `/v1/execution/${relaunch}/`)).data;
    expect(data).toMatchObject({ relaunch_of: failed, limit_server_ids: [server.id], relaunch: { hosts: 'failed', whole: false } });
    expect(await finalState(relaunch)).toBe('failed');

    // the original links to its relaunch
    await page.goto(`${cp.url}/executions/${failed}`);
    const by = page.getByLabel('Relaunched by');
    await by.waitFor({ timeout: UI_WAIT_MS });
    expect(await by.textContent()).toContain(relaunch.slice(0, 8));
    await page.getByRole('button', { name: 'Relaunch all' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/executions/') && !url.pathname.endsWith(failed), { timeout: UI_WAIT_MS });
    const all = executionId();
    expect((await api.ok('GET', `/v1/execution/${all}/`)).data.relaunch).toMatchObject({ hosts: 'all', whole: true });
    await finalState(all);
  });

  it('logged no error in the browser console', () => {
    expect(consoleErrors).toEqual([]);
  });
});
