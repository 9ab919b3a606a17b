// npm run bench:ui — the web UI (issue 11), two figures:
//
// 1. The initial load of the built UI: index.html and the scripts and style sheets it loads
//    before any lazy chunk (its module script, modulepreload links and style sheets), each
//    gzipped (level 6, as a compressing proxy would send it), against the aim of 300 KB.
// 2. The log view: headless Chromium on the execution page of a real control plane follows a
//    run whose log of 200,000 lines (BENCH_LOG_LINES) a protocol client feeds the way the
//    runner does (bench:log's feed). Reported: the time from the run's end (the control plane
//    acknowledged the result, the follow stream ends) to the last line shown in the page, the
//    longest main-thread task while the log streamed (a frozen page shows as a long one), and,
//    in the same run, the baseline: the same bytes streamed by a bare Node server into a page
//    that appends them to a plain <pre>, timed from the server's end of stream to the last
//    line in the page.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Page } from 'playwright-core';
import { ADMIN_PASSWORD, Api, ControlPlane } from '../e2e/system.js';
import { logChunks, logLine, startFedRun } from './log-feed.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DIST = join(ROOT, 'apps', 'ui', 'dist');
const LINES = Number(process.env.BENCH_LOG_LINES ?? 200_000);
const AIM_BYTES = 300 * 1000;
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** The files of the initial load and their sizes, raw and gzipped. */
function initialLoad(): { file: string; raw: number; gzip: number }[] {
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const refs = new Set<string>();
  for (const m of html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)) refs.add(m[1] as string);
  for (const m of html.matchAll(/<link[^>]*\srel="(?:stylesheet|modulepreload)"[^>]*\shref="([^"]+)"/g)) refs.add(m[1] as string);
  for (const m of html.matchAll(/<link[^>]*\shref="([^"]+)"[^>]*\srel="(?:stylesheet|modulepreload)"/g)) refs.add(m[1] as string);
  const files = ['/index.html', ...[...refs].filter((r) => r.startsWith('/'))];
  return files.map((file) => {
    const body = readFileSync(join(DIST, file));
    return { file, raw: body.length, gzip: gzipSync(body, { level: 6 }).length };
  });
}

// The functions below run in the page (as source text: this program has no DOM types).

/** Installs a long-task observer in the page (the longest task while the log streams). */
async function watchLongTasks(page: Page): Promise<void> {
  await page.evaluate(`(() => {
    window.longestTaskMs = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.longestTaskMs = Math.max(window.longestTaskMs, e.duration);
    }).observe({ type: 'longtask', buffered: false });
  })()`);
}

async function longestTaskMs(page: Page): Promise<number> {
  return page.evaluate<number>('window.longestTaskMs');
}

/**
 * Resolves with the page's clock (Date.now()) when `text` first shows in the element matching
 * `selector`. A <pre> holds megabytes of text nodes: only its last two can hold the last line.
 */
async function shownAt(page: Page, selector: string, text: string, timeoutMs: number): Promise<number> {
  const handle = await page.waitForFunction(
    `(() => {
      const el = document.querySelector(${JSON.stringify(selector)});
      if (!el) return false;
      const text = el.childElementCount === 0 ? (el.lastChild?.previousSibling?.textContent ?? '') + (el.lastChild?.textContent ?? '') : (el.textContent ?? '');
      return text.includes(${JSON.stringify(text)}) ? Date.now() : false;
    })()`,
    undefined,
    { polling: 'raf', timeout: timeoutMs },
  );
  return (await handle.jsonValue()) as number;
}

/** The plain <pre> page: fetches the log as a stream and appends each piece as text. */
const PRE_PAGE = `<!doctype html><html><body><pre id="log"></pre><script>
  (async () => {
    const pre = document.getElementById('log');
    const res = await fetch('/log');
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pre.appendChild(document.createTextNode(value));
    }
  })();
</script></body></html>`;

async function preBaseline(parts: readonly string[], lastLine: string): Promise<{ afterEndMs: number; totalMs: number; longestTaskMs: number }> {
  let endedAt = 0;
  let startedAt = 0;
  let release: () => void = () => {};
  const go = new Promise<void>((r) => (release = r));
  const server = createServer((req, res) => {
    if (req.url !== '/log') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PRE_PAGE);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    void go.then(() => {
      startedAt = Date.now();
      let i = 0;
      const pump = () => {
        while (i < parts.length) if (!res.write(parts[i++])) return void res.once('drain', pump);
        res.end(() => (endedAt = Date.now()));
      };
      pump();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`http://127.0.0.1:${address.port}/`);
    await watchLongTasks(page);
    const shown = shownAt(page, '#log', lastLine.trim(), 300_000);
    release();
    const at = await shown;
    return { afterEndMs: Math.max(0, at - endedAt), totalMs: at - startedAt, longestTaskMs: await longestTaskMs(page) };
  } finally {
    await browser.close();
    server.close();
  }
}

async function uiLogView(parts: readonly string[], lastLine: string): Promise<{ afterEndMs: number; totalMs: number; longestTaskMs: number; countShown: string }> {
  const cp = await ControlPlane.start({ runner: 'none', env: { CARAPACE_LOG_LEVEL: 'warn' } });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  try {
    const api = new Api(cp.url);
    await api.login();
    const run = await startFedRun(cp, api);
    // The app's CSP (script-src 'self') forbids the eval with which Playwright polls a
    // waitForFunction predicate given as text: the bench's own probe, not the app's code.
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
    await page.goto(`${cp.url}/sign-in?next=${encodeURIComponent(`/executions/${run.executionId}`)}`);
    await page.getByLabel('Login').fill('root');
    await page.getByLabel(/^Password/).fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('log').waitFor({ timeout: 60_000 });
    await watchLongTasks(page);
    const shown = shownAt(page, '[role="log"]', lastLine.trim(), 600_000);
    const startedAt = Date.now();
    await run.sendLog(parts);
    await run.finish();
    const endedAt = Date.now();
    const at = await shown;
    const longest = await longestTaskMs(page);
    const countShown = (await page.getByTestId('log-line-count').textContent().catch(() => null)) ?? '?';
    run.close();
    return { afterEndMs: Math.max(0, at - endedAt), totalMs: at - startedAt, longestTaskMs: longest, countShown };
  } finally {
    await browser.close();
    await cp.stop();
    cp.removeData();
  }
}

async function main(): Promise<void> {
  const helper = (await import(join(ROOT, 'scripts', 'build-if-stale.js'))) as { buildUiIfStale: (o?: object) => Promise<string> };
  await helper.buildUiIfStale({ onBuild: () => console.error('bench:ui: building the web UI...') });

  const load = initialLoad();
  const gzip = load.reduce((n, f) => n + f.gzip, 0);
  const raw = load.reduce((n, f) => n + f.raw, 0);
  const kb = (b: number) => `${(b / 1000).toFixed(1)} kB`;
  console.log('\nbench:ui  initial load of the built UI (apps/ui/dist), before any lazy chunk');
  console.log('');
  console.log('| file | raw | gzip |');
  console.log('|---|---|---|');
  for (const f of load) console.log(`| ${f.file} | ${kb(f.raw)} | ${kb(f.gzip)} |`);
  console.log(`| **total** | ${kb(raw)} | **${kb(gzip)}** |`);
  console.log(`\ninitial load gzip ${kb(gzip)} against the aim of ${kb(AIM_BYTES)} (ratio ${(gzip / AIM_BYTES).toFixed(2)}): ${gzip <= AIM_BYTES ? 'PASS' : 'MISS'}`);

  const parts = logChunks(LINES);
  const lastLine = logLine(LINES - 1);
  const base = await preBaseline(parts, lastLine);
  const ui = await uiLogView(parts, lastLine);
  const mib = parts.reduce((n, p) => n + p.length, 0) / 1024 / 1024;
  console.log(`\nbench:ui  log view: ${LINES.toLocaleString('en')} lines, ${mib.toFixed(1)} MiB, headless Chromium at 1280×800`);
  console.log('');
  console.log('| figure | execution page (follow=yes) | plain <pre> page, bare server |');
  console.log('|---|---|---|');
  console.log(`| end of stream → last line shown | ${Math.round(ui.afterEndMs)} ms | ${Math.round(base.afterEndMs)} ms |`);
  console.log(`| first byte sent → last line shown | ${Math.round(ui.totalMs)} ms | ${Math.round(base.totalMs)} ms |`);
  console.log(`| longest main-thread task while streaming | ${Math.round(ui.longestTaskMs)} ms | ${Math.round(base.longestTaskMs)} ms |`);
  console.log(`| lines counted by the page | ${ui.countShown} | |`);
  console.log(`\nend of stream → last line: ${Math.round(ui.afterEndMs)} ms vs ${Math.round(base.afterEndMs)} ms (ratio ${(ui.afterEndMs / Math.max(1, base.afterEndMs)).toFixed(2)}); whole stream ratio ${(ui.totalMs / base.totalMs).toFixed(2)}`);
}

await main();
