// The files a run hands back (carapace_artifacts_dir → RunResult.artifacts → RunArtifact
// events): the bounds of collectArtifacts, and real ansible-playbook runs against this
// machine (fixture playbook test/fixtures/executor/artifacts).
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ARTIFACT_LIMITS } from '@carapace/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectArtifacts, startAnsibleRun } from '../src/executor/index.js';
import { fixture, localInventory, localSpec, RecordingSink, tempDir } from './fixtures/executor/executor-helpers.js';

let root = '';
let removeRoot: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  ({ dir: root, remove: removeRoot } = await tempDir('carapace-artifacts-'));
});

afterAll(async () => {
  await removeRoot();
});

async function dirWith(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(join(root, 'dir-'));
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  return dir;
}

async function problemOf(dir: string): Promise<string> {
  const collected = await collectArtifacts(dir);
  if (!('problem' in collected)) throw new Error(`expected a refusal, got ${collected.artifacts.length} files`);
  return collected.problem;
}

describe('collectArtifacts', () => {
  it('reads every file, sorted by name, as UTF-8 text', async () => {
    const dir = await dirWith({
      'ceph.conf': '[global]\n\tfsid = x\n',
      'ceph.client.cinder.keyring': '[client.cinder]\n\tkey = K\n',
      'utf8.txt': 'ünïcødé ✓ 🎉',
      empty: '',
    });
    expect(await collectArtifacts(dir)).toEqual({
      artifacts: [
        { name: 'ceph.client.cinder.keyring', content: '[client.cinder]\n\tkey = K\n' },
        { name: 'ceph.conf', content: '[global]\n\tfsid = x\n' },
        { name: 'empty', content: '' },
        { name: 'utf8.txt', content: 'ünïcødé ✓ 🎉' },
      ],
    });
    expect(await collectArtifacts(await dirWith({}))).toEqual({ artifacts: [] });
  });

  it(`takes ${ARTIFACT_LIMITS.maxFiles} files of ${ARTIFACT_LIMITS.maxBytes} bytes, and refuses one more of either`, async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < ARTIFACT_LIMITS.maxFiles; i++) files[`f${String(i).padStart(2, '0')}`] = 'x'.repeat(ARTIFACT_LIMITS.maxBytes);
    const full = await dirWith(files);
    const collected = await collectArtifacts(full);
    expect('artifacts' in collected && collected.artifacts.length).toBe(ARTIFACT_LIMITS.maxFiles);
    await writeFile(join(full, 'one-more'), '');
    expect(await problemOf(full)).toBe(`the run left ${ARTIFACT_LIMITS.maxFiles + 1} files for the control plane, more than ${ARTIFACT_LIMITS.maxFiles}`);
    // bytes, not characters: 3 bytes each
    const big = await dirWith({ big: '✓'.repeat(ARTIFACT_LIMITS.maxBytes / 3 + 1) });
    expect(await problemOf(big)).toMatch(/^big has 65538 bytes, more than 65536$/);
  });

  it('refuses names that are not plain, links, directories and text that is not UTF-8', async () => {
    for (const name of ['.hidden', '-dash', 'with space', 'semi;colon', 'é', 'a'.repeat(129)]) {
      expect(await problemOf(await dirWith({ [name]: 'x' })), name).toMatch(/^the file name .* is not allowed/);
    }
    expect(await collectArtifacts(await dirWith({ [`a${'b'.repeat(127)}`]: 'x' }))).toMatchObject({ artifacts: [{ content: 'x' }] });
    const link = await dirWith({});
    await symlink('/etc/passwd', join(link, 'passwd'));
    expect(await problemOf(link)).toBe('passwd is not a regular file');
    const sub = await dirWith({});
    await mkdir(join(sub, 'sub'));
    expect(await problemOf(sub)).toBe('sub is not a regular file');
    expect(await problemOf(await dirWith({ bin: Buffer.from([0x41, 0xff, 0xfe, 0x42]) }))).toBe('bin is not UTF-8 text');
    expect(await problemOf(join(root, 'missing'))).toMatch(/^cannot read the artifacts directory: ENOENT/);
  });
});

describe('a run hands files back', () => {
  const SECRET = 'AQBRl0FmAAAAABAAm5FcwzNs3C3ey7Xo1ZgY2A==';
  const files = { 'ceph.conf': '[global]\n\tfsid = f\n', 'ceph.client.cinder.keyring': `[client.cinder]\n\tkey = ${SECRET}\n` };

  it('that the playbook fetched into carapace_artifacts_dir: on completion, sorted, and never in the log or the steps', async () => {
    const sink = new RecordingSink();
    const spec = localSpec(root, { configuration: { global_vars: { artifact_files: files }, inventory: localInventory() } });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('artifacts'), keepWorkDir: true }).result;
    expect(result.outcome, sink.text).toBe('completed');
    expect(result.artifacts).toEqual([
      { name: 'ceph.client.cinder.keyring', content: files['ceph.client.cinder.keyring'] },
      { name: 'ceph.conf', content: files['ceph.conf'] },
    ]);
    expect(sink.text).not.toContain(SECRET);
    expect(JSON.stringify(sink.steps)).not.toContain(SECRET);
    // the runner's own variable comes after the configuration's vars.json
    const dir = join(root, spec.executionId);
    expect(JSON.parse(await readFile(join(dir, 'runner-vars.json'), 'utf8'))).toEqual({ carapace_artifacts_dir: { __ansible_unsafe: join(dir, 'artifacts') } });
    await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('none when the run fails or leaves nothing', async () => {
    const failing = localSpec(root, { configuration: { global_vars: { artifact_files: files, artifact_fail: true }, inventory: localInventory() } });
    const failed = await startAnsibleRun(failing, new RecordingSink(), { contentDir: fixture('artifacts') }).result;
    expect(failed.outcome).toBe('failed');
    expect(failed.artifacts).toBeUndefined();
    const empty = localSpec(root, { configuration: { global_vars: {}, inventory: localInventory() } });
    const nothing = await startAnsibleRun(empty, new RecordingSink(), { contentDir: fixture('artifacts') }).result;
    expect(nothing.outcome).toBe('completed');
    expect(nothing.artifacts).toBeUndefined();
  }, 120_000);

  it('fails the run, with the reason, when what it left breaks the bounds', async () => {
    const sink = new RecordingSink();
    const spec = localSpec(root, {
      configuration: { global_vars: { artifact_files: files, artifact_script: 'ln -s /etc/shadow shadow' }, inventory: localInventory() },
    });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('artifacts') }).result;
    expect(result.outcome).toBe('failed');
    expect(result.reason).toBe('the files the run left for the control plane are refused: shadow is not a regular file');
    expect(result.artifacts).toBeUndefined();
    expect(sink.text).toContain('[carapace runner] the files the run left for the control plane are refused: shadow is not a regular file');
  }, 120_000);

  it('in a directory no configuration can choose: setting carapace_artifacts_dir is refused', async () => {
    for (const configuration of [
      { global_vars: { carapace_artifacts_dir: '/etc' }, inventory: localInventory() },
      { global_vars: {}, inventory: localInventory({ carapace_artifacts_dir: '/etc' }) },
    ]) {
      const result = await startAnsibleRun(localSpec(root, { configuration }), new RecordingSink(), { contentDir: fixture('artifacts') }).result;
      expect(result.outcome).toBe('failed');
      expect(result.reason).toMatch(/^cannot prepare the run: refused to run: .*carapace_artifacts_dir.*the runner sets it itself/);
    }
  });
});
