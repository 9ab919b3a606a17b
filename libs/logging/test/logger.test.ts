import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, REDACT, resolveLogFormat } from '../src/index.js';

/** A stream that keeps what is written to it, a terminal or not. */
function capture(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    }),
    { isTTY },
  );
  return { stream, text: () => chunks.join('') };
}

// ANSI colour escape, as pino-pretty writes it around the level and the message.
const COLOUR = new RegExp(`${String.fromCharCode(27)}\\[\\d+m`);

const SECRETS = {
  authorization: 'Bearer authz-value-1',
  password: 'password-value-2',
  token: 'token-value-3',
  secret: 'secret-value-4',
  privateKey: 'private-key-value-5',
  headers: { authorization: 'Bearer authz-value-6' },
  body: { password: 'password-value-7', new_password: 'password-value-8', token: 'token-value-9', secret: 'secret-value-10', privateKey: 'private-key-value-11' },
};
const SECRET_VALUES = JSON.stringify(SECRETS).match(/[a-z-]+-value-\d+/g) ?? [];

describe('the log format', () => {
  it('is pretty on a terminal and JSON elsewhere when automatic; an explicit setting wins', () => {
    expect(resolveLogFormat('auto', { isTTY: true })).toBe('pretty');
    expect(resolveLogFormat('auto', { isTTY: false })).toBe('json');
    expect(resolveLogFormat('auto', {})).toBe('json');
    expect(resolveLogFormat('json', { isTTY: true })).toBe('json');
    expect(resolveLogFormat('pretty', { isTTY: false })).toBe('pretty');
  });

  it('writes JSON lines when the output is not a terminal', () => {
    const out = capture(false);
    createLogger('info', { destination: out.stream }).info({ executionId: 'e1' }, 'execution started');
    const line = JSON.parse(out.text()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 30, msg: 'execution started', executionId: 'e1' });
  });

  it('writes JSON lines with `json`, even on a terminal', () => {
    const out = capture(true);
    createLogger('info', { format: 'json', destination: out.stream }).warn('careful');
    expect(JSON.parse(out.text())).toMatchObject({ level: 40, msg: 'careful' });
    expect(out.text()).not.toMatch(COLOUR);
  });

  it('writes one coloured line per entry with `pretty`, at once (nothing waits for a worker)', () => {
    const out = capture(false);
    const log = createLogger('info', { format: 'pretty', destination: out.stream });
    log.info({ executionId: 'e1' }, 'execution started');
    const text = out.text();
    expect(text).toMatch(COLOUR);
    expect(text).toContain('INFO');
    expect(text).toContain('execution started');
    expect(text).toContain('"executionId":"e1"');
    expect(text.trimEnd().split('\n')).toHaveLength(1);
    expect(() => JSON.parse(text) as unknown).toThrow();
  });

  it('is pretty on a terminal by default', () => {
    const out = capture(true);
    createLogger('info', { destination: out.stream }).error(new Error('boom'), 'failed');
    expect(out.text()).toMatch(COLOUR);
    expect(out.text()).toContain('ERROR');
    expect(out.text()).toContain('Error: boom');
  });

  for (const format of ['json', 'pretty'] as const) {
    it(`redacts authorization, passwords, tokens, secrets and private keys (${format})`, () => {
      const out = capture(false);
      createLogger('info', { format, destination: out.stream }).info(SECRETS, 'with secrets');
      const text = out.text();
      expect(SECRET_VALUES).toHaveLength(11);
      for (const value of SECRET_VALUES) expect(text).not.toContain(value);
      expect(text).toContain('with secrets');
      expect(text.match(/\[redacted\]/g)).toHaveLength(11);
    });
  }

  it('masks every path of the list', () => {
    const out = capture(false);
    const log = createLogger('info', { format: 'json', destination: out.stream });
    for (const path of REDACT) {
      const entry: Record<string, unknown> = {};
      const parts = path.split('.').map((p) => (p === '*' ? 'any' : p));
      parts.reduce<Record<string, unknown>>((node, part, i) => (node[part] = i === parts.length - 1 ? 'leaked-value' : {}) as Record<string, unknown>, entry);
      log.info(entry, path);
    }
    const lines = out.text().trimEnd().split('\n');
    expect(lines).toHaveLength(REDACT.length);
    for (const line of lines) expect(line).not.toContain('leaked-value');
  });
});
