// The web UI end to end in a real browser: headless Chromium (Debian's, /usr/bin/chromium)
// driven by playwright-core against a real control plane with its embedded runner, a lab host
// that discovered itself, and a real SMTP server catching the password reset mail. An
// operator signs in, creates a hello_world configuration, runs it and watches its log grow,
// cancels another run, resets a password through the e-mailed link; a user without
// permissions sees no administration. The configuration editor switches format, shows the
// API's refusal in place, saves a version and diffs it; a narrow dark window hides the
// navigation behind a button; the sign-in form works from the keyboard alone; the Help menu
// opens the documentation site the control plane serves at /docs/.
// Screenshots of the main pages go to test-output/ui/ (those the docs show also to
// docs/screenshots/ with CARAPACE_UPDATE_SCREENSHOTS=1).
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, LAB_GATEWAY, type Lab, type LabHost } from '../lab/lab.js';
import { MailSink } from '@carapace/test-support/mail-sink';
import { executionIdOf, keepConsoleErrors, launchChromium, publishScreenshot, screenshot, SHOTS, signedIn, signIn, UI_WAIT_MS } from './browser.js';
import { ADMIN_PASSWORD, Api, ControlPlane, freePort } from './system.js';

type Json = Record<string, any>;

const ROOT = resolve(import.meta.dirname, '../..');

describe('the web UI in a real browser', { timeout: 300_000 }, () => {
  const mail = new MailSink();
  let cp: ControlPlane;
  let api: Api;
  let lab: Lab;
  let host: LabHost;
  let server: Json;
  let clusterName: string;
  let cluster: Json;
  let configurationUrl: string;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];

  /** A screenshot of the whole page, for a person to look at, once no part of it is still loading. */
  async function shot(p: Page, name: string): Promise<void> {
    await screenshot(p, name);
  }

  /** A browser context (by default at the size the issue names), whose console errors are kept. */
  async function newContext(
    viewport = { width: 1280, height: 800 },
    colorScheme: 'light' | 'dark' = 'light',
  ): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport, colorScheme });
    const p = await context.newPage();
    keepConsoleErrors(p, consoleErrors);
    return { context, page: p };
  }

  /** Whether the element holds the keyboard focus. */
  async function hasFocus(l: Locator): Promise<boolean> {
    return (await l.and(l.page().locator(':focus')).count()) === 1;
  }

  /** Replaces the whole text of the configuration editor, as a paste would. */
  async function replaceEditorText(p: Page, text: string): Promise<void> {
    await p.locator('.cm-content').click();
    await p.keyboard.press('Control+A');
    await p.keyboard.insertText(text);
  }

  /** The execution's state as the API has it. */
  async function stateOf(id: string): Promise<string> {
    return (await api.ok('GET', `/v1/execution/${id}/`)).data.state as string;
  }

  /** A link of the main navigation. */
  function nav(p: Page, name: string) {
    return p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  }

  /** The state the execution page shows. */
  function shownState(p: Page) {
    return p.getByRole('status', { name: 'Execution state' });
  }

  /** How many lines the log view of the execution page holds ("1,234 lines"). */
  async function shownLines(p: Page): Promise<number> {
    const text = (await p.getByTestId('log-line-count').textContent()) ?? '';
    return Number(text.replace(/[^0-9]/g, '') || '0');
  }

  /** The id of the execution whose page is open. */
  function executionId(p: Page): string {
    return executionIdOf(p);
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
      launchChromium(),
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
    await nav(page, 'Dashboard').click();
    await page.waitForURL(`${cp.url}/`);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'dashboard');
    publishScreenshot('dashboard');
  });

  it('lists the discovered server and shows its facts', async () => {
    await nav(page, 'Servers').click();
    const name = server.data.name as string;
    const row = page.getByRole('row').filter({ hasText: name });
    await row.first().waitFor({ timeout: UI_WAIT_MS });
    await expect.poll(() => row.first().textContent(), { timeout: UI_WAIT_MS }).toContain('operational');
    await shot(page, 'servers');
    await row.first().getByRole('link').first().click();
    await page.waitForURL(new RegExp(`/servers/${server.id}$`), { timeout: UI_WAIT_MS });
    await page.getByText(host.ip, { exact: false }).first().waitFor({ timeout: UI_WAIT_MS });
    // The facts, not their loading skeletons: the tabs count what they hold.
    await page.getByRole('tab', { name: /^Disks \(\d+\)$/ }).waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'server');
    await page.getByRole('tab', { name: /^Network \(\d+\)$/ }).click();
    await page.getByRole('table', { name: 'Network interfaces' }).getByRole('row').filter({ hasText: host.ip }).first().waitFor({ timeout: UI_WAIT_MS });
  });

  it('creates a hello_world configuration on the discovered server, and shows it in the editor', async () => {
    cluster = await api.ok('POST', '/v1/cluster/', { name: clusterName });
    await page.goto(`${cp.url}/playbook-configurations/new`);
    await page.getByLabel(/^Name/).fill('hello from the browser');
    await page.getByLabel(/^Playbook/).first().click();
    await page.getByRole('option', { name: 'Hello world' }).click();
    await page.getByLabel(/^Cluster/).first().click();
    await page.getByRole('option', { name: clusterName }).click();
    await page.getByRole('checkbox', { name: `Server ${server.data.name}` }).check();
    await page.getByRole('button', { name: 'Create configuration' }).click();
    await page.waitForURL(/\/playbook-configurations\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    configurationUrl = page.url();
    // The generated inventory names the server's address.
    await page.locator('.cm-content').getByText(host.ip).first().waitFor({ timeout: UI_WAIT_MS });
    // Loaded as saved: the name is the model's, so nothing is changed and it can run.
    expect(await page.getByRole('textbox', { name: 'Name' }).inputValue()).toBe('hello from the browser');
    expect(await page.getByRole('button', { name: 'Run', exact: true }).isEnabled()).toBe(true);
    // the docs' picture without the toast over the header (Mantine closes it after 4 s)
    await page.getByText('Configuration created').waitFor({ state: 'hidden', timeout: UI_WAIT_MS });
    await shot(page, 'configuration-editor');
    publishScreenshot('configuration-editor');
  });

  it('edits a configuration: switches format, shows what is refused in place, saves a version and diffs it', async () => {
    // A configuration of its own: the runs below keep the one made above, at version 1.
    const created = await api.ok('POST', '/v1/playbook_configuration/', {
      name: 'edited in the browser',
      cluster_id: cluster.id,
      playbook_id: 'hello_world',
      server_ids: [server.id],
    });
    const { inventory } = created.data.configuration as Json;
    const p = page;
    await p.goto(`${cp.url}/playbook-configurations/${created.id}`);
    const yamlEditor = p.getByRole('textbox', { name: 'Configuration (YAML)' });
    const jsonEditor = p.getByRole('textbox', { name: 'Configuration (JSON)' });
    await yamlEditor.getByText('port_number: 8085').waitFor({ timeout: UI_WAIT_MS });
    const format = p.getByRole('radiogroup', { name: 'Editor format' });

    // JSON and back: the same configuration in the other text form, nothing changed.
    await format.getByText('JSON', { exact: true }).click();
    await jsonEditor.getByText('"port_number": 8085').waitFor({ timeout: UI_WAIT_MS });
    await format.getByText('YAML', { exact: true }).click();
    await yamlEditor.getByText('port_number: 8085').waitFor({ timeout: UI_WAIT_MS });
    const save = p.getByRole('button', { name: 'Save as new version' });
    expect(await save.isEnabled()).toBe(false);

    // Text that is not YAML: refused before any request, marked in the editor.
    await replaceEditorText(p, 'global_vars: {port_number: 8086\ninventory: [\n');
    await save.click();
    const alert = p.getByRole('alert').filter({ hasText: 'Not saved' });
    await alert.getByText(/Invalid YAML/).waitFor({ timeout: UI_WAIT_MS });
    await expect.poll(() => p.locator('.cm-lintRange-error').count(), { timeout: UI_WAIT_MS }).toBeGreaterThan(0);

    // YAML the API refuses (global_vars must be a mapping): its answer, and the field marked.
    await replaceEditorText(p, JSON.stringify({ global_vars: 'port_number=8086', inventory }, null, 2));
    await save.click();
    const refused = p.getByRole('alert').filter({ hasText: 'The API refused the configuration' });
    await refused.waitFor({ timeout: UI_WAIT_MS });
    expect(await refused.textContent()).toContain('must be object');
    expect(await refused.locator('code').textContent()).toBe('global_vars');
    await expect.poll(() => p.locator('.cm-lintRange-error').count(), { timeout: UI_WAIT_MS }).toBeGreaterThan(0);
    expect(await p.getByLabel('Configuration version').textContent()).toBe('v1');

    // A valid change: saved as version 2, the text reloaded from what was saved.
    await replaceEditorText(p, JSON.stringify({ global_vars: { port_number: 8086 }, inventory }, null, 2));
    await save.click();
    await expect.poll(() => p.getByLabel('Configuration version').textContent(), { timeout: UI_WAIT_MS }).toBe('v2');
    await yamlEditor.getByText('port_number: 8086').waitFor({ timeout: UI_WAIT_MS });
    expect(await p.getByRole('alert').filter({ hasText: /Not saved|refused/ }).count()).toBe(0);
    expect(await p.locator('.cm-lintRange-error').count()).toBe(0);
    expect((await api.ok('GET', `/v1/playbook_configuration/${created.id}/`)).data.configuration.global_vars).toEqual({ port_number: 8086 });

    // The history: version 1 beside version 2, the changed line in each.
    await p.getByRole('tab', { name: 'History' }).click();
    const diff = p.getByTestId('diff-view');
    await diff.getByText('port_number: 8086').waitFor({ timeout: UI_WAIT_MS });
    expect(await diff.textContent()).toContain('port_number: 8085');
    await shot(p, 'configuration-history');
  });

  it('runs it and follows its log live, then shows its steps', async () => {
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/executions\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    const id = executionId(page);
    await page.getByRole('log', { name: 'Execution log' }).waitFor({ timeout: UI_WAIT_MS });
    // Watched without a reload: each look notes the state shown and the lines the log holds.
    const seen: { state: string; lines: number }[] = [];
    await expect
      .poll(
        async () => {
          const look = { state: (await shownState(page).textContent()) ?? '', lines: await shownLines(page) };
          if (JSON.stringify(seen.at(-1)) !== JSON.stringify(look)) seen.push(look);
          return look.state;
        },
        { timeout: 180_000, interval: 100 },
      )
      .toBe('completed');
    expect(await stateOf(id)).toBe('completed');
    const states = [...new Set(seen.map((l) => l.state))];
    expect(states, JSON.stringify(seen)).toContain('started');
    expect(states.indexOf('started')).toBeLessThan(states.indexOf('completed'));
    // Lines arrived while it ran, and more of them later: the log was followed live.
    const whileRunning = seen.filter((l) => l.state === 'started' && l.lines > 0);
    expect(whileRunning.length, JSON.stringify(seen)).toBeGreaterThan(0);
    const first = whileRunning[0]?.lines ?? 0;
    await expect.poll(() => shownLines(page), { timeout: UI_WAIT_MS }).toBeGreaterThan(first);
    // The whole log: its end is shown, and searching finds the recap.
    const log = page.getByRole('log', { name: 'Execution log' });
    await log.locator('[data-index]').getByText('PLAY RECAP').waitFor({ timeout: UI_WAIT_MS });
    await page.getByRole('textbox', { name: 'Search log' }).fill('PLAY RECAP');
    await expect.poll(() => page.getByTestId('log-match-count').textContent(), { timeout: UI_WAIT_MS }).toBe('0 of 1');
    await page.getByRole('button', { name: 'Next match' }).click();
    await expect.poll(() => page.getByTestId('log-match-count').textContent(), { timeout: UI_WAIT_MS }).toBe('1 of 1');
    await log.locator('mark').filter({ hasText: 'PLAY RECAP' }).waitFor({ timeout: UI_WAIT_MS });
    await page.getByRole('textbox', { name: 'Search log' }).fill('');
    const jumpToEnd = page.getByRole('button', { name: 'Jump to end' });
    if (await jumpToEnd.count()) await jumpToEnd.click();
    // The steps: rows of this host, none failed.
    const steps = page.getByRole('table', { name: 'Steps' });
    await steps.getByRole('row').filter({ hasText: server.data.name as string }).first().waitFor({ timeout: UI_WAIT_MS });
    expect(await steps.getByRole('button', { name: 'Show error' }).count()).toBe(0);
    await shot(page, 'execution');
    publishScreenshot('execution');
  });

  it('cancels another run: it ends canceled', async () => {
    await page.goto(configurationUrl);
    const run = page.getByRole('button', { name: 'Run', exact: true });
    await run.waitFor({ timeout: UI_WAIT_MS });
    await expect.poll(() => run.isEnabled(), { timeout: UI_WAIT_MS }).toBe(true);
    await run.click();
    await page.waitForURL(/\/executions\/[0-9a-f-]{36}$/, { timeout: UI_WAIT_MS });
    const id = executionId(page);
    // It has begun on the host: a first step is shown.
    await page.getByRole('table', { name: 'Steps' }).getByRole('row').filter({ hasText: server.data.name as string }).first().waitFor({ timeout: 120_000 });
    // The host stops answering, so Ansible hangs on its next task until canceled.
    await host.exec('ip link set eth0 down');
    try {
      expect(await shownState(page).textContent()).toBe('started');
      await page.getByRole('button', { name: 'Cancel execution' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm cancel' }).click();
      const seen: string[] = [];
      await expect
        .poll(
          async () => {
            const state = (await shownState(page).textContent()) ?? '';
            if (seen.at(-1) !== state) seen.push(state);
            return state;
          },
          { timeout: 60_000, interval: 100 },
        )
        .toBe('canceled');
      expect(seen.every((s) => ['started', 'canceling', 'canceled'].includes(s)), JSON.stringify(seen)).toBe(true);
      expect(await stateOf(id)).toBe('canceled');
      expect(await page.getByRole('button', { name: 'Cancel execution' }).count()).toBe(0);
      await shot(page, 'execution-canceled');
    } finally {
      await host.exec('ip link set eth0 up && ip route replace default via 10.77.0.1');
    }
  });

  it('shows the administration pages to the administrator', async () => {
    await nav(page, 'Users').click();
    await page.getByRole('row').filter({ hasText: 'root' }).first().waitFor({ timeout: UI_WAIT_MS });
    await shot(page, 'admin-users');
  });

  it("opens the documentation site from the Help menu, follows its sidebar, and links a configuration to its playbook's reference", async () => {
    // The site npm test builds (npm run docs:build), served by the control plane at /docs/ (ui.docsDir's default).
    expect(existsSync(join(ROOT, 'docs', '.vitepress', 'dist', 'index.html')), 'the docs site is not built: run npm run docs:build').toBe(true);
    await page.goto(configurationUrl);
    const reference = page.getByRole('link', { name: 'Playbook reference', exact: true });
    await reference.waitFor({ timeout: UI_WAIT_MS });

    // Help → Operator guide: the guide in a new tab.
    await page.getByRole('button', { name: 'Help', exact: true }).click();
    const guideItem = page.getByRole('menuitem', { name: 'Operator guide' });
    expect(await guideItem.getAttribute('target')).toBe('_blank');
    const [docs] = await Promise.all([admin.waitForEvent('page', { timeout: UI_WAIT_MS }), guideItem.click()]);
    keepConsoleErrors(docs, consoleErrors);
    await docs.waitForURL(`${cp.url}/docs/guide/`, { timeout: UI_WAIT_MS });
    await docs.getByRole('heading', { level: 1 }).first().waitFor({ timeout: UI_WAIT_MS });

    // The sidebar to Troubleshooting (the site's own navigation, no new page load).
    const sidebar = docs.getByRole('navigation', { name: 'Sidebar Navigation' });
    await sidebar.getByRole('link', { name: 'Troubleshooting', exact: true }).click();
    await docs.waitForURL(`${cp.url}/docs/guide/troubleshooting`, { timeout: UI_WAIT_MS });
    await docs.getByRole('heading', { level: 1, name: /Troubleshooting/ }).waitFor({ timeout: UI_WAIT_MS });
    // Loaded afresh, its console watched from the start: the CSP lets the site's inline scripts run (they set its data).
    await docs.reload();
    await docs.getByRole('heading', { level: 1, name: /Troubleshooting/ }).waitFor({ timeout: UI_WAIT_MS });
    expect(await docs.evaluate('typeof window.__VP_SITE_DATA__')).toBe('object');
    await shot(docs, 'docs-troubleshooting');

    // The configuration's link: the section of hello_world in the served reference, in a new tab.
    const href = (await reference.getAttribute('href')) ?? '';
    expect(href).toMatch(/^\/docs\/reference\/playbooks#.+/);
    expect(await reference.getAttribute('target')).toBe('_blank');
    const anchor = href.split('#')[1] as string;
    const served = await fetch(`${cp.url}${href.split('#')[0]}`);
    expect(served.status).toBe(200);
    expect(await served.text()).toContain(`id="${anchor}"`);
    const [ref] = await Promise.all([admin.waitForEvent('page', { timeout: UI_WAIT_MS }), reference.click()]);
    keepConsoleErrors(ref, consoleErrors);
    await ref.waitForURL(`${cp.url}${href}`, { timeout: UI_WAIT_MS });
    const heading = ref.locator(`h2[id="${anchor}"]`);
    await heading.waitFor({ timeout: UI_WAIT_MS });
    expect(await heading.textContent()).toContain('Hello world');
    await ref.close();
    await docs.close();
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
      // The page is loaded on demand: until it shows, the sign-in form (and its Login) stays.
      const request = p.getByRole('form', { name: 'Request a password reset' });
      await request.waitFor({ timeout: UI_WAIT_MS });
      await request.getByRole('textbox', { name: 'Login' }).fill('operator');
      await p.getByRole('button', { name: 'Send reset link' }).click();
      await p.getByText('Check your e-mail').waitFor({ timeout: UI_WAIT_MS });
      const message = await mail.waitFor(email, 'password reset', () => true, UI_WAIT_MS);
      const link = /(http:\/\/\S+\/password_reset\/\S+\/)/.exec(message.text)?.[1];
      expect(link?.startsWith(`${cp.url}/password_reset/`)).toBe(true);
      await p.goto(link as string);
      await p.getByRole('form', { name: 'Set a new password' }).waitFor({ timeout: UI_WAIT_MS });
      const password = 'a-new-password-from-the-browser';
      await p.getByLabel(/^New password/).fill(password);
      await p.getByLabel(/^Repeat the password/).fill(password);
      await p.getByRole('button', { name: 'Set the new password' }).click();
      await p.waitForURL(/\/sign-in/, { timeout: UI_WAIT_MS });
      await signIn(p, 'operator', password);
      await nav(p, 'Servers').waitFor();

      // This user holds no administration permission: no such link, and the pages say so.
      expect(await p.getByText('Administration').count()).toBe(0);
      for (const name of ['Users', 'Roles', 'Runners', 'Cloud config', 'Executions', 'Playbook configurations']) expect(await nav(p, name).count(), name).toBe(0);
      await p.goto(`${cp.url}/admin/users`);
      await p.getByText(/permission|not allowed|cannot/i).first().waitFor({ timeout: UI_WAIT_MS });
      expect(await p.getByRole('row').filter({ hasText: 'root' }).count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('signs in from the keyboard alone: Tab goes Login, Password, Sign in; Enter submits', async () => {
    const { context, page: p } = await newContext();
    try {
      await p.goto(`${cp.url}/sign-in`);
      const form = p.getByRole('form', { name: 'Sign in' });
      await form.waitFor({ timeout: UI_WAIT_MS });
      const login = form.getByRole('textbox', { name: 'Login' });
      const password = form.getByLabel(/^Password/);
      const submit = form.getByRole('button', { name: 'Sign in' });
      // From the top of the page (a click on its subtitle), not from the field focused on arrival.
      await expect.poll(() => hasFocus(login), { timeout: UI_WAIT_MS }).toBe(true);
      await p.getByText('Ceph deployment control plane').click();
      expect(await p.locator(':focus').count()).toBe(0);
      await p.keyboard.press('Tab');
      expect(await hasFocus(login)).toBe(true);
      await p.keyboard.insertText('root');
      await p.keyboard.press('Tab');
      expect(await hasFocus(password)).toBe(true);
      await p.keyboard.insertText(ADMIN_PASSWORD);
      await p.keyboard.press('Tab');
      expect(await hasFocus(submit)).toBe(true);
      await p.keyboard.press('Enter');
      await signedIn(p);
      await p.waitForURL(`${cp.url}/`, { timeout: UI_WAIT_MS });
    } finally {
      await context.close();
    }
  });

  it('hides the navigation behind a button on a narrow window, in the dark theme', async () => {
    const { context, page: p } = await newContext({ width: 700, height: 800 }, 'dark');
    try {
      await p.goto(`${cp.url}/`);
      await signIn(p, 'root', ADMIN_PASSWORD);
      expect(await p.locator('html').getAttribute('data-mantine-color-scheme')).toBe('dark');
      await p.getByRole('heading', { name: 'Dashboard' }).waitFor({ timeout: UI_WAIT_MS });
      // Closed: out of view, and out of the tab order and the accessibility tree.
      const servers = p.getByRole('link', { name: 'Servers', exact: true });
      expect(await servers.count()).toBe(0);
      await p.getByRole('button', { name: 'Open navigation' }).click();
      await servers.waitFor({ timeout: UI_WAIT_MS });
      // Slid into the window, not only present.
      await expect.poll(async () => (await servers.boundingBox())?.x ?? -1, { timeout: UI_WAIT_MS }).toBeGreaterThanOrEqual(0);
      await p.getByRole('button', { name: 'Close navigation' }).waitFor({ timeout: UI_WAIT_MS });
      await shot(p, 'narrow-dark');
      // Following a link closes it again.
      await servers.click();
      await p.waitForURL(/\/servers$/, { timeout: UI_WAIT_MS });
      await p.getByRole('button', { name: 'Open navigation' }).waitFor({ timeout: UI_WAIT_MS });
      await expect.poll(() => servers.count(), { timeout: UI_WAIT_MS }).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('logged no error in the browser console', () => {
    // 401 after a sign-out or a refused call, 400 when the API refuses an edited
    // configuration: the app handling it, not an error of the page.
    expect(consoleErrors.filter((e) => !/status of 40[0134]/.test(e))).toEqual([]);
  });
});
