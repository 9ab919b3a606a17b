import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRequirements, createLab, ensureImage, generateKeyPair, labResidue, sshExec } from './lab.js';
import { ansibleUserSeed, SEEDED_MARKER } from './seed-fixture.js';
import type { KeyPair, Lab, LabHost } from './lab.js';

/** The first run builds the image with debootstrap (a few minutes; another test file may be building it). */
const SETUP_TIMEOUT_MS = 40 * 60_000;

describe('lab: a host booted with a cloud-init NoCloud seed', () => {
  let dir = '';
  let key: KeyPair;
  let lab: Lab | undefined;

  const host = (): LabHost => {
    const h = lab?.hosts[0];
    if (!h) throw new Error('the lab was not created (see beforeAll)');
    return h;
  };

  beforeAll(async () => {
    expect(await checkRequirements(), 'the lab needs these on this machine').toEqual([]);
    dir = await mkdtemp(join(tmpdir(), 'carapace-lab-cloud-init-'));
    key = await generateKeyPair(dir);
    await ensureImage();
    const userData = ansibleUserSeed(key.publicKey);
    // No sshKey for root: the seed alone must make the host reachable.
    lab = await createLab({ hosts: 1, name: 'cloud-init-test', seeds: [{ userData }] });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await lab?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('runs cloud-init to completion at first boot', async () => {
    const r = await host().exec('cloud-init status --wait --long', { check: false, timeoutMs: 240_000 });
    expect(r.exitCode, `cloud-init status:\n${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^status: done$/m);
    expect(r.stdout).toMatch(/NoCloud/);
    const state = await host().exec('systemctl is-system-running --wait', { check: false, timeoutMs: 120_000 });
    const failed = (await host().exec('systemctl --failed --no-legend --plain', { check: false })).stdout;
    expect(state.stdout.trim(), `failed units:\n${failed}`).toBe('running');
  }, 300_000);

  it('created the user and ran runcmd', async () => {
    expect((await host().exec('id -un ansible')).stdout.trim()).toBe('ansible');
    expect((await host().exec(`cat ${SEEDED_MARKER.path}`)).stdout).toBe(SEEDED_MARKER.content);
    expect((await host().exec('hostname')).stdout.trim()).toBe(host().name);
  }, 60_000);

  it('accepts SSH as the seeded user (with sudo), and not as root', async () => {
    const r = await sshExec(host(), 'whoami && sudo -n whoami && hostname', { user: 'ansible', privateKeyPath: key.privateKeyPath });
    expect(r.stdout.trim().split('\n')).toEqual(['ansible', 'root', host().name]);
    const root = await sshExec(host(), 'true', { privateKeyPath: key.privateKeyPath, check: false });
    expect(root.exitCode).toBe(255);
  }, 60_000);

  it('is removed without residue', async () => {
    const machines = lab!.hosts.map((h) => h.machine);
    await lab!.destroy();
    lab = undefined;
    expect(await labResidue(machines)).toEqual([]);
  }, 120_000);
});
