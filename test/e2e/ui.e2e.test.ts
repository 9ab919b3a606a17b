// The web UI end to end in a real browser: headless Chromium (Debian's, /usr/bin/chromium)
// driven by playwright-core against a real control plane with its embedded runner, a lab host
// that discovered itself, and a real SMTP server catching the password reset mail. An
// operator signs in, creates a hello_world configuration, runs it and watches its log grow,
// cancels another run, resets a password through the e-mailed link; a user without
// permissions sees no administration. Screenshots of the main pages go to test-output/ui/.
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, LAB_GATEWAY, type Lab, type LabHost } from '../lab/lab.js';
import { MailSink } from '../support/mail-sink.js';
import { ADMIN_PASSWORD, Api, ControlPlane, eventually, freePort } from './system.js';

type Json = Record<string, any>;

const ROOT = resolve(import.meta.dirname, '../..');
const SHOTS = join(ROOT, 'test-output', 'ui');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** How long a page condition may take: a page load, a query, a run's next line. */
const UI_WAIT_MS = 30_000;

describe('the web UI in a real browser', { timeout: 300_000 }, () => {
  const mail = new MailSink();
  let cp: ControlPlane;
  let api: Api;
  let lab: Lab;
  let host: LabHost;
  let server: Json;
  let clusterName: string;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];

  /** A screenshot of the whole page, for a person to look at. */
  async function shot(p: Page, name: string): Promise<void> {
    await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }

  /** A browser context at the size the issue names, whose console errors are kept. */
  async function newContext(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    const p = await context.newPage();
    p.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    p.on('pageerror', (err) => consoleErrors.push(String(err)));
    return { context, page: p };
  }

  async function signIn(p: Page, login: string, password: string): Promise<void> {
    await p.getByLabel('Login').fill(login);
    await p.getByLabel('Password', { exact: true }).fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('navigation', { name: 'Main' }).waitFor({ timeout: UI_WAIT_MS });
  }

  /** The execution's state as the API has it. */
  async function stateOf(id: string): Promise<string> {
    return (await api.ok('GET', `/v1/execution/${id}/`)).data.state as string;
  }

  /** The id of the execution whose page is open. */
  function executionId(p: Page): string {
    const id = /\/executions\/([0-9a-f-]{36})/.exec(p.url())?.[1];
    if (!id) throw new Error(`not an execution page: ${p.url()}`);
    return id;
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const smtpPort = await mail.start();
    await ensureBridge();
    // The port is chosen first: the reset link in the mail must point at this control plane.
    const httpPort = await freePort(LAB_GATEWAY);
    const url = `http://${LAB_GATEWAY}:${httpPort}`;
    cp = await ControlPlane.start({
      httpHost: LAB_GATEWAY,
      httpPort,
      runner: 'embedded',
      env: {
        // generated in the data dir, where the lab reads it
        CARAPACE_DISCOVERY_TOKEN: '',
        CARAPACE_SMTP_HOST: '127.0.0.1',
        CARAPACE_SMTP_PORT: String(smtpPort),
        CARAPACE_RESET_URL: `${url}/password_reset/{reset_token}/`,
        CARAPACE_RUNNER_CANCEL_GRACE_MS: '2000',
      },
    });
    api = new Api(cp.url);
    await api.login();
    const access = await controlPlaneAccess({ dataDir: cp.dataDir, url: cp.url, env: { CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    const [discovered, launched] = await Promise.all([
      discoverLab({ name: 'e2e-ui', hosts: 1, access, timeoutMs: 120_000 }),
      chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS }),
    ]);
    lab = discovered.lab;
    browser = launched;
    host = lab.hosts[0] as LabHost;
    server = await api.ok('GET', `/v1/server/${discovered.hosts[0]?.serverId}/`);
    clusterName = 'ui-e2e';
    ({ context: admin, page } = await newContext());
  }, 40 * 60_000);

  afterAll(async () => {
    await host?.exec('ip link set eth0 up && ip route replace default via 10.77.0.1', { check: false }).catch(() => undefined);
    await admin?.close();
    await browser?.close();
    await cp?.stop();
    await lab?.destroy();
    cp?.removeData();
    await mail.stop();
  }, 120_000);

  it('serves the app beside the API: a page path answers the app, /v1 keeps its JSON 404', async () => {
    const app = await fetch(`${cp.url}/executions/00000000-0000-0000-0000-000000000000`);
    expect(app.status).toBe(200);
    expect(app.headers.get('content-type')).toMatch(/^text\/html/);
    expect(app.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const missing = await fetch(`${cp.url}/v1/no-such-thing/`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'NotFound' });
  });

  it('sends a signed-out visitor to sign in, then back where they were going; shows the dashboard', async () => {
    await page.goto(`${cp.url}/servers`);
    await page.waitForURL(/\/sign-in\?next=/, { timeout: UI_WAIT_MS });
    await signIn(page, 'root', ADMIN_PASSWORD);
    await page.waitForURL(/\/servers$/, { timeout: UI_WAIT_MS });
    await page.getByRole('link', { name: 'Dashboard' }).click();
    await page.waitForURL(`${cp.url}/`);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'dashboard');
  });

  it('lists the discovered server and shows its facts', async () => {
    await page.getByRole('link', { name: 'Servers' }).click();
    const name = server.data.name as string;
    const row = page.getByRole('row').filter({ hasText: name });
    await row.first().waitFor({ timeout: UI_WAIT_MS });
    await expect.poll(() => row.first().textContent(), { timeout: UI_WAIT_MS }).toContain('operational');
    await shot(page, 'servers');
    await row.first().getByRole('link').first().click();
    await page.waitForURL(new RegExp(`/servers/${server.id}$`), { timeout: UI_WAIT_MS });
    await page.getByText(host.ip, { exact: false }).first().waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'server');
  });

  it('creates a hello_world configuration on the discovered server, and shows it in the editor', async () => {
    await api.ok('POST', '/v1/cluster/', { name: clusterName });
    await page.goto(`${cp.url}/playbook-configurations/new`);
    await page.getByLabel('Name', { exact: true }).fill('hello from the browser');
    await page.getByRole('textbox', { name: 'Playbook' }).click();
    await page.getByRole('option', { name: 'Hello world' }).click();
    await page.getByRole('textbox', { name: 'Cluster' }).click();
    await page.getByRole('option', { name: clusterName }).click();
    await page.getByRole('checkbox', { name: `Server ${server.data.name}` }).check();
    await page.getByRole('button', { name: 'Create configuration' }).click();
    await page.waitForURL(/\/playbook-configurations\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    // The generated inventory names the server's address.
    await page.locator('.cm-content').getByText(host.ip).first().waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'configuration-editor');
  });

  it('runs it and follows its log live, then shows its steps', async () => {
    await page.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/\/executions\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    const id = executionId(page);
    const log = page.getByRole('log');
    await log.waitFor({ timeout: UI_WAIT_MS });
    // Live: the page shows lines of the log while the run is still going, then more of them.
    const lines = () => log.locator('[data-index]').count();
    await expect.poll(lines, { timeout: 120_000 }).toBeGreaterThan(0);
    const shownWhileRunning = await lines();
    const stateThen = await stateOf(id);
    await log.getByText('PLAY RECAP').waitFor({ timeout: 180_000 });
    expect(['created', 'started']).toContain(stateThen);
    expect(await page.getByTestId('log-line-count').textContent()).not.toBe(`${shownWhileRunning} lines`);
    await expect.poll(() => stateOf(id), { timeout: 60_000 }).toBe('completed');
    await page.getByText('completed').first().waitFor({ timeout: UI_WAIT_MS });
    // The steps: a row per task and host.
    const steps = page.getByRole('table', { name: 'Steps' });
    await steps.getByRole('row').filter({ hasText: host.ip }).first().waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'execution');
    mkdirSync(join(ROOT, 'docs', 'screenshots'), { recursive: true });
    copyFileSync(join(SHOTS, 'execution.png'), join(ROOT, 'docs', 'screenshots', 'execution.png'));
  });

  it('cancels another run: it ends canceled', async () => {
    await page.goBack();
    await page.waitForURL(/\/playbook-configurations\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    await page.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/\/executions\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    const id = executionId(page);
    await eventually(async () => ((await api.ok('GET', `/v1/execution/${id}/steps/`)).items.length > 0 ? true : undefined), 120_000, 'a first step');
    // The host stops answering, so Ansible hangs on its next task until canceled.
    await host.exec('ip link set eth0 down');
    try {
      await page.getByRole('button', { name: 'Cancel' }).click();
      const confirm = page.getByRole('dialog').getByRole('button', { name: /cancel/i });
      if (await confirm.count()) await confirm.first().click();
      await expect.poll(() => stateOf(id), { timeout: 60_000 }).toBe('canceled');
      await page.getByText('canceled').first().waitFor({ timeout: UI_WAIT_MS });
    } finally {
      await host.exec('ip link set eth0 up && ip route replace default via 10.77.0.1');
    }
  });

  it('shows the administration pages to the administrator', async () => {
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('row').filter({ hasText: 'root' }).first().waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'admin-users');
  });

  it('resets a password through the e-mailed link, and signs in with the new one', async () => {
    const email = 'operator@example.com';
    const role = await api.ok('POST', '/v1/role/', { name: 'viewer', permissions: [{ name: 'api', permissions: ['view_cluster', 'view_server'] }, { name: 'playbook', permissions: [] }] });
    await api.ok('POST', '/v1/user/', { login: 'operator', email, full_name: 'An Operator', role_id: role.id });
    await mail.passwordOf(email);
    const { context, page: p } = await newContext();
    try {
      await p.goto(`${cp.url}/sign-in`);
      await p.getByRole('link', { name: 'Forgot your password?' }).click();
      await p.getByLabel('Login').fill('operator');
      await p.getByRole('button', { name: 'Send reset link' }).click();
      await p.getByText('Check your e-mail').waitFor({ timeout: UI_WAIT_MS });
      const message = await mail.waitFor(email, 'password reset', () => true, UI_WAIT_MS);
      const link = /(http:\/\/\S+\/password_reset\/\S+\/)/.exec(message.text)?.[1];
      expect(link?.startsWith(`${cp.url}/password_reset/`)).toBe(true);
      await p.goto(link as string);
      const password = 'a-new-password-from-the-browser';
      await p.getByLabel('New password').fill(password);
      await p.getByLabel('Confirm the new password').fill(password);
      await p.getByRole('button', { name: 'Set the new password' }).click();
      await p.waitForURL(/\/sign-in/, { timeout: UI_WAIT_MS });
      await signIn(p, 'operator', password);
      await p.getByRole('link', { name: 'Servers' }).waitFor();

      // This user holds no administration permission: no such link, and the pages say so.
      expect(await p.getByText('Administration').count()).toBe(0);
      for (const name of ['Users', 'Roles', 'Runners', 'Cloud config', 'Executions', 'Playbook configurations']) expect(await p.getByRole('link', { name }).count(), name).toBe(0);
      await p.goto(`${cp.url}/admin/users`);
      await p.getByText(/permission|not allowed|cannot/i).first().waitFor({ timeout: UI_WAIT_MS });
      expect(await p.getByRole('row').filter({ hasText: 'root' }).count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('logged no error in the browser console', () => {
    // 401 after a sign-out or a refused call is the app handling it, not an error of the page.
    expect(consoleErrors.filter((e) => !/status of 40[134]/.test(e))).toEqual([]);
  });
});
