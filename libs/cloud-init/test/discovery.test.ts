// Runs the discovery script for real (python3, as the generated user-data installs it)
// against real HTTP and HTTPS servers on 127.0.0.1. The files come out of the generated
// YAML; only paths are rewritten (--config, --log, the CA file, DMI and machine-id).
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DISCOVERY_PATHS, generateCloudConfig } from '@carapace/cloud-init';
import type { CloudConfigOptions } from '@carapace/cloud-init';
import { PUBLIC_KEY, run, writtenFiles } from './helpers.js';
import type { RunResult } from './helpers.js';

const DMI_UUID = 'A1B2C3D4-E5F6-4A0B-8C1D-0123456789AB';

interface Received {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

/** A registration endpoint that records what it receives and answers from a script. */
class Endpoint {
  readonly received: Received[] = [];
  private readonly replies: Reply[];
  private readonly last: Reply;
  server: Server | undefined;

  constructor(replies: Reply[]) {
    this.replies = [...replies];
    this.last = replies.at(-1) ?? { status: 200 };
  }

  readonly handler = (request: IncomingMessage, response: ServerResponse): void => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      this.received.push({ method: request.method, url: request.url, headers: request.headers, body });
      const reply = this.replies.shift() ?? this.last;
      response.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers });
      response.end(reply.body ?? '{}');
    });
  };

  async listen(server: Server): Promise<number> {
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

let root = '';
let counter = 0;
const endpoints: Endpoint[] = [];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'carapace-discovery-'));
});
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
});
afterAll(() => {
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

async function httpEndpoint(replies: Reply[]): Promise<{ endpoint: Endpoint; url: string }> {
  const endpoint = new Endpoint(replies);
  endpoints.push(endpoint);
  const port = await endpoint.listen(createServer(endpoint.handler));
  return { endpoint, url: `http://127.0.0.1:${port}` };
}

/** A host: the files of the generated user-data, written under a fresh directory. */
interface Host {
  dir: string;
  config: string;
  log: string;
  script: string;
  dmi: string;
  machineId: string;
}

function install(options: CloudConfigOptions, configPatch: Record<string, unknown> = {}): Host {
  const dir = mkdtempSync(join(root, `host-${++counter}-`));
  const files = writtenFiles(generateCloudConfig(options));
  const place = (path: string): string => join(dir, path.split('/').at(-1) ?? 'file');
  for (const file of files.values()) {
    const target = place(file.path);
    writeFileSync(target, file.content);
    chmodSync(target, Number.parseInt(file.permissions ?? '0644', 8));
  }
  const config = place(DISCOVERY_PATHS.config);
  const parsed = JSON.parse(readFileSync(config, 'utf8')) as Record<string, unknown>;
  if (parsed.cafile !== undefined) parsed.cafile = place(DISCOVERY_PATHS.caBundle);
  writeFileSync(config, JSON.stringify({ ...parsed, ...configPatch }));
  const host = {
    dir,
    config,
    log: join(dir, 'discovery.log'),
    script: place(DISCOVERY_PATHS.script),
    dmi: join(dir, 'product_uuid'),
    machineId: join(dir, 'machine-id'),
  };
  writeFileSync(host.dmi, `${DMI_UUID}\n`);
  writeFileSync(host.machineId, '0123456789abcdef0123456789ABCDEF\n');
  return host;
}

/** Runs the installed script as the unit does: executed directly (shebang: python3). */
async function discover(host: Host): Promise<RunResult & { log: string; seconds: number }> {
  const started = performance.now();
  let result: RunResult;
  try {
    result = await run(host.script, ['--config', host.config, '--log', host.log], {
      env: { ...process.env, CARAPACE_DISCOVERY_DMI_PATH: host.dmi, CARAPACE_DISCOVERY_MACHINE_ID_PATH: host.machineId },
    });
  } catch (error) {
    throw new Error(`cannot run the discovery script with python3 (is python3 installed?): ${String(error)}`);
  }
  const log = existsSync(host.log) ? readFileSync(host.log, 'utf8') : '';
  return { ...result, log, seconds: (performance.now() - started) / 1000 };
}

function options(url: string, token: string, extra: Partial<CloudConfigOptions> = {}): CloudConfigOptions {
  return { url, serverDiscoveryToken: token, publicKey: PUBLIC_KEY, ...extra };
}

describe('discovery script over HTTP', () => {
  it('python3 is installed', async () => {
    const result = await run('python3', ['--version']);
    expect(result.code).toBe(0);
  });

  it('registers with the exact body and headers, and never logs the token', async () => {
    const token = 'tok-Registration-7f3a';
    const { endpoint, url } = await httpEndpoint([{ status: 200, body: '{"id":"x"}' }]);
    const host = install(options(`${url}/`, token, { username: 'ceph-deploy', timeout: 7 }));
    const result = await discover(host);
    expect(result.code).toBe(0);
    expect(endpoint.received).toHaveLength(1);
    const [request] = endpoint.received;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/v1/server/');
    expect(request?.headers.authorization).toBe(token);
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toBe(
      JSON.stringify({ id: DMI_UUID.toLowerCase(), host: '127.0.0.1', username: 'ceph-deploy' }),
    );
    expect(request?.headers['content-length']).toBe(String(Buffer.byteLength(request?.body ?? '')));
    expect(result.log).toMatch(/attempt 1: POST http:\/\/127\.0\.0\.1:\d+\/v1\/server\/ /);
    expect(result.log).toContain('registered (HTTP 200)');
    expect(result.stderr).toContain('registered (HTTP 200)');
    expect(result.log).not.toContain(token);
    expect(result.stderr).not.toContain(token);
  });

  it('retries after a 503, then succeeds, with a backoff of 0.5 to 1 s', async () => {
    const token = 'tok-Retry-503';
    const { endpoint, url } = await httpEndpoint([{ status: 503, body: '{"code":503}' }, { status: 200 }]);
    const result = await discover(install(options(url, token)));
    expect(result.code).toBe(0);
    expect(endpoint.received).toHaveLength(2);
    expect(endpoint.received[1]?.body).toBe(endpoint.received[0]?.body);
    expect(endpoint.received.map((request) => request.headers.authorization)).toEqual([token, token]);
    expect(result.log).toContain('attempt 1: HTTP 503, will retry');
    expect(result.log).toMatch(/retrying in (0\.[5-9]|1\.0)s/);
    expect(result.log).toContain('attempt 2: registered');
    expect(result.seconds).toBeGreaterThanOrEqual(0.5);
    expect(result.log).not.toContain(token);
  });

  it('honours Retry-After on a 429', async () => {
    const { endpoint, url } = await httpEndpoint([{ status: 429, headers: { 'Retry-After': '2' } }, { status: 200 }]);
    const result = await discover(install(options(url, 'tok-429')));
    expect(result.code).toBe(0);
    expect(endpoint.received).toHaveLength(2);
    expect(result.log).toContain('retrying in 2.0s');
    expect(result.seconds).toBeGreaterThanOrEqual(2);
  });

  it('does not retry a 403: exactly one request, exit 1, the echoed token masked', async () => {
    const token = 'tok-Wrong-403';
    const { endpoint, url } = await httpEndpoint([
      { status: 403, body: JSON.stringify({ code: 403, error: 'Forbidden', description: `bad token ${token}` }) },
      { status: 200 },
    ]);
    const result = await discover(install(options(url, token)));
    expect(result.code).toBe(1);
    expect(endpoint.received).toHaveLength(1);
    expect(result.log).toContain('HTTP 403, giving up (not retried)');
    expect(result.log).toContain('bad token <token>');
    expect(result.log).not.toContain(token);
    expect(result.stderr).not.toContain(token);
  });

  it('does not retry other 4xx either (400, 404)', async () => {
    for (const status of [400, 404]) {
      const { endpoint, url } = await httpEndpoint([{ status }, { status: 200 }]);
      const result = await discover(install(options(url, 'tok-4xx')));
      expect(result.code).toBe(1);
      expect(endpoint.received).toHaveLength(1);
    }
  });

  it('does not follow a redirect (the token would go with it)', async () => {
    const { endpoint: target, url: targetUrl } = await httpEndpoint([{ status: 200 }]);
    const { endpoint, url } = await httpEndpoint([{ status: 307, headers: { Location: `${targetUrl}/v1/server/` } }]);
    const result = await discover(install(options(url, 'tok-redirect')));
    expect(result.code).toBe(1);
    expect(endpoint.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
  });

  it('gives up at the deadline when the server keeps failing (exit 3)', async () => {
    const { endpoint, url } = await httpEndpoint([{ status: 500 }]);
    const result = await discover(install(options(url, 'tok-deadline', { retryDeadline: 2 })));
    expect(result.code).toBe(3);
    expect(endpoint.received.length).toBeGreaterThanOrEqual(2);
    expect(result.log).toMatch(/giving up after \d+ attempts: deadline of 2s reached/);
    expect(result.seconds).toBeLessThan(4);
  });

  it('retries connection errors until the deadline', async () => {
    // A port that was just free: nothing listens there.
    const { endpoint, url } = await httpEndpoint([]);
    await endpoint.close();
    const result = await discover(install(options(url, 'tok-refused', { retryDeadline: 2 })));
    expect(result.code).toBe(3);
    expect(result.log).toMatch(/attempt 1: cannot reach the control plane: ConnectionRefusedError/);
    expect(result.log).toMatch(/attempt 2: /);
  });

  it('caps the backoff at backoff_max', async () => {
    const { endpoint, url } = await httpEndpoint([{ status: 502 }]);
    const host = install(options(url, 'tok-cap', { retryDeadline: 3 }), { backoff_initial: 0.1, backoff_max: 0.2 });
    const result = await discover(host);
    expect(result.code).toBe(3);
    const delays = [...result.log.matchAll(/retrying in ([\d.]+)s/g)].map((match) => Number(match[1]));
    expect(delays.length).toBeGreaterThanOrEqual(5);
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(0.2);
    expect(endpoint.received.length).toBe(delays.length + 1);
  });
});

describe('discovery script: host id', () => {
  async function idFor(dmi: string | undefined, machineId: string | undefined): Promise<{ id?: string; result: RunResult & { log: string } }> {
    const { endpoint, url } = await httpEndpoint([{ status: 200 }]);
    const host = install(options(url, 'tok-id'));
    rmSync(host.dmi);
    rmSync(host.machineId);
    if (dmi !== undefined) writeFileSync(host.dmi, dmi);
    if (machineId !== undefined) writeFileSync(host.machineId, machineId);
    const result = await discover(host);
    const body = endpoint.received[0]?.body;
    return { id: body === undefined ? undefined : (JSON.parse(body) as { id: string }).id, result };
  }

  it('uses the DMI product UUID, in lower case', async () => {
    expect((await idFor(`${DMI_UUID}\n`, undefined)).id).toBe(DMI_UUID.toLowerCase());
  });

  it('falls back to /etc/machine-id formatted as a UUID when there is no DMI data', async () => {
    const { id, result } = await idFor(undefined, '0123456789ABCDEF0123456789abcdef\n');
    expect(id).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(result.log).toContain('no DMI product UUID at');
  });

  it('falls back to /etc/machine-id when the DMI UUID is a placeholder or garbage', async () => {
    for (const dmi of ['00000000-0000-0000-0000-000000000000\n', 'Not Settable\n', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF']) {
      expect((await idFor(dmi, 'fedcba9876543210fedcba9876543210\n')).id).toBe('fedcba98-7654-3210-fedc-ba9876543210');
    }
  });

  it('exits 2 without a request when there is no usable id', async () => {
    const { id, result } = await idFor(undefined, 'uninitialized\n');
    expect(id).toBeUndefined();
    expect(result.code).toBe(2);
    expect(result.log).toContain('no usable host id');
  });
});

describe('discovery script: configuration', () => {
  it('exits 2 on a missing or broken configuration, without logging the token', async () => {
    const { endpoint, url } = await httpEndpoint([{ status: 200 }]);
    const host = install(options(url, 'tok-config'));
    rmSync(host.config);
    expect((await discover(host)).code).toBe(2);
    writeFileSync(host.config, JSON.stringify({ url, token: 'tok-config', username: 'ansible', timeout: 'soon' }));
    const result = await discover(host);
    expect(result.code).toBe(2);
    expect(result.log).toContain("configuration key 'timeout' must be a positive number");
    expect(result.log).not.toContain('tok-config');
    expect(endpoint.received).toHaveLength(0);
  });
});

describe('discovery script over HTTPS', () => {
  let pki = '';
  let caPem = '';
  let otherCaPem = '';
  let key = '';
  let cert = '';

  async function openssl(args: string[]): Promise<void> {
    let result: RunResult;
    try {
      result = await run('openssl', args, { env: { ...process.env, OPENSSL_CONF: '/dev/null' } });
    } catch (error) {
      throw new Error(`openssl is required for these tests: ${String(error)}`);
    }
    if (result.code !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${result.stderr}`);
  }

  beforeAll(async () => {
    pki = mkdtempSync(join(root, 'pki-'));
    const at = (name: string): string => join(pki, name);
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    for (const name of ['ca', 'other-ca']) {
      await openssl([
        'req', '-x509', ...ec, '-keyout', at(`${name}.key`), '-out', at(`${name}.pem`), '-days', '2',
        '-subj', `/CN=Carapace test ${name}`,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
      ]);
    }
    await openssl(['req', '-new', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=127.0.0.1']);
    writeFileSync(
      at('server.ext'),
      [
        'subjectAltName=IP:127.0.0.1',
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature',
        'extendedKeyUsage=serverAuth',
        'subjectKeyIdentifier=hash',
        'authorityKeyIdentifier=keyid',
        '',
      ].join('\n'),
    );
    await openssl([
      'x509', '-req', '-in', at('server.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial',
      '-out', at('server.pem'), '-days', '2', '-extfile', at('server.ext'),
    ]);
    caPem = readFileSync(at('ca.pem'), 'utf8');
    otherCaPem = readFileSync(at('other-ca.pem'), 'utf8');
    key = readFileSync(at('server.key'), 'utf8');
    cert = readFileSync(at('server.pem'), 'utf8');
  });

  async function httpsEndpoint(replies: Reply[]): Promise<{ endpoint: Endpoint; url: string }> {
    const endpoint = new Endpoint(replies);
    endpoints.push(endpoint);
    const port = await endpoint.listen(createHttpsServer({ key, cert }, endpoint.handler));
    return { endpoint, url: `https://127.0.0.1:${port}` };
  }

  it('registers when the CA bundle from the user-data verifies the server', async () => {
    const token = 'tok-Tls-ok';
    const { endpoint, url } = await httpsEndpoint([{ status: 200 }]);
    const host = install(options(url, token, { caBundle: caPem }));
    const result = await discover(host);
    expect(result.code).toBe(0);
    expect(endpoint.received).toHaveLength(1);
    expect(endpoint.received[0]?.headers.authorization).toBe(token);
    expect(endpoint.received[0]?.body).toBe(
      JSON.stringify({ id: DMI_UUID.toLowerCase(), host: '127.0.0.1', username: 'ansible' }),
    );
    expect(result.log).not.toContain(token);
  });

  it('refuses a server whose certificate another CA signed: nothing is sent', async () => {
    const { endpoint, url } = await httpsEndpoint([{ status: 200 }]);
    const result = await discover(install(options(url, 'tok-Tls-other', { caBundle: otherCaPem, retryDeadline: 2 })));
    expect(result.code).toBe(3);
    expect(endpoint.received).toHaveLength(0);
    expect(result.log).toMatch(/CERTIFICATE_VERIFY_FAILED/);
    expect(result.log).not.toContain('tok-Tls-other');
  });

  it('refuses it too without a CA bundle (the system trust store does not know the test CA)', async () => {
    const { endpoint, url } = await httpsEndpoint([{ status: 200 }]);
    const result = await discover(install(options(url, 'tok-Tls-none', { retryDeadline: 2 })));
    expect(result.code).toBe(3);
    expect(endpoint.received).toHaveLength(0);
    expect(result.log).toMatch(/CERTIFICATE_VERIFY_FAILED/);
  });
});
