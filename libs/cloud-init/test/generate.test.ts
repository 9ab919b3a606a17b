import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DISCOVERY_PATHS,
  DISCOVERY_SCRIPT,
  DISCOVERY_UNIT_NAME,
  generateCloudConfig,
  generate_cloud_config,
} from '@carapace/cloud-init';
import { FIXTURES_DIR, GOLDEN_CA, PUBLIC_KEY, parseUserData, writtenFiles } from './helpers.js';
import { VARIANTS } from './variants.js';

/** Set UPDATE_GOLDEN=1 to rewrite the golden files after an intended change. */
const UPDATE = process.env.UPDATE_GOLDEN === '1';

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
    expect(doc.packages).toEqual(['python3', 'sudo']);
    expect(doc.package_update).toBe(true);
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

  it('noDiscovery keeps the user and packages and drops every discovery part', () => {
    const text = generateCloudConfig({ ...BASE, noDiscovery: true, caBundle: GOLDEN_CA });
    const doc = parseUserData(text);
    expect(Object.keys(doc)).toEqual(['users', 'package_update', 'packages']);
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
