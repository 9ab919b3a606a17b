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
});
