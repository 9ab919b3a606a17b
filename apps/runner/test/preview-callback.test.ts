// Previews through the executor and the real carapace callback plugin: ansible-playbook in
// check mode with diffs (`checkMode`) against this machine (fixture playbook
// test/fixtures/executor/preview): each task's verdict (would change with its diff,
// unchanged, would fail, unknown), no diff of a no_log task, nothing changed on disk, no
// cleanup playbook; and `limit` (--limit) runs on the hosts named only.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnsibleRun } from '../src/executor/index.js';
import { fixture, HOST, localInventory, localSpec, RecordingSink, tempDir } from './fixtures/executor/executor-helpers.js';

let root = '';
let removeRoot: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  ({ dir: root, remove: removeRoot } = await tempDir('carapace-preview-'));
});

afterAll(async () => {
  await removeRoot();
});

describe('a preview (check mode) through the callback plugin', () => {
  it('tells per task: would change (with the diff), unchanged, would fail, unknown; never a no_log diff; changes nothing', async () => {
    const target = join(root, 'target');
    await mkdir(target);
    await writeFile(join(target, 'existing.conf'), '[global]\nfsid = 1234\n', { mode: 0o644 });
    await writeFile(join(target, 'same.conf'), 'unchanged\n', { mode: 0o644 });
    const before = (await readdir(target)).sort();
    const sink = new RecordingSink();
    const spec = localSpec(root, { configuration: { global_vars: { target_dir: target }, inventory: localInventory() }, checkMode: true });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('preview') }).result;
    expect(result.outcome, sink.text).toBe('completed');

    const verdicts = Object.fromEntries(sink.steps.map((s) => [s.name, s.preview]));
    expect(verdicts['write a new file']).toMatchObject({ status: 'would_change' });
    expect(verdicts['write a new file']?.diff).toContain('+fsid = 1234');
    expect(verdicts['rewrite an existing file']).toMatchObject({ status: 'would_change' });
    expect(verdicts['rewrite an existing file']?.diff).toMatch(/-fsid = 1234\n\+fsid = 5678\n\+mon host = 10\.0\.0\.1/);
    expect(verdicts['keep a file as it is']).toEqual({ status: 'unchanged' });
    // no_log: the verdict, never the content
    expect(verdicts['write a secret']?.status).toBe('would_change');
    expect(verdicts['write a secret']?.diff).toBeUndefined();
    expect(JSON.stringify(sink.steps)).not.toContain('SECRET-KEY-VALUE');
    expect(verdicts['run a command']).toMatchObject({ status: 'unknown' });
    expect(verdicts['run a command']?.why).toMatch(/check mode/i);
    expect(verdicts['ask a module that cannot tell']).toEqual({ status: 'unknown', why: 'the answer depends on the cluster, which a preview does not ask' });
    expect(verdicts['ask a module without check mode']).toMatchObject({ status: 'unknown' });
    expect(verdicts['ask a module without check mode']?.why).toMatch(/check mode/i);
    expect(verdicts['fail on purpose']).toEqual({ status: 'would_fail', why: 'the gate says no' });
    expect(sink.steps.find((s) => s.name === 'fail on purpose')?.ignored).toBe(true);
    expect(verdicts['skipped by a condition']?.status).toBe('unchanged');

    // nothing written, nothing touched, no cleanup run
    expect((await readdir(target)).sort()).toEqual(before);
    expect(await readFile(join(target, 'existing.conf'), 'utf8')).toBe('[global]\nfsid = 1234\n');
  });

  it('a real run of the same playbook carries no verdicts', async () => {
    const target = join(root, 'real');
    await mkdir(target);
    const sink = new RecordingSink();
    const spec = localSpec(root, { configuration: { global_vars: { target_dir: target }, inventory: localInventory() } });
    await startAnsibleRun(spec, sink, { contentDir: fixture('preview') }).result;
    expect(sink.steps.length).toBeGreaterThan(0);
    expect(sink.steps.every((s) => s.preview === undefined)).toBe(true);
    expect(await readFile(join(target, 'new.conf'), 'utf8')).toBe('[global]\nfsid = 1234\n');
  });

  it('limit runs on the hosts named only (--limit)', async () => {
    const target = join(root, 'limited');
    await mkdir(target);
    const inventory = localInventory();
    // a second host name for this machine, left out by the limit
    (inventory.fixture as { hosts: string[] }).hosts.push('localhost');
    ((inventory._meta as { hostvars: Record<string, unknown> }).hostvars).localhost = { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' };
    const sink = new RecordingSink();
    const spec = localSpec(root, { configuration: { global_vars: { target_dir: target }, inventory }, checkMode: true, limit: [HOST] });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('preview') }).result;
    expect(result.outcome, sink.text).toBe('completed');
    expect(new Set(sink.steps.map((s) => s.host))).toEqual(new Set([HOST]));
  });
});
