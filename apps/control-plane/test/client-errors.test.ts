import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_HEADER_BYTES } from '../src/http/app.js';
import { Harness } from '@carapace/test-support/harness';

/** Sends raw bytes to the listening app and returns everything it answers until it closes. */
function raw(port: number, request: string): Promise<{ head: string; status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // the server may close while the request is still being written
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const at = text.indexOf('\r\n\r\n');
      const head = at < 0 ? text : text.slice(0, at);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ head: statusLine, status: Number(statusLine.split(' ')[1]), headers, body: at < 0 ? '' : text.slice(at + 4) });
    });
    // not ended here: a half-closed connection gets no answer; the server closes it (errors, `Connection: close`)
    socket.write(request);
  });
}

describe('errors of the HTTP parser carry the contract error body', () => {
  let h: Harness;
  let root: string;
  let port: number;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const address = h.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening on TCP');
    port = address.port;
  });
  afterAll(() => h.stop());

  const expectContractError = (res: Awaited<ReturnType<typeof raw>>, status: number, error: string) => {
    expect(res.status, res.head).toBe(status);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('private, no-store, no-cache');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(body).toEqual({ code: status, error, description: expect.any(String), message: body.description });
  };

  it('answers 431 RequestHeaderFieldsTooLarge to a query string over the limit', async () => {
    const res = await raw(port, `GET /v1/user/?filter=${'a'.repeat(MAX_HEADER_BYTES + 1024)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${root}\r\n\r\n`);
    expectContractError(res, 431, 'RequestHeaderFieldsTooLarge');
    expect(JSON.parse(res.body).description).toContain('too large');
  });

  it('answers 431 to headers over the limit', async () => {
    const res = await raw(port, `GET /v1/info/ HTTP/1.1\r\nHost: x\r\nX-Padding: ${'b'.repeat(MAX_HEADER_BYTES)}\r\n\r\n`);
    expectContractError(res, 431, 'RequestHeaderFieldsTooLarge');
  });

  it('answers 400 BadRequest to a malformed request', async () => {
    for (const request of ['NOT HTTP AT ALL\r\n\r\n', 'GET /v1/info/ HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 'GET /v1/info/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n']) {
      expectContractError(await raw(port, request), 400, 'BadRequest');
    }
  });

  it('takes a valid filter that is larger than Node’s default 16 KiB of headers once encoded', async () => {
    const filter = encodeURIComponent(JSON.stringify({ full_name: 'é'.repeat(5_000) }));
    expect(filter.length).toBeGreaterThan(16 * 1024);
    const res = await raw(port, `GET /v1/user/?filter=${filter} HTTP/1.1\r\nHost: x\r\nAuthorization: ${root}\r\nConnection: close\r\n\r\n`);
    expect(res.status, res.head).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
  });

  it('refuses a NUL character anywhere in the path, the query or the body, and only a NUL', async () => {
    const id = '4c4c4544-0042-3510-8052-b3c04f4e4d32';
    const get = (target: string) => raw(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${root}\r\nConnection: close\r\n\r\n`);
    const post = (target: string, body: string) =>
      raw(port, `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${root}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    const refused = async (res: Awaited<ReturnType<typeof raw>>, what: string) => {
      expectContractError(res, 400, 'BadRequest');
      expect(JSON.parse(res.body).description, what).toContain('NUL character');
    };
    await refused(await get('/v1/user/%00/'), 'a path parameter');
    await refused(await get(`/v1/user/${id.slice(0, 8)}%00${id.slice(8)}/`), 'inside a path parameter');
    await refused(await get('/v1/info/?x=%00'), 'a query value');
    await refused(await get('/v1/info/?x%00=1'), 'a query name');
    await refused(await get('/v1/user/?filter=%7B%22login%22%3A%22a%00%22%7D'), 'inside a filter');
    await refused(await post('/v1/user/', JSON.stringify({ login: 'a\u0000', email: 'a@example.com', full_name: 'A', role_id: null })), 'a body value');
    await refused(await post('/v1/user/', JSON.stringify({ login: 'a', email: 'a@example.com', full_name: 'A', role_id: null, nested: [{ 'k\u0000': 1 }] })), 'a nested body key');
    // The text "%00" (its percent sign encoded), and a path without any NUL: not refused for a NUL.
    const text = await get('/v1/info/?x=%2500');
    expect(text.status, text.body).toBe(200);
    const missing = await get(`/v1/user/${id}/`);
    expect(missing.status, missing.body).toBe(404);
    // A NUL that no HTTP client can send raw (Node's parser refuses it) is refused when it reaches the app some other way.
    const injected = await h.request('GET', '/v1/info/?x=a\u0000b');
    expect(injected.status, injected.body).toBe(400);
    expect(injected.body).toContain('NUL character');
  });
});
