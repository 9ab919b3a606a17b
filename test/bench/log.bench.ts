// npm run bench:log — a run printing 200,000 lines (issue 5): how fast the lines reach a
// client following the log (GET /v1/execution/{id}/log/?follow=yes), as a ratio of the same
// bytes streamed by a bare Node HTTP server in the same run, and the control plane's memory
// while the log grows (it must stay flat: the log lives in SQLite, not in memory).
//
// The control plane is the real program (a subprocess on a temporary data dir); the runner
// side is a protocol client sending log chunks the way the runner agent does (32 KiB chunks,
// numbered, waiting for the stream's drain), so the figure is the control plane's own.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Api, ControlPlane } from '../e2e/system.js';
import { logChunks, startFedRun } from './log-feed.js';

const LINES = Number(process.env.BENCH_LOG_LINES ?? 200_000);

function rssKiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const get = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: get('VmRSS'), hwm: get('VmHWM') };
}

/** Reads a streamed response, counting lines; resolves with the time the last byte arrived. */
async function countLines(url: string, headers: Record<string, string>): Promise<{ lines: number; ms: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(url, { headers });
  if (!res.body) throw new Error('no body');
  let lines = 0;
  let bytes = 0;
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += part.length;
    for (const b of part) if (b === 10) lines++;
  }
  return { lines, bytes, ms: performance.now() - started };
}

async function baseline(parts: string[]): Promise<number> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    let i = 0;
    const pump = () => {
      while (i < parts.length) {
        if (!res.write(parts[i++])) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const { lines, ms } = await countLines(`http://127.0.0.1:${address.port}/`, {});
  server.close();
  if (lines !== LINES) throw new Error(`baseline got ${lines} lines`);
  return (lines / ms) * 1000;
}

async function main(): Promise<void> {
  const parts = logChunks(LINES);
  const base = await baseline(parts);

  const cp = await ControlPlane.start({ runner: 'none', env: { CARAPACE_LOG_LEVEL: 'warn' } });
  const pid = cp.proc.child.pid ?? 0;
  try {
    const api = new Api(cp.url);
    await api.login();
    const run = await startFedRun(cp, api);
    const { executionId } = run;

    const idle = rssKiB(pid);
    const following = countLines(`${cp.url}/v1/execution/${executionId}/log/?follow=yes`, { authorization: api.authToken, accept: 'text/plain' });
    const samples: { at: number; rss: number }[] = [];
    const started = performance.now();
    await run.sendLog(parts, (i) => {
      if (i % Math.ceil(parts.length / 20) === 0) samples.push({ at: i / parts.length, rss: rssKiB(pid).rss });
    });
    const finished = run.finish();
    const followed = await following;
    const sentMs = performance.now() - started;
    await finished;
    const end = rssKiB(pid);
    samples.push({ at: 1, rss: end.rss });
    run.close();
    const offset = parts.reduce((n, p) => n + p.length, 0);

    if (followed.lines !== LINES) throw new Error(`the follower got ${followed.lines} of ${LINES} lines`);
    const rate = (followed.lines / followed.ms) * 1000;
    const mib = (kib: number) => (kib / 1024).toFixed(1);
    const quarter = samples.find((s) => s.at >= 0.25)?.rss ?? idle.rss;
    const growthAfterQuarter = end.rss - quarter;
    const logMiB = offset / 1024 / 1024;
    console.log(`\nbench:log  ${LINES} lines, ${logMiB.toFixed(1)} MiB of log in ${parts.length} chunks`);
    console.log('');
    console.log('| figure | value |');
    console.log('|---|---|');
    console.log(`| lines/s reaching a follow client | ${Math.round(rate).toLocaleString('en')} |`);
    console.log(`| baseline: bare Node HTTP stream of the same bytes | ${Math.round(base).toLocaleString('en')} lines/s |`);
    console.log(`| ratio to baseline | ${(rate / base).toFixed(3)} |`);
    console.log(`| runner side: all chunks sent and stored in | ${Math.round(sentMs)} ms |`);
    console.log(`| control plane RSS idle / at 25 % / at end / peak | ${mib(idle.rss)} / ${mib(quarter)} / ${mib(end.rss)} / ${mib(end.hwm)} MiB |`);
    console.log(`| RSS growth from 25 % to the end, per MiB of log | ${(growthAfterQuarter / 1024 / (logMiB * 0.75)).toFixed(3)} MiB/MiB |`);
    console.log(`| RSS samples (MiB) | ${samples.map((s) => mib(s.rss)).join(' ')} |`);
    const flat = growthAfterQuarter / 1024 < Math.max(32, logMiB * 0.25);
    console.log(`\nmemory flat as the log grows (growth after 25 % < max(32 MiB, 25 % of the log)): ${flat ? 'PASS' : 'FAIL'}`);
  } finally {
    await cp.stop();
    cp.removeData();
  }
}

await main();
