import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from 'typebox';
import { afterAll, describe, expect, it } from 'vitest';
import { deepFreeze, envLayer, mergeLayers, parseBoolean, readYamlMapping, schemaProblem, setYamlValues } from '../src/index.js';

const fail = (message: string) => new Error(message);

describe('@carapace/config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-config-lib-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('knows the boolean words, in any case, and nothing else', () => {
    for (const word of ['1', 'y', 'YES', 't', 'True', 'on']) expect(parseBoolean(word)).toBe(true);
    for (const word of ['0', 'n', 'No', 'f', 'FALSE', 'off']) expect(parseBoolean(word)).toBe(false);
    for (const word of ['', 'maybe', 'yes ', '2']) expect(parseBoolean(word)).toBeUndefined();
  });

  it('merges layers deeply, later over earlier; arrays replace, undefined keeps', () => {
    const merged = mergeLayers({ a: { b: 1, c: [1, 2] }, d: 'x' }, { a: { c: [3] } }, { a: { b: 2 }, d: undefined });
    expect(merged).toEqual({ a: { b: 2, c: [3] }, d: 'x' });
  });

  it('reads variables by the type of their default, or by the caller', () => {
    const defaults = { n: 1, flag: false, nested: { text: 'a' }, list: [] as string[] };
    const keys = { X_N: 'n', X_FLAG: 'flag', X_TEXT: 'nested.text', X_LIST: 'list', X_UNSET: 'n' };
    const split = (path: string, raw: string) => (path === 'list' ? raw.split(',') : undefined);
    expect(envLayer({ X_N: '42', X_FLAG: 'yes', X_TEXT: 'b', X_LIST: 'p,q', X_UNSET: '' }, keys, defaults, fail, split)).toEqual({
      n: 42,
      flag: true,
      nested: { text: 'b' },
      list: ['p', 'q'],
    });
    expect(() => envLayer({ X_N: 'many' }, keys, defaults, fail)).toThrow('X_N must be a whole number, not "many"');
    expect(() => envLayer({ X_FLAG: 'maybe' }, keys, defaults, fail)).toThrow('X_FLAG must be true or false, not "maybe"');
  });

  it('reads a YAML mapping, naming the file when it cannot', () => {
    const good = join(dir, 'good.yaml');
    writeFileSync(good, 'a:\n  b: 1\n');
    expect(readYamlMapping(good, fail)).toEqual({ a: { b: 1 } });
    const empty = join(dir, 'empty.yaml');
    writeFileSync(empty, '');
    expect(readYamlMapping(empty, fail)).toEqual({});
    const list = join(dir, 'list.yaml');
    writeFileSync(list, '- 1\n');
    expect(() => readYamlMapping(list, fail)).toThrow(/must hold a mapping/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'a: [\n');
    expect(() => readYamlMapping(bad, fail)).toThrow(/not valid YAML/);
    expect(() => readYamlMapping(join(dir, 'missing.yaml'), fail)).toThrow(/cannot read configuration file/);
  });

  it('names the first problem against a schema, and freezes deeply', () => {
    const schema = Type.Object({ port: Type.Integer({ maximum: 65535 }) });
    expect(schemaProblem(schema, { port: 80 })).toBeNull();
    expect(schemaProblem(schema, { port: 70000 })).toMatch(/^at \/port: /);
    const frozen = deepFreeze({ a: { b: [1] } });
    expect(Object.isFrozen(frozen.a.b)).toBe(true);
  });

  it('setYamlValues sets dotted keys, keeping the other keys and the comments', () => {
    const text = '# top\ncontrolPlane: "a:1" # the control plane\ntls: null\nslots: 3\nname: old\n';
    const out = setYamlValues(text, { controlPlane: ['b:2', 'c:3'], 'tls.enabled': true, 'tls.caFile': '/etc/ca.pem', name: undefined, token: 'crt.x.y' }, fail);
    expect(out).toMatch(/^# top\n/);
    expect(out).toContain('# the control plane');
    writeFileSync(join(dir, 'set.yaml'), out);
    expect(readYamlMapping(join(dir, 'set.yaml'), fail)).toEqual({ controlPlane: ['b:2', 'c:3'], tls: { enabled: true, caFile: '/etc/ca.pem' }, slots: 3, token: 'crt.x.y' });
    expect(setYamlValues('', { token: 't' }, fail)).toBe('token: t\n');
    expect(() => setYamlValues('- a list\n', { token: 't' }, fail)).toThrow('the YAML must hold a mapping');
    expect(() => setYamlValues('a: [\n', { token: 't' }, fail)).toThrow(/^not valid YAML/);
  });
});
