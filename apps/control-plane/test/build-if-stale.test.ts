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
});
