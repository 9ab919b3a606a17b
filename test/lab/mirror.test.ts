import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aptMirror } from './image.js';

// The lab builds its image from the mirror of the machine's own apt configuration: no mirror
// host name is written in the project.
describe('aptMirror', () => {
  let dir: string;
  const saved = process.env.CARAPACE_LAB_MIRROR;
  beforeEach(() => {
    delete process.env.CARAPACE_LAB_MIRROR;
    dir = mkdtempSync(join(tmpdir(), 'carapace-apt-'));
    mkdirSync(join(dir, 'sources.list.d'));
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.CARAPACE_LAB_MIRROR;
    else process.env.CARAPACE_LAB_MIRROR = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the deb822 sources of the suite, skipping security archives and other suites', () => {
    writeFileSync(
      join(dir, 'sources.list.d', 'debian.sources'),
      [
        'Types: deb',
        'URIs: http://mirror.example.test/debian-security',
        'Suites: bookworm-security',
        'Components: main',
        '',
        'Types: deb',
        'URIs: http://mirror.example.test/debian/',
        'Suites: bookworm bookworm-updates',
        'Components: main contrib',
        '',
      ].join('\n'),
    );
    expect(aptMirror('bookworm', dir)).toBe('http://mirror.example.test/debian');
    expect(() => aptMirror('trixie', dir)).toThrow(/no Debian mirror for trixie/);
  });

  it('reads a one-line sources.list, and the environment overrides both', () => {
    writeFileSync(join(dir, 'sources.list'), '# comment\ndeb [arch=amd64] http://other.example.test/debian bookworm main\n');
    expect(aptMirror('bookworm', dir)).toBe('http://other.example.test/debian');
    process.env.CARAPACE_LAB_MIRROR = 'http://local.example.test/debian';
    expect(aptMirror('bookworm', dir)).toBe('http://local.example.test/debian');
  });
});
