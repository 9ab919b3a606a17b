import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateCloudConfig, generate_cloud_config } from '@carapace/cloud-init';
import type { CloudConfigOptions } from '@carapace/cloud-init';
import { GOLDEN_CA, PUBLIC_KEY, parseUserData } from './helpers.js';

const BASE: CloudConfigOptions = { url: 'http://10.77.0.1:8080', serverDiscoveryToken: 'secret-token-xyz', publicKey: PUBLIC_KEY };

function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** A fresh ed25519 key in OpenSSH format, built from node:crypto. */
function freshEd25519(comment: string): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return `ssh-ed25519 ${Buffer.concat([sshString('ssh-ed25519'), sshString(raw)]).toString('base64')} ${comment}`;
}

/** Calls the generator with one option replaced, expecting a TypeError that matches. */
function rejects(patch: Record<string, unknown>, message: RegExp): void {
  expect(() => generateCloudConfig({ ...BASE, ...patch })).toThrow(TypeError);
  expect(() => generateCloudConfig({ ...BASE, ...patch })).toThrow(message);
}

describe('input validation', () => {
  it('accepts good inputs and normalises them', () => {
    const key = freshEd25519('someone@host');
    const doc = parseUserData(generateCloudConfig({ ...BASE, url: 'HTTPS://CP.example.com:443/', publicKey: `${key}\n` }));
    expect((doc.users as { ssh_authorized_keys: string[] }[])[0]?.ssh_authorized_keys).toEqual([key]);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' });
    const rsaKey = `ssh-rsa ${Buffer.concat([
      sshString('ssh-rsa'),
      sshString(Buffer.concat([Buffer.from([0]), Buffer.from(rsa.e ?? '', 'base64url')])),
      sshString(Buffer.concat([Buffer.from([0]), Buffer.from(rsa.n ?? '', 'base64url')])),
    ]).toString('base64')}`;
    expect(() => generateCloudConfig({ ...BASE, publicKey: rsaKey })).not.toThrow();
    for (const username of ['ansible', '_svc', 'ceph-deploy', 'a1_b-2', 'x'.repeat(32)]) {
      expect(() => generateCloudConfig({ ...BASE, username })).not.toThrow();
    }
  });

  it('rejects bad URLs', () => {
    for (const url of [
      'ftp://cp.example.com',
      'cp.example.com',
      'http://',
      'http://cp.example.com/api',
      'http://cp.example.com//',
      'http://cp.example.com/?a=1',
      'http://cp.example.com#x',
      'http://user:pw@cp.example.com',
      ' http://cp.example.com',
      'http://cp.example.com:99999',
      'http://cp .example.com',
    ]) {
      rejects({ url }, /option "url"/);
    }
    rejects({ url: 42 }, /option "url" must be a string/);
    rejects({ url: undefined }, /option "url" must be a string/);
  });

  it('rejects bad tokens without echoing them', () => {
    for (const serverDiscoveryToken of ['', ' padded', 'padded ', 'line\nbreak', 'tab\there', 'nön-ascii', 7, null]) {
      rejects({ serverDiscoveryToken }, /option "serverDiscoveryToken"/);
    }
    let message = '';
    try {
      generateCloudConfig({ ...BASE, serverDiscoveryToken: 'TOP-SECRET\n' });
    } catch (error) {
      message = String(error);
    }
    expect(message).toMatch(/option "serverDiscoveryToken"/);
    expect(message).not.toContain('TOP-SECRET');
  });

  it('rejects things that are not an OpenSSH public key', () => {
    const good = freshEd25519('c');
    const blob = good.split(' ')[1] ?? '';
    for (const publicKey of [
      '',
      'not a key',
      '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----',
      `ssh-rsa ${blob}`, // blob says ssh-ed25519
      `ssh-ed25519 ${blob.slice(0, -4)}`, // truncated
      `ssh-ed25519 ${blob}!`,
      `ssh-ed25519 ${Buffer.concat([sshString('ssh-ed25519')]).toString('base64')}`, // no key material
      `ssh-ed25519 ${blob} c\nssh-ed25519 ${blob} d`,
      `ecdsa-sha2-nistp999 ${blob}`,
      `ssh-ed25519 ${blob} bad\x07comment`,
    ]) {
      rejects({ publicKey }, /option "publicKey"/);
    }
    rejects({ publicKey: ['ssh-ed25519'] }, /option "publicKey" must be a string/);
  });

  it('rejects invalid user names', () => {
    for (const username of ['', 'Ansible', '1user', '-user', 'us er', 'user$', 'user.name', 'x'.repeat(33), 'ünï', 5]) {
      rejects({ username }, /option "username"/);
    }
  });

  it('rejects timeouts and deadlines that are not positive integers', () => {
    for (const value of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '20', null]) {
      rejects({ timeout: value }, /option "timeout" must be a positive integer/);
      rejects({ retryDeadline: value }, /option "retryDeadline" must be a positive integer/);
    }
  });

  it('rejects a non-boolean noDiscovery', () => {
    for (const value of ['true', 1, null]) rejects({ noDiscovery: value }, /option "noDiscovery" must be a boolean/);
  });

  it('rejects CA bundles that are not PEM certificates, or carry a private key', () => {
    const keyPem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    rejects({ caBundle: '' }, /option "caBundle" must contain at least one/);
    rejects({ caBundle: 'hello' }, /option "caBundle" must contain at least one/);
    rejects({ caBundle: `${GOLDEN_CA}${keyPem}` }, /option "caBundle" contains a private key/);
    rejects({ caBundle: `junk\n${GOLDEN_CA}` }, /option "caBundle" must contain only PEM certificates/);
    rejects(
      { caBundle: '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n' },
      /option "caBundle" certificate #1 cannot be parsed/,
    );
    rejects({ caBundle: 12 }, /option "caBundle" must be a string/);
    // Two certificates, CRLF line ends: accepted and normalised.
    expect(() => generateCloudConfig({ ...BASE, caBundle: `${GOLDEN_CA}\r\n${GOLDEN_CA}`.replace(/\n/g, '\r\n') })).not.toThrow();
  });

  it('rejects unknown options and a missing options object', () => {
    expect(() => generateCloudConfig({ ...BASE, server_discovery_token: 'x' } as CloudConfigOptions)).toThrow(
      /generateCloudConfig: unknown option\(s\) "server_discovery_token"/,
    );
    expect(() => generateCloudConfig(null as unknown as CloudConfigOptions)).toThrow(TypeError);
    expect(() => generateCloudConfig('http://x' as unknown as CloudConfigOptions)).toThrow(TypeError);
  });

  it('generate_cloud_config names the snake_case options in its errors', () => {
    const snake = { url: 'http://10.77.0.1', server_discovery_token: 't', public_key: PUBLIC_KEY };
    expect(() => generate_cloud_config({ ...snake, server_discovery_token: '' })).toThrow(/option "server_discovery_token"/);
    expect(() => generate_cloud_config({ ...snake, public_key: 'x' })).toThrow(/option "public_key"/);
    expect(() => generate_cloud_config({ ...snake, no_discovery: 'yes' as unknown as boolean })).toThrow(/option "no_discovery"/);
    expect(() => generate_cloud_config({ ...snake, ca_bundle: 'x' })).toThrow(/option "ca_bundle"/);
    expect(() => generate_cloud_config({ ...snake, retry_deadline: 0 })).toThrow(/option "retry_deadline"/);
    expect(() => generate_cloud_config({ ...snake, publicKey: PUBLIC_KEY } as never)).toThrow(/unknown option\(s\) "publicKey"/);
  });
});
