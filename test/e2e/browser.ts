// The browser side of the web UI's end-to-end tests: Debian's Chromium (/usr/bin/chromium),
// headless, driven by playwright-core; screenshots in test-output/ui/ (and those the docs
// show, published to docs/screenshots/ when asked), the sign-in form, and what a page shows
// that the tests read.
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
/** Where the screenshots go. */
export const SHOTS = join(ROOT, 'test-output', 'ui');
/** Where the screenshots the docs show are kept (committed). */
export const DOC_SHOTS = join(ROOT, 'docs', 'screenshots');

/**
 * The screenshots the docs (and the README) show: each taken by a browser test and published
 * by it (`publishScreenshot`), so that a picture of the UI never goes stale. test/docs/screenshots.test.ts
 * checks that the docs show only these, that each is committed and shown, and published by a test.
 */
export const DOC_SCREENSHOTS = ['dashboard', 'configuration-editor', 'execution', 'preview', 'cluster-status'] as const;
export type DocScreenshot = (typeof DOC_SCREENSHOTS)[number];
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** How long a page condition may take: a page load, a query, a run's next line. */
export const UI_WAIT_MS = 30_000;

/** Starts the headless Chromium. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A screenshot of the whole page, for a person to look at, once no part of it is still loading. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await expect.poll(() => page.locator('.mantine-Skeleton-root, .mantine-Loader-root').count(), { timeout: UI_WAIT_MS }).toBe(0);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Copies the screenshot `name` just taken (test-output/ui/NAME.png) to docs/screenshots/ when
 * asked (`CARAPACE_UPDATE_SCREENSHOTS=1`); otherwise does nothing: a test run leaves the
 * checkout as it found it.
 */
export function publishScreenshot(name: DocScreenshot): void {
  if (process.env.CARAPACE_UPDATE_SCREENSHOTS !== '1') return;
  mkdirSync(DOC_SHOTS, { recursive: true });
  copyFileSync(join(SHOTS, `${name}.png`), join(DOC_SHOTS, `${name}.png`));
}

/** Keeps the page's console errors and uncaught exceptions in `errors`. */
export function keepConsoleErrors(page: Page, errors: string[]): void {
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (err) => errors.push(String(err)));
}

/** Signs in through the sign-in form, and waits for the application frame. */
export async function signIn(page: Page, login: string, password: string): Promise<void> {
  const form = page.getByRole('form', { name: 'Sign in' });
  await form.waitFor({ timeout: UI_WAIT_MS });
  await form.getByRole('textbox', { name: 'Login' }).fill(login);
  // Mantine's labels of required fields end with an asterisk.
  await form.getByLabel(/^Password/).fill(password);
  await form.getByRole('button', { name: 'Sign in' }).click();
  await signedIn(page);
}

/** Waits for the application frame, signed in (on a narrow window its navigation stays closed). */
export async function signedIn(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: UI_WAIT_MS });
}

/** The id of the execution whose page is open. */
export function executionIdOf(page: Page): string {
  const id = /\/executions\/([0-9a-f-]{36})/.exec(page.url())?.[1];
  if (!id) throw new Error(`not an execution page: ${page.url()}`);
  return id;
}
