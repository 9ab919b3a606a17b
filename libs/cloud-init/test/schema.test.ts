// Validates the generated user-data with the real tools that consume it: cloud-init's own
// schema validator, the PyYAML that cloud-init parses it with, and systemd-analyze for the
// unit. These tools are required: if one is missing the tests fail, they do not skip.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCOVERY_PATHS, generateCloudConfig } from '@carapace/cloud-init';
import { parseUserData, run, writtenFiles } from './helpers.js';
import type { RunResult } from './helpers.js';
import { VARIANTS } from './variants.js';

let dir = '';
let counter = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'carapace-cloud-init-schema-'));
});
afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

function writeTemp(name: string, text: string): string {
  const path = join(dir, `${++counter}-${name}`);
  writeFileSync(path, text);
  return path;
}

async function tool(command: string, args: readonly string[]): Promise<RunResult> {
  try {
    return await run(command, args);
  } catch (error) {
    throw new Error(
      `${command} could not be run (${String(error)}): install it (Debian: apt-get install -y cloud-init systemd)`,
    );
  }
}

function schema(path: string, flag = '--config-file'): Promise<RunResult> {
  return tool('cloud-init', ['schema', flag, path]);
}

/** The Python interpreter cloud-init runs on (it has PyYAML): from its shebang line. */
function cloudInitPython(): string {
  const first = readFileSync('/usr/bin/cloud-init', 'utf8').split('\n')[0] ?? '';
  const match = /^#!\s*(\S+)/.exec(first);
  if (match?.[1] === undefined) throw new Error('cannot find the python of /usr/bin/cloud-init');
  return match[1];
}

describe('cloud-init schema', () => {
  it('is cloud-init 22.4 or later', async () => {
    const result = await tool('cloud-init', ['--version']);
    expect(result.code).toBe(0);
    const match = /(\d+)\.(\d+)/.exec(result.stdout + result.stderr);
    expect(match).not.toBeNull();
    expect(Number(match?.[1]) * 100 + Number(match?.[2])).toBeGreaterThanOrEqual(2204);
  });

  for (const variant of VARIANTS) {
    it(`accepts the "${variant.name}" user-data without errors or deprecations`, async () => {
      const path = writeTemp(`${variant.name}.yaml`, generateCloudConfig(variant.options));
      const result = await schema(path);
      expect(result.stderr).toBe('');
      expect(result.stdout).toContain('Valid cloud-config');
      expect(result.code).toBe(0);
    });
  }

  it('accepts the short -c form too', async () => {
    const path = writeTemp('short.yaml', generateCloudConfig(VARIANTS[0]!.options));
    expect((await schema(path, '-c')).code).toBe(0);
  });

  describe('catches broken documents (so that the checks above mean something)', () => {
    const good = generateCloudConfig(VARIANTS[0]!.options);
    const broken: [string, string, RegExp][] = [
      // Unquoted, YAML 1.1 reads 0755 as the integer 493: the quoting is what makes it valid.
      ['unquoted permissions', good.replace('permissions: "0755"', 'permissions: 0755'), /permissions.*not of type 'string'/],
      ['no #cloud-config header', good.replace('#cloud-config\n', ''), /#cloud-config/],
      ['runcmd not a list', good.replace(/^runcmd:[\s\S]*$/m, 'runcmd: 5\n'), /runcmd/],
      ['lock_passwd not a boolean', good.replace('lock_passwd: true', 'lock_passwd: maybe'), /users/],
    ];
    for (const [name, text, error] of broken) {
      it(name, async () => {
        expect(text).not.toBe(good);
        const result = await schema(writeTemp('broken.yaml', text));
        expect(result.code).not.toBe(0);
        expect(result.stdout + result.stderr).toMatch(error);
      });
    }
  });
});

describe("cloud-init's PyYAML", () => {
  for (const variant of VARIANTS) {
    it(`reads the "${variant.name}" user-data exactly as intended`, async () => {
      const text = generateCloudConfig(variant.options);
      const path = writeTemp(`${variant.name}.yaml`, text);
      const result = await tool(cloudInitPython(), [
        '-c',
        'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding="utf-8"))))',
        path,
      ]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual(parseUserData(text));
    });
  }
});

describe('systemd-analyze verify', () => {
  function unitFor(content: string): string {
    const script = writeTemp('carapace-discovery.py', 'unused\n');
    chmodSync(script, 0o755);
    // The unit as generated, with the script at a temporary path (verify checks it exists).
    const unitDir = mkdtempSync(join(dir, 'unit-'));
    const unit = join(unitDir, 'carapace-discovery.service');
    writeFileSync(unit, content.split(DISCOVERY_PATHS.script).join(script));
    return unit;
  }

  it('accepts the discovery unit without a warning', async () => {
    const content = writtenFiles(generateCloudConfig(VARIANTS[0]!.options)).get(DISCOVERY_PATHS.unit)?.content ?? '';
    expect(content).toContain('[Service]');
    const result = await tool('systemd-analyze', ['verify', '--man=no', unitFor(content)]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('would report a broken unit', async () => {
    const content = writtenFiles(generateCloudConfig(VARIANTS[0]!.options)).get(DISCOVERY_PATHS.unit)?.content ?? '';
    const result = await tool('systemd-analyze', ['verify', '--man=no', unitFor(content.replace('Type=oneshot', 'Type=oneshto'))]);
    expect(result.stderr).toMatch(/oneshto/);
  });
});
