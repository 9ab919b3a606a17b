import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DISCOVERY_PATHS,
  DISCOVERY_SCRIPT,
  DISCOVERY_UNIT_NAME,
  INSTALL_MISSING_SCRIPT,
  generateCloudConfig,
  generate_cloud_config,
} from '@carapace/cloud-init';
import { FIXTURES_DIR, GOLDEN_CA, PUBLIC_KEY, parseUserData, run, writtenFiles } from './helpers.js';
import { VARIANTS } from './variants.js';

/** Set UPDATE_GOLDEN=1 to rewrite the golden files after an intended change. */
const UPDATE = process.env.UPDATE_GOLDEN === '1';

/** The first runcmd step: python3 and sudo installed only where missing. */
const INSTALL_STEP = ['sh', '-c', INSTALL_MISSING_SCRIPT, 'carapace-packages', 'python3', 'sudo'];

const BASE = { url: 'http://10.77.0.1:8080', serverDiscoveryToken: 'discovery-token-0123', publicKey: PUBLIC_KEY };

describe('generateCloudConfig: golden files', () => {
  for (const variant of VARIANTS) {
    it(`matches test/fixtures/${variant.name}.yaml`, () => {
      const text = generateCloudConfig(variant.options);
      const path = join(FIXTURES_DIR, `${variant.name}.yaml`);
      if (UPDATE) writeFileSync(path, text);
      expect(text).toBe(readFileSync(path, 'utf8'));
    });
  }
});

describe('generateCloudConfig: structure', () => {
  it('starts with #cloud-config and is deterministic', () => {
    const text = generateCloudConfig(BASE);
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    expect(generateCloudConfig(BASE)).toBe(text);
  });

  it('creates the user with passwordless sudo, bash, a locked password and the key', () => {
    const doc = parseUserData(generateCloudConfig(BASE));
    expect(doc.users).toEqual([
      {
        name: 'ansible',
        gecos: 'Carapace automation',
        shell: '/bin/bash',
        lock_passwd: true,
        sudo: 'ALL=(ALL) NOPASSWD:ALL',
        ssh_authorized_keys: [PUBLIC_KEY],
      },
    ]);
    // Never cloud-init's package_update/packages: they call apt-get even when nothing is missing.
    expect(doc).not.toHaveProperty('packages');
    expect(doc).not.toHaveProperty('package_update');
    expect((doc.runcmd as unknown[])[0]).toEqual(INSTALL_STEP);
  });

  it('writes the discovery files with their modes, and enables and starts the unit', () => {
    const text = generateCloudConfig(BASE);
    const doc = parseUserData(text);
    const files = writtenFiles(text);
    expect([...files.keys()]).toEqual([DISCOVERY_PATHS.script, DISCOVERY_PATHS.config, DISCOVERY_PATHS.unit]);
    for (const file of files.values()) expect(file.owner).toBe('root:root');

    const script = files.get(DISCOVERY_PATHS.script);
    expect(script?.permissions).toBe('0755');
    expect(script?.content).toBe(DISCOVERY_SCRIPT);

    const config = files.get(DISCOVERY_PATHS.config);
    expect(config?.permissions).toBe('0600');
    expect(JSON.parse(config?.content ?? '')).toEqual({
      url: 'http://10.77.0.1:8080',
      token: 'discovery-token-0123',
      username: 'ansible',
      timeout: 20,
      deadline: 1800,
    });

    const unit = files.get(DISCOVERY_PATHS.unit);
    expect(unit?.permissions).toBe('0644');
    const lines = (unit?.content ?? '').split('\n');
    expect(lines).toContain('Type=oneshot');
    expect(lines).toContain('Wants=network-online.target');
    expect(lines.find((line) => line.startsWith('After='))?.split(/[= ]/)).toContain('network-online.target');
    expect(lines).toContain('WantedBy=multi-user.target');
    expect(lines).toContain(
      `ExecStart=${DISCOVERY_PATHS.script} --config ${DISCOVERY_PATHS.config} --log ${DISCOVERY_PATHS.log}`,
    );
    expect(text).not.toContain('rc.local');

    expect(doc.runcmd).toEqual([
      INSTALL_STEP,
      ['systemctl', 'daemon-reload'],
      ['systemctl', 'enable', DISCOVERY_UNIT_NAME],
      ['systemctl', 'start', '--no-block', DISCOVERY_UNIT_NAME],
    ]);
  });

  it('the token appears only in the 0600 configuration file', () => {
    const token = 'only-in-the-private-file-42';
    const text = generateCloudConfig({ ...BASE, serverDiscoveryToken: token });
    const files = writtenFiles(text);
    expect(text.split(token)).toHaveLength(2);
    expect(files.get(DISCOVERY_PATHS.config)?.content).toContain(token);
  });

  it('writes the CA bundle and points the configuration at it', () => {
    const text = generateCloudConfig({ ...BASE, url: 'https://cp.example.com/', caBundle: GOLDEN_CA });
    const files = writtenFiles(text);
    expect(files.get(DISCOVERY_PATHS.caBundle)).toEqual({
      path: DISCOVERY_PATHS.caBundle,
      owner: 'root:root',
      permissions: '0644',
      content: GOLDEN_CA,
    });
    const config = JSON.parse(files.get(DISCOVERY_PATHS.config)?.content ?? '') as Record<string, unknown>;
    expect(config.url).toBe('https://cp.example.com');
    expect(config.cafile).toBe(DISCOVERY_PATHS.caBundle);
  });

  it('null or absent caBundle means no CA file', () => {
    for (const caBundle of [undefined, null]) {
      const files = writtenFiles(generateCloudConfig({ ...BASE, caBundle }));
      expect(files.has(DISCOVERY_PATHS.caBundle)).toBe(false);
      expect(JSON.parse(files.get(DISCOVERY_PATHS.config)?.content ?? '')).not.toHaveProperty('cafile');
    }
  });

  it('noDiscovery keeps the user and the install step and drops every discovery part', () => {
    const text = generateCloudConfig({ ...BASE, noDiscovery: true, caBundle: GOLDEN_CA });
    const doc = parseUserData(text);
    expect(Object.keys(doc)).toEqual(['users', 'runcmd']);
    expect(doc.runcmd).toEqual([INSTALL_STEP]);
    expect(text).not.toContain(BASE.serverDiscoveryToken);
    expect(text).not.toContain('carapace-discovery');
  });

  it('quotes values that YAML 1.1 would misread', () => {
    const variant = VARIANTS.find((entry) => entry.name === 'tls-ca-bundle');
    const text = generateCloudConfig(variant!.options);
    const doc = parseUserData(text);
    const users = doc.users as { name: unknown }[];
    expect(users[0]?.name).toBe('on');
    const config = JSON.parse(writtenFiles(text).get(DISCOVERY_PATHS.config)?.content ?? '') as Record<string, unknown>;
    expect(config.token).toBe(variant!.options.serverDiscoveryToken);
    expect(config.timeout).toBe(5);
    expect(config.deadline).toBe(600);
    expect(config.url).toBe('https://carapace.example.com:8443');
  });
});

describe('the install step, run by sh as cloud-init runs it', () => {
  // A PATH holding only the commands given: no apt-get, dnf or yum on it, so a step that
  // called a package manager could not succeed.
  const dir = mkdtempSync(join(tmpdir(), 'carapace-cloud-init-install-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const which = (command: string) => execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim();
  symlinkSync(which('python3'), join(dir, 'python3'));
  symlinkSync(which('sh'), join(dir, 'sh'));
  const step = (parseUserData(generateCloudConfig(BASE)).runcmd as string[][])[0] ?? [];
  const runStep = (names: string[]) => run('/bin/sh', [...step.slice(1, 4), ...names], { env: { PATH: dir } });

  it('does nothing, and calls no package manager, when every command is there', async () => {
    const result = await runStep(['python3', 'sh']);
    expect(result).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it('tries to install only what is missing, and fails naming it when it cannot', async () => {
    expect(step.slice(4)).toEqual(['python3', 'sudo']);
    const result = await runStep(step.slice(4));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('carapace: installing sudo (not on this host)\ncarapace: could not install sudo: the discovery script and Ansible need them\n');
  });
});

describe('generate_cloud_config (snake_case alias)', () => {
  it('gives the same output as generateCloudConfig for the same options', () => {
    expect(generate_cloud_config({ url: BASE.url, server_discovery_token: BASE.serverDiscoveryToken, public_key: PUBLIC_KEY })).toBe(
      generateCloudConfig(BASE),
    );
    expect(
      generate_cloud_config({
        url: 'https://cp.example.com',
        server_discovery_token: 't',
        public_key: PUBLIC_KEY,
        username: 'deploy',
        timeout: 7,
        no_discovery: false,
        ca_bundle: GOLDEN_CA,
        retry_deadline: 60,
      }),
    ).toBe(
      generateCloudConfig({
        url: 'https://cp.example.com',
        serverDiscoveryToken: 't',
        publicKey: PUBLIC_KEY,
        username: 'deploy',
        timeout: 7,
        noDiscovery: false,
        caBundle: GOLDEN_CA,
        retryDeadline: 60,
      }),
    );
    expect(generate_cloud_config({ url: BASE.url, server_discovery_token: 't', public_key: PUBLIC_KEY, no_discovery: true })).toBe(
      generateCloudConfig({ ...BASE, serverDiscoveryToken: 't', noDiscovery: true }),
    );
  });
});
