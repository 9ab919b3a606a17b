// `npm run package` refuses what it cannot build with a clear message, before building anything.
// (Building, installing and running the packages: test/e2e/package-*.e2e.test.ts.)
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '..', 'scripts', 'package-debs.js');
const out = mkdtempSync(join(tmpdir(), 'carapace-package-debs-'));

async function packageDebs(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [SCRIPT, '--out', out, ...args]);
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('npm run package: bad input', () => {
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  const cases: [string, string[], RegExp][] = [
    ['a version dpkg would refuse', ['--version', 'v1 beta'], /--version v1 beta: not a Debian version/],
    ['an unknown package', ['--only', 'cli'], /--only cli: runner or control-plane/],
    ['an unknown compression', ['--compression', 'bzip2'], /--compression bzip2: gzip, xz or none/],
    ['an unknown option', ['--verison', '1'], /Unknown option '--verison'/],
  ];
  for (const [what, args, message] of cases) {
    it(`refuses ${what}: exit 2, the reason, nothing built`, async () => {
      const r = await packageDebs(args);
      expect(r.stderr).toMatch(message);
      expect(r.code).toBe(2);
      expect(readdirSync(out)).toEqual([]);
    });
  }

  it('--help prints the usage', async () => {
    const r = await packageDebs(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: node scripts\/package-debs\.js/);
  });
});
