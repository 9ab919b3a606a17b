import { Client, ServiceApiError, ServiceError } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { TinyServer, closedPortUrl } from '@carapace/test-support/tiny-servers';

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${String(err)}`);
  return err;
}

describe('client: ServiceError for transport failures', () => {
  const servers: TinyServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop();
  });

  it('an unreachable API: ServiceError wrapping the connection error', async () => {
    const client = new Client({ url: await closedPortUrl(), login: 'root', password: 'x' });
    const err = await failure(client.getInfo());
    expect(err).not.toBeInstanceOf(ServiceApiError);
    expect(err.message).toMatch(/^GET \/v1\/info\/ failed: .*ECONNREFUSED/);
    expect(err.cause).toBeInstanceOf(TypeError);
    expect((err.cause as Error & { cause: { code: string } }).cause.code).toBe('ECONNREFUSED');
    const login = await failure(client.getClusters());
    expect(login.message).toMatch(/^POST \/v1\/auth\/ failed/);
  });

  it('an answer that is not JSON: ServiceError wrapping the parse error', async () => {
    const garbage = await TinyServer.start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"version": "1.0", "time": {');
    });
    servers.push(garbage);
    const err = await failure(new Client({ url: garbage.url, login: 'root', password: 'x' }).getInfo());
    expect(err).not.toBeInstanceOf(ServiceApiError);
    expect(err.cause).toBeInstanceOf(SyntaxError);
    expect(err.message).toContain('the answer of GET /v1/info/ is not JSON');
  });

  it('a body cut short: ServiceError', async () => {
    const cut = await TinyServer.start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"version"');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    servers.push(cut);
    const err = await failure(new Client({ url: cut.url, login: 'root', password: 'x' }).getInfo());
    expect(err).not.toBeInstanceOf(ServiceApiError);
    expect(err.cause).toBeDefined();
  });

  it('no answer within the timeout: ServiceError wrapping a TimeoutError; a call may set its own limit', async () => {
    const silent = await TinyServer.start(() => undefined);
    servers.push(silent);
    const started = Date.now();
    const err = await failure(new Client({ url: silent.url, login: 'root', password: 'x', timeout: 200 }).getInfo());
    expect(Date.now() - started).toBeLessThan(5000);
    expect(err.message).toBe('GET /v1/info/ timed out after 200 ms');
    expect((err.cause as Error).name).toBe('TimeoutError');
    const own = await failure(new Client({ url: silent.url, login: 'root', password: 'x' }).getInfo({ timeout: 100 }));
    expect(own.message).toBe('GET /v1/info/ timed out after 100 ms');
  });

  it('an aborted call: ServiceError with the abort reason as cause', async () => {
    const silent = await TinyServer.start(() => undefined);
    servers.push(silent);
    const controller = new AbortController();
    const pending = new Client({ url: silent.url, login: 'root', password: 'x' }).getInfo({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user pressed stop')), 50);
    const err = await failure(pending);
    expect(err.message).toBe('GET /v1/info/ was aborted');
    expect((err.cause as Error).message).toBe('user pressed stop');
  });

  it('an error answer that is not the API error object (a proxy page): ServiceApiError with the status', async () => {
    const proxy = await TinyServer.start((_req, res) => {
      res.writeHead(502, 'Bad Gateway', { 'content-type': 'text/html' });
      res.end('<html><body>upstream is down</body></html>');
    });
    servers.push(proxy);
    const err = await failure(new Client({ url: proxy.url, login: 'root', password: 'x' }).getInfo());
    expect(err).toBeInstanceOf(ServiceApiError);
    const api = err as ServiceApiError;
    expect(api).toMatchObject({ code: 502, error: 'Bad Gateway', json: null, status: 502 });
    expect(api.description).toContain('upstream is down');
    expect(api.body).toBe('<html><body>upstream is down</body></html>');
  });
});

describe('client: ServiceApiError for error answers of the API', () => {
  let cp: TestControlPlane;
  let root: Client;
  beforeAll(async () => {
    cp = await TestControlPlane.start();
    root = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
  });
  afterAll(() => cp.stop());

  it('a wrong password: 401 with the response, the parsed JSON and its fields', async () => {
    const err = await failure(new Client({ url: cp.url, login: 'root', password: 'wrong-password' }).getUserSelf());
    expect(err).toBeInstanceOf(ServiceApiError);
    const api = err as ServiceApiError;
    expect(api.name).toBe('ServiceApiError');
    expect(api).toMatchObject({ code: 401, error: 'Unauthorized', description: 'Invalid login or password.' });
    expect(api.json).toEqual({ code: 401, error: 'Unauthorized', description: 'Invalid login or password.', message: 'Invalid login or password.' });
    expect(api.response.status).toBe(401);
    expect(api.response.headers.get('www-authenticate')).toBe('Token realm="Application"');
    expect(api.message).toBe('401 Unauthorized: Invalid login or password.');
  });

  it('a missing permission: 403 Forbidden', async () => {
    const role = await root.createRole('viewer', { api: ['view_cluster'] });
    await root.createUser('viewer', 'viewer@example.com', 'Viewer', role.id);
    const viewer = new Client({ url: cp.url, login: 'viewer', password: await cp.mail.passwordOf('viewer@example.com') });
    expect((await viewer.getClusters()).total).toBe(0);
    const err = await failure(viewer.createCluster('nope'));
    expect(err).toMatchObject({ code: 403, error: 'Forbidden' });
    expect((err as ServiceApiError).description).toContain('create_cluster');
  });

  it('an unknown id, a bad body and a bad filter: 404, 400 InvalidJSONError, 400 BadRequest', async () => {
    expect(await failure(root.getCluster('3f1e1b4c-1111-4222-8333-444455556666'))).toMatchObject({ code: 404, error: 'NotFound' });
    expect(await failure(root.createCluster(''))).toMatchObject({ code: 400, error: 'InvalidJSONError' });
    expect(await failure(root.getClusters({ filter: { password: 'x' } }))).toMatchObject({ code: 400, error: 'BadRequest' });
    expect(await failure(root.getClusters({ filter: '{not json' }))).toMatchObject({ code: 400, error: 'BadRequest' });
  });

  it('an update of a deleted model: 409', async () => {
    const cluster = await root.createCluster('short-lived');
    const deleted = await root.deleteCluster(cluster.id);
    const err = await failure(root.updateCluster({ ...deleted, data: { ...deleted.data, name: 'again' } }));
    expect(err).toMatchObject({ code: 409, error: 'CannotUpdateDeletedModel' });
  });
});
