import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// scripts/build-if-stale.js decides whether `npm start` (and the runner and CLI bins) run the
// compiler: a warm start must not, a changed source must.

const HELPER = resolve(import.meta.dirname, '../../../scripts/build-if-stale.js');

function isStale(configFile: string): boolean {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', `const { isStale } = await import(${JSON.stringify(HELPER)}); console.log(isStale(process.argv[1]));`, configFile], { encoding: 'utf8' });
  return out.trim() === 'true';
}

/** What the UI helpers say of the UI workspace `uiDir`: whether it is stale, and what buildUiIfStale does (unless `build` is false). */
function ui(uiDir: string, build = true): { stale: boolean; build: string } {
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { isUiStale, buildUiIfStale } = await import(${JSON.stringify(HELPER)}); const stale = isUiStale(process.argv[1]); const build = process.argv[2] === 'true' ? await buildUiIfStale({ uiDir: process.argv[1] }) : 'not asked'; console.log(JSON.stringify({ stale, build }));`,
      uiDir,
      String(build),
    ],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim()) as { stale: boolean; build: string };
}

function touch(file: string, secondsFromNow: number): void {
  const t = new Date(Date.now() + secondsFromNow * 1000);
  utimesSync(file, t, t);
}

describe('build-if-stale', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-build-stale-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Two projects, app referencing lib, under a build config referencing app.
  const project = (name: string, refs: string[]) => {
    mkdirSync(join(dir, name, 'src', 'deep'), { recursive: true });
    writeFileSync(join(dir, name, 'tsconfig.json'), JSON.stringify({ include: ['src'], references: refs.map((path) => ({ path })) }));
    writeFileSync(join(dir, name, 'src', 'deep', 'index.ts'), 'export {};\n');
  };
  project('lib', []);
  project('app', ['../lib']);
  const buildConfig = join(dir, 'tsconfig.build.json');
  writeFileSync(buildConfig, JSON.stringify({ files: [], references: [{ path: 'app' }] }));
  const files = ['lib/tsconfig.json', 'lib/src/deep/index.ts', 'lib/src/deep', 'lib/src', 'app/tsconfig.json', 'app/src/deep/index.ts', 'app/src/deep', 'app/src', 'tsconfig.build.json'];
  const built = (secondsFromNow: number) => {
    for (const name of ['lib', 'app']) {
      mkdirSync(join(dir, name, 'dist'), { recursive: true });
      writeFileSync(join(dir, name, 'dist', '.tsbuildinfo'), '{}');
      touch(join(dir, name, 'dist', '.tsbuildinfo'), secondsFromNow);
    }
  };

  it('is stale with no build, fresh when every build is newer than every input, stale again when a referenced source changes', () => {
    for (const f of files) touch(join(dir, f), -3600);
    expect(isStale(buildConfig)).toBe(true);
    built(60);
    expect(isStale(buildConfig)).toBe(false);
    touch(join(dir, 'lib', 'src', 'deep', 'index.ts'), 120);
    expect(isStale(buildConfig)).toBe(true);
    built(180);
    expect(isStale(buildConfig)).toBe(false);
    // A deleted source changes its directory's time.
    touch(join(dir, 'app', 'src', 'deep'), 240);
    expect(isStale(buildConfig)).toBe(true);
    expect(isStale(join(dir, 'lib', 'tsconfig.json'))).toBe(false);
  });

  it('finds the web UI stale with no build or a changed input (source, page, Vite config, package), fresh after its build; builds only with Vite at hand', () => {
    const uiDir = join(dir, 'ui');
    expect(ui(uiDir)).toEqual({ stale: true, build: 'absent' });
    mkdirSync(join(uiDir, 'src', 'pages'), { recursive: true });
    const inputs = ['package.json', 'index.html', 'vite.config.ts', 'tsconfig.json', 'src/pages/Page.tsx'];
    for (const f of inputs) writeFileSync(join(uiDir, f), f === 'package.json' ? JSON.stringify({ name: 'ui', dependencies: { '@carapace/models': '0.1.0' } }) : '\n');
    for (const f of [...inputs, 'src/pages', 'src']) touch(join(uiDir, f), -3600);
    // No build: stale, and without Vite resolvable from the workspace nothing can build it.
    expect(ui(uiDir)).toEqual({ stale: true, build: 'no-compiler' });
    mkdirSync(join(uiDir, 'dist', 'assets'), { recursive: true });
    writeFileSync(join(uiDir, 'dist', 'index.html'), '<!doctype html>');
    // Built after every input, the workspace libraries it bundles (@carapace/models) and package-lock.json.
    touch(join(uiDir, 'dist', 'index.html'), 3600);
    expect(ui(uiDir)).toEqual({ stale: false, build: 'fresh' });
    for (const f of inputs) {
      touch(join(uiDir, f), 7200);
      expect(ui(uiDir).stale, f).toBe(true);
      touch(join(uiDir, f), -3600);
    }
    // A deleted page changes its directory's time.
    touch(join(uiDir, 'src', 'pages'), 7200);
    expect(ui(uiDir).stale).toBe(true);
  });

  it("finds the checkout's own UI fresh after the build (a warm npm start builds nothing)", () => {
    expect(ui(resolve(import.meta.dirname, '../../ui'), false).stale).toBe(false);
  });
});
