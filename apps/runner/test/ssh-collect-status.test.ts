// The remote side of a status collection: the script run on a monitor host (`ceph` as root,
// through `sudo -n` otherwise; --cluster and --connect-timeout; the first failure ends it),
// the reading of its framed output, and the reduction of `ceph mgr dump`. The whole
// collection over ssh2 against a real host is test/e2e/cluster-status.e2e.test.ts.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { collectStatus, reduceMgrDump, splitStatusOutput, statusScript, STATUS_COMMANDS } from '../src/ssh/index.js';

describe('status collection script', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-status-script-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the script with `sh -s` and a `ceph` of the test on PATH, as the monitor host would. */
  function run(ceph: string): { stdout: string; stderr: string } {
    writeFileSync(join(dir, 'ceph'), ceph);
    chmodSync(join(dir, 'ceph'), 0o755);
    const out = execFileSync('/bin/sh', ['-s'], { input: statusScript('ceph', 7), env: { PATH: `${dir}:/usr/bin:/bin` }, encoding: 'utf8' });
    return { stdout: out, stderr: '' };
  }

  it('runs every command with --cluster, --connect-timeout and -f json, framed with its exit status', () => {
    const { stdout } = run('#!/bin/sh\nprintf \'{"args": "%s"}\\n\' "$*"\n');
    const split = splitStatusOutput(stdout, '');
    expect('error' in split).toBe(false);
    const outputs = split as Record<string, string>;
    for (const [name, command] of STATUS_COMMANDS) {
      expect(JSON.parse(outputs[name] ?? '')).toEqual({ args: `--cluster ceph --connect-timeout 7 ${command} -f json` });
    }
  });

  it('stops at the first command that fails and says which, with what it printed on stderr', () => {
    const { stdout } = run('#!/bin/sh\ncase "$*" in *" df "*) echo "[errno 110] RADOS timed out (error connecting to the cluster)" >&2; exit 1;; esac\necho "{}"\n');
    expect(stdout).not.toContain('begin osd_tree');
    expect(splitStatusOutput(stdout, '[errno 110] RADOS timed out (error connecting to the cluster)\n')).toEqual({
      error: 'ceph df exited with 1: [errno 110] RADOS timed out (error connecting to the cluster)',
    });
  });

  it('says when the script did not run at all, with what the login shell said', () => {
    expect(splitStatusOutput('This account is currently not available.\n', '')).toEqual({ error: 'ceph status did not run: This account is currently not available.' });
  });

  it('refuses a Ceph cluster name that is not a name', () => {
    expect(() => statusScript('ceph; rm -rf /', 10)).toThrow(RangeError);
  });

  it('runs ceph through sudo -n when the login is not root', () => {
    const script = statusScript('ceph', 10);
    expect(script).toContain('if [ "$(id -u)" = 0 ]; then S=; else S="sudo -n"; fi');
    expect(script).toContain('$S ceph --cluster ceph --connect-timeout 10 "$@" -f json </dev/null');
  });

  it('reduces a manager dump to the names', () => {
    const dump = JSON.stringify({ active_name: 'a', available: true, standbys: [{ name: 'b', available_modules: [{ name: 'x', module_options: {} }] }], available_modules: [{ name: 'y' }] });
    expect(JSON.parse(reduceMgrDump(dump))).toEqual({ active_name: 'a', available: true, standbys: [{ name: 'b' }] });
    expect(reduceMgrDump('not json')).toBe('not json');
  });

  it('tries no monitor without a recorded host key, and says why for each', async () => {
    const got = await collectStatus(
      [
        { address: '192.0.2.1', username: 'ansible', expectedHostKey: null },
        { address: '192.0.2.2', username: 'ansible', expectedHostKey: null },
      ],
      { privateKey: 'unused', timeoutMs: 1000, maxOutputBytes: 1024 },
    );
    expect(got).toMatchObject({
      ok: false,
      monitor: '192.0.2.2',
      error: '192.0.2.1: no host key is recorded for this server; 192.0.2.2: no host key is recorded for this server',
    });
    expect(await collectStatus([], { privateKey: 'unused', timeoutMs: 1000, maxOutputBytes: 1024 })).toMatchObject({ ok: false, error: 'the cluster has no monitor host to ask' });
  });
});
