import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GENERATE_COMMAND, GENERATED, gatesOf, ROOT } from './reference.js';

describe('the generated references of docs/reference/', () => {
  for (const [path, render] of GENERATED) {
    it(`${path} is up to date`, () => {
      let committed = '';
      try {
        committed = readFileSync(join(ROOT, path), 'utf8');
      } catch {
        // missing: the comparison below says so
      }
      expect(committed === render(), `${path} is out of date: run ${GENERATE_COMMAND} and commit it`).toBe(true);
    });
  }

  it('finds the gates the rolling and removing playbooks ask', () => {
    expect(gatesOf('upgrade_ceph')).toEqual(expect.arrayContaining(['ceph mon ok-to-stop', 'ceph osd ok-to-stop']));
    expect(gatesOf('remove_osd')).toContain('ceph osd safe-to-destroy');
    expect(gatesOf('add_mon')).toContain('ceph mon ok-to-add-offline');
    expect(gatesOf('add_mon')).not.toContain('ceph mon ok-to-rm');
    expect(gatesOf('remove_mon')).toContain('ceph mon ok-to-rm');
    expect(gatesOf('hello_world')).toEqual([]);
  });
});
