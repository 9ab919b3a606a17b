import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, ServiceApiError, ServiceError } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { ScriptedRunner } from '@carapace/test-support/runner';
import { makePki, TlsProxy, type TestPki } from '@carapace/test-support/tls';

function causes(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = e.cause) parts.push(`${e.message} ${(e as { code?: string }).code ?? ''}`);
  return parts.join(' | ');
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${String(err)}`);
  return err;
}

describe('client: TLS options against a local HTTPS server with a test CA', () => {
  let cp: TestControlPlane;
  let dir: string;
  let pki: TestPki;
  let https: TlsProxy;
  let mutual: TlsProxy;
  const clients: Client[] = [];
  const make = (url: string, options: { verify?: boolean; certificateFile?: string | null; caFile?: string | null } = {}) => {
    const client = new Client({ url, login: 'root', password: ROOT_PASSWORD, ...options });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    cp = await TestControlPlane.start();
    dir = mkdtempSync(join(tmpdir(), 'carapace-tls-'));
    pki = makePki(dir);
    https = await TlsProxy.start(pki, cp.url);
    mutual = await TlsProxy.start(pki, cp.url, { requireClientCert: true });
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await https.stop();
    await mutual.stop();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('verifies the certificate by default: an unknown CA is a ServiceError', async () => {
    const err = await failure(make(https.url).getInfo());
    expect(err).not.toBeInstanceOf(ServiceApiError);
    expect(causes(err)).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify|self.signed/i);
  });

  it('verify: false accepts the certificate, and the whole API works through it', async () => {
    const client = make(https.url, { verify: false });
    expect((await client.getInfo()).version).toMatch(/^\d/);
    expect((await client.getUserSelf()).data.login).toBe('root');
    expect((await client.createCluster('over-tls')).data.name).toBe('over-tls');
  });

  it('caFile trusts the test CA with verification on', async () => {
    const client = make(https.url, { caFile: pki.caFile });
    expect((await client.getUserSelf()).data.login).toBe('root');
  });

  it('certificateFile presents a client certificate (certificate and key in one PEM file)', async () => {
    const refused = await failure(make(mutual.url, { caFile: pki.caFile }).getInfo());
    expect(refused).not.toBeInstanceOf(ServiceApiError);
    const stranger = await failure(make(mutual.url, { caFile: pki.caFile, certificateFile: pki.strangerBundleFile }).getInfo());
    expect(stranger).not.toBeInstanceOf(ServiceApiError);

    const client = make(mutual.url, { caFile: pki.caFile, certificateFile: pki.clientBundleFile });
    expect((await client.getUserSelf()).data.login).toBe('root');
    expect(mutual.clientNames).toContain('carapace-client');
    expect(mutual.clientNames).not.toContain('stranger');
    const unverified = make(mutual.url, { verify: false, certificateFile: pki.clientBundleFile });
    expect((await unverified.getInfo()).version).toMatch(/^\d/);
  });

  it('an unreadable certificate file is a ServiceError naming it', async () => {
    const err = await failure(make(https.url, { certificateFile: join(dir, 'missing.pem') }).getInfo());
    expect(err.message).toContain(`cannot read the client certificate file ${join(dir, 'missing.pem')}`);
  });

  it('streams a followed log through the TLS dispatcher', async () => {
    const client = make(mutual.url, { caFile: pki.caFile, certificateFile: pki.clientBundleFile });
    const serverId = await cp.addServer(3);
    const cluster = await client.createCluster('tls-follow');
    const config = await client.createPlaybookConfiguration('tls', cluster.id, 'hello_world', [serverId]);
    const execution = await client.createExecution(config.id, 1);
    const runner = new ScriptedRunner(cp);
    await runner.claim(execution.id);
    await runner.log(execution.id, 'first line\n');
    const chunks: string[] = [];
    const following = (async () => {
      for await (const text of client.followExecutionLog(execution.id)) chunks.push(text);
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await runner.log(execution.id, 'second line\n');
    await runner.finish(execution.id, 'completed');
    await following;
    expect(chunks.join('')).toBe('first line\nsecond line\n');
  });
});
