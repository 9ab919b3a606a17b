import { describe, expect, it } from 'vitest';
import { configToText, errorPath, locatePath, parseConfigText } from './configText.ts';

const config = { global_vars: { dmcrypt: false }, inventory: { all: { hosts: ['10.0.0.1'] } } };

describe('configuration text', () => {
  it('round-trips JSON and YAML', () => {
    for (const mode of ['json', 'yaml'] as const) {
      const text = configToText(config, mode);
      expect(parseConfigText(text, mode)).toEqual({ value: config });
    }
  });

  it('places syntax errors', () => {
    const bad = parseConfigText('{\n  "a": 1,\n}', 'json');
    expect('problem' in bad && bad.problem.from).toBeGreaterThan(5);
    const badYaml = parseConfigText('a: [1, 2\nb: 3', 'yaml');
    expect('problem' in badYaml).toBe(true);
  });

  it('maps an API validation error to the field in the text', () => {
    expect(errorPath('Invalid body at "data.configuration.global_vars": must be object.')).toEqual(['global_vars']);
    expect(errorPath('Invalid body at "data.name": too long.')).toBeNull();
    expect(errorPath('Unknown cluster.')).toBeNull();
    for (const mode of ['json', 'yaml'] as const) {
      const text = configToText(config, mode);
      const place = locatePath(text, ['inventory', 'all', 'hosts', 0]);
      expect(place && text.slice(place.from, place.to)).toContain('10.0.0.1');
      const key = locatePath(text, ['global_vars', 'missing']);
      expect(key && text.slice(key.from, key.to)).toContain('global_vars');
    }
  });
});
