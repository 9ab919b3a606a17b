import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCOVERY_TOKEN, ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { makeFacts } from '@carapace/test-support/facts';

const SCRIPT = fileURLToPath(new URL('./decapod_flow.py', import.meta.url));

/**
 * The loopback mail box the script reads: `GET /mail?to=<address>&subject=<text>` answers the
 * text of the latest mail to that address whose subject holds the text, waiting for it up to
 * 10 s; 404 when none came.
 */
function startMailEndpoint(cp: TestControlPlane): Promise<Server> {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const to = url.searchParams.get('to') ?? '';
    const subject = url.searchParams.get('subject') ?? '';
    if (url.pathname !== '/mail' || !to) {
      response.writeHead(404).end();
      return;
    }
    const matches = (m: { to: string; subject: string }) => m.to.includes(to) && m.subject.includes(subject);
    cp.mail.waitFor(to, subject).then(
      () => {
        const latest = cp.mail.mails.filter(matches).at(-1);
        response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(latest?.text ?? '');
      },
      (err: Error) => response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(err.message),
    );
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

interface Run {
  readonly code: number | null;
  readonly output: string;
}

function runScript(args: readonly string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('compat: a decapodlib-style Python client runs a whole session', () => {
  let cp: TestControlPlane;
  let mailEndpoint: Server;
  let stopFacts: () => void;

  beforeAll(async () => {
    cp = await TestControlPlane.start();
    // No runner here (CARAPACE_RUNNER none): play its part for fact gathering, answering each
    // registration at once with the facts of a small Debian host at the registered address.
    stopFacts = cp.services.servers.factsRequested.on((serverId) => {
      setImmediate(() => {
        // A failure is an unhandled rejection, which fails the run.
        void (async () => {
          const server = await cp.services.servers.get(serverId);
          const hostname = `compat-${server.data.ip.replace(/\W/g, '-')}`;
          await cp.services.servers.recordFacts(server.id, makeFacts(hostname, server.data.ip), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICompatTestKey');
        })();
      });
    });
    mailEndpoint = await startMailEndpoint(cp);
  });

  afterAll(async () => {
    stopFacts();
    await new Promise<void>((resolve) => mailEndpoint.close(() => resolve()));
    await cp.stop();
  });

  it('passes every check of test/compat/decapod_flow.py', { timeout: 120_000 }, async () => {
    const mailUrl = `http://127.0.0.1:${(mailEndpoint.address() as AddressInfo).port}/mail`;
    const { code, output } = await runScript([
      '--url',
      cp.url,
      '--root-password',
      ROOT_PASSWORD,
      '--discovery-token',
      DISCOVERY_TOKEN,
      '--mail-url',
      mailUrl,
    ]);
    expect(code, output).toBe(0);
    const lines = output.split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([]);
    for (const step of [
      'ok - login as root: a token model; calls send Authorization: <token> (no Bearer)',
      'ok - create_user: the generated password arrives by e-mail; a taken login is 409',
      'ok - update_user (PUT of the whole model): version 2; a stale PUT is 409; versions listed',
      'ok - update_role: version 2, and the user\'s very next call has the new permission',
      'ok - request_password_reset, peek_password_reset, reset_password with the e-mailed token',
      'ok - after the reset: old token and old password refused, new password works',
      'ok - create_server by discovery token (POST /v1/server/): two servers, one registered twice',
      'ok - put_server renames a server (PUT of the whole model)',
      'ok - update_playbook_configuration: version 2; versions listed',
      'ok - create_execution stays queued (no runner); cancel_execution (DELETE /v1/execution/{id}/) cancels it',
      'ok - get_execution_steps and get_execution_log ({"data": ...} and plain text)',
      'ok - error shapes: 404 NotFound, 405, 400; {code, error, description, message}',
      'ok - logout: {} and the token is refused (401) afterwards; the client logs in again',
    ]) {
      expect(lines, output).toContain(step);
    }
    expect(output).toMatch(/^ALL CHECKS PASSED: \d+ steps, \d+ responses audited$/m);
  });

  it('fails, printing the request and response, on a JSON answer whose Content-Type has a charset', async () => {
    // What decapodlib cannot read: it compares Content-Type literally and takes this for text.
    const liar = createServer((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'private, no-store, no-cache' })
        .end(JSON.stringify({ version: '0.0.0', time: { local: '', utc: '', unix: Math.floor(Date.now() / 1000) } }));
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(liar.address() as AddressInfo).port}`;
      const { code, output } = await runScript(['--url', url, '--root-password', 'x', '--discovery-token', 'x', '--mail-url', `${url}/mail`]);
      expect(code, output).toBe(1);
      expect(output).toContain("FAIL - get_info without a token (GET /v1/info/), also without the trailing slash: a JSON answer with Content-Type 'application/json; charset=utf-8', not exactly 'application/json'");
      expect(output).toContain('request:  GET http://127.0.0.1:');
      expect(output).toContain('response: 200 OK');
      expect(output).not.toContain('ALL CHECKS PASSED');
    } finally {
      await new Promise<void>((resolve) => liar.close(() => resolve()));
    }
  });
});
