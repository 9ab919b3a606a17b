import { describe, expect, it } from 'vitest';
import { hintFields, hintLabel, hintValues, initialHintValues } from './hintForm.ts';

const hints = [
  { id: 'dmcrypt', description: 'Encrypt', type: 'boolean', values: [], default_value: false },
  { id: 'mon_count', description: 'Monitors', type: 'integer', values: [], default_value: 3 },
  { id: 'release', description: 'Release', type: 'string', values: ['reef', 'squid'], default_value: 'squid' },
  { id: 'note', description: 'Free text', type: 'string', values: [], default_value: null },
];

describe('hint form', () => {
  it('derives the widgets from the descriptors', () => {
    const fields = hintFields(hints);
    expect(fields.map((f) => [f.id, f.kind, f.label])).toEqual([
      ['dmcrypt', 'boolean', 'Dmcrypt'],
      ['mon_count', 'integer', 'Mon count'],
      ['release', 'select', 'Release'],
      ['note', 'string', 'Note'],
    ]);
    expect(fields[2]?.options.map((o) => o.value)).toEqual(['reef', 'squid']);
    expect(hintLabel('safe_to_destroy_timeout')).toBe('Safe to destroy timeout');
  });

  it('starts from the defaults and sends typed values, leaving empty ones out', () => {
    const fields = hintFields(hints);
    const initial = initialHintValues(fields);
    expect(initial).toEqual({ dmcrypt: false, mon_count: 3, release: 'squid', note: '' });
    expect(hintValues(fields, initial)).toEqual([
      { id: 'dmcrypt', value: false },
      { id: 'mon_count', value: 3 },
      { id: 'release', value: 'squid' },
    ]);
    expect(hintValues(fields, { dmcrypt: true, mon_count: '5', release: 'reef', note: 'x' })).toEqual([
      { id: 'dmcrypt', value: true },
      { id: 'mon_count', value: 5 },
      { id: 'release', value: 'reef' },
      { id: 'note', value: 'x' },
    ]);
  });
});
