import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// What `npm ci` installs (package-lock.json) must run on the oldest Node the project supports,
// and every install script must be a decision written in allowScripts: then `npm ci` prints
// neither EBADENGINE nor "install scripts not yet covered by allowScripts".

const ROOT = resolve(import.meta.dirname, '..');
const semver = createRequire(import.meta.url)('semver') as { minVersion(range: string): { version: string } | null; satisfies(version: string, range: string): boolean };

interface Lock {
  packages: Record<string, { engines?: Record<string, string> | string[]; hasInstallScript?: boolean }>;
}

const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; allowScripts: Record<string, boolean> };
const lock = JSON.parse(readFileSync(resolve(ROOT, 'package-lock.json'), 'utf8')) as Lock;
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

describe('install policy', () => {
  it('installs only packages whose declared Node engine admits the oldest supported Node', () => {
    const oldest = semver.minVersion(pkg.engines.node)?.version;
    expect(oldest).toMatch(/^20\./);
    const refused = Object.entries(lock.packages)
      .filter(([path, meta]) => path !== '' && meta.engines && !Array.isArray(meta.engines) && meta.engines.node)
      .filter(([, meta]) => !semver.satisfies(oldest!, (meta.engines as Record<string, string>).node!))
      .map(([path, meta]) => `${path} wants node ${(meta.engines as Record<string, string>).node}`);
    expect(refused).toEqual([]);
  });

  it('lists every package with an install script in allowScripts, allowed or denied', () => {
    const withScripts = [...new Set(Object.entries(lock.packages).filter(([, meta]) => meta.hasInstallScript).map(([path]) => nameOf(path)))].sort();
    expect(withScripts.length).toBeGreaterThan(0);
    expect(withScripts.filter((name) => typeof pkg.allowScripts[name] !== 'boolean')).toEqual([]);
  });
});
