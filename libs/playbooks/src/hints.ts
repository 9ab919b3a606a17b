/**
 * Hints: the optional parameters of a playbook configuration request
 * (`"hints": [{"id", "value"}]`), validated against the playbook's descriptor.
 *
 * @packageDocumentation
 */
import type { HintDescriptor, PlaybookDescriptor } from '@carapace/models';
import { PlaybookInputError, type HintValue, type ResolvedHints } from './plugin.js';

/** Extra constraints on a hint's value, beyond its descriptor `type` and `values`. */
export interface HintRule {
  /** Smallest allowed value of an `integer` hint. */
  readonly min?: number;
  /** Largest allowed value of an `integer` hint. */
  readonly max?: number;
}

/**
 * The constraints of the hints, by hint id. They are kept here rather than in the
 * descriptors so that `GET /v1/playbook/` keeps the original wire shape.
 *
 * - `mon_count`: 1 to 9. An odd count is recommended (a quorum of monitors is a strict
 *   majority, so an even count adds no failure tolerance) but not required.
 * - `safe_to_destroy_timeout` (`remove_osd`) and `ok_to_stop_timeout` (`upgrade_ceph`): 0 to
 *   86,400 seconds; `daemon_timeout` and `clean_timeout` (`upgrade_ceph`): 1 to 86,400.
 * - `add_pool`: `size` 0 to 10, `min_size` 0 to 24, `ec_k` 2 to 16, `ec_m` 1 to 8, `pg_num`
 *   0 to 32,768, the quotas ≥ 0 (the plugin checks them together, see `poolSpec`).
 */
export const HINT_RULES: Readonly<Record<string, HintRule>> = {
  mon_count: { min: 1, max: 9 },
  safe_to_destroy_timeout: { min: 0, max: 86_400 },
  ok_to_stop_timeout: { min: 0, max: 86_400 },
  daemon_timeout: { min: 1, max: 86_400 },
  clean_timeout: { min: 1, max: 86_400 },
  size: { min: 0, max: 10 },
  min_size: { min: 0, max: 24 },
  ec_k: { min: 2, max: 16 },
  ec_m: { min: 1, max: 8 },
  pg_num: { min: 0, max: 32_768 },
  quota_max_bytes: { min: 0 },
  quota_max_objects: { min: 0 },
};

/** The hint types a descriptor may declare. */
export const HINT_TYPES: readonly string[] = ['boolean', 'integer', 'string'];

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'bigint') return `${value}n`;
  try {
    // undefined for functions and symbols, whatever the declared type says
    const text: string | undefined = JSON.stringify(value);
    return text ?? `a ${typeof value}`;
  } catch {
    return `a ${typeof value}`;
  }
}

function invalid(playbookId: string, hint: HintDescriptor, value: unknown, expected: string): PlaybookInputError {
  return new PlaybookInputError('InvalidHintError', `Hint ${hint.id} of playbook ${playbookId} must be ${expected}, got ${describeValue(value)}.`);
}

function checkHintValue(playbookId: string, hint: HintDescriptor, value: unknown, rules: Readonly<Record<string, HintRule>>): void {
  switch (hint.type) {
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid(playbookId, hint, value, 'a boolean (true or false)');
      break;
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(playbookId, hint, value, 'an integer');
      const rule = rules[hint.id];
      if (rule?.min !== undefined && value < rule.min) throw invalid(playbookId, hint, value, `an integer ≥ ${rule.min}`);
      if (rule?.max !== undefined && value > rule.max) throw invalid(playbookId, hint, value, `an integer ≤ ${rule.max}`);
      break;
    }
    case 'string':
      if (typeof value !== 'string') throw invalid(playbookId, hint, value, 'a string');
      break;
    default:
      throw new Error(`Hint ${hint.id} of playbook ${playbookId} has an unknown type ${hint.type}`);
  }
  if (hint.values.length > 0 && !hint.values.includes(value)) {
    throw invalid(playbookId, hint, value, `one of ${hint.values.map(describeValue).join(', ')}`);
  }
}

/**
 * Validates the hints of a request against a playbook's descriptor and fills in defaults.
 *
 * The result has every hint of the descriptor, in the descriptor's order: the given value,
 * or the hint's `default_value`. Errors (all {@link PlaybookInputError}):
 * - `UnknownHintError`: a hint id the playbook does not have;
 * - `DuplicateHintError`: the same hint id given twice;
 * - `InvalidHintError`: a value of the wrong type (`boolean`: a JSON boolean; `integer`: a
 *   JSON integer, no strings), outside {@link HINT_RULES}, or not among the hint's `values`
 *   when it lists some.
 *
 * @param descriptor the playbook's descriptor (its `id` and `hints`)
 * @param hints the hints of the request
 * @param rules constraints by hint id; {@link HINT_RULES} by default
 */
export function resolveHints(
  descriptor: Pick<PlaybookDescriptor, 'id' | 'hints'>,
  hints: readonly HintValue[],
  rules: Readonly<Record<string, HintRule>> = HINT_RULES,
): ResolvedHints {
  const given = new Map<string, unknown>();
  for (const hint of hints) {
    const id: unknown = hint.id;
    const known = typeof id === 'string' ? descriptor.hints.find((h) => h.id === id) : undefined;
    if (!known) {
      const ids = descriptor.hints.map((h) => h.id);
      throw new PlaybookInputError(
        'UnknownHintError',
        `Playbook ${descriptor.id} has no hint ${describeValue(id)}; its hints: ${ids.length > 0 ? ids.join(', ') : 'none'}.`,
      );
    }
    if (given.has(known.id)) throw new PlaybookInputError('DuplicateHintError', `Hint ${known.id} is given more than once.`);
    checkHintValue(descriptor.id, known, hint.value, rules);
    given.set(known.id, hint.value);
  }
  const resolved: Record<string, unknown> = {};
  for (const hint of descriptor.hints) resolved[hint.id] = given.has(hint.id) ? given.get(hint.id) : hint.default_value;
  return resolved;
}

/**
 * Checks an already resolved hint record again (as a plugin's `buildConfiguration` does with
 * what it is given) and fills in missing defaults: the same rules and errors as
 * {@link resolveHints}, with the record's entries as the given hints.
 */
export function normalizeResolvedHints(
  descriptor: Pick<PlaybookDescriptor, 'id' | 'hints'>,
  hints: ResolvedHints,
  rules: Readonly<Record<string, HintRule>> = HINT_RULES,
): ResolvedHints {
  return resolveHints(
    descriptor,
    Object.entries(hints).map(([id, value]) => ({ id, value })),
    rules,
  );
}

/** The value of a boolean hint of a resolved record; throws `InvalidHintError` if it is not a boolean. */
export function booleanHint(hints: ResolvedHints, id: string): boolean {
  const value = hints[id];
  if (typeof value !== 'boolean') throw new PlaybookInputError('InvalidHintError', `Hint ${id} must be a boolean, got ${describeValue(value)}.`);
  return value;
}

/** The value of an integer hint of a resolved record; throws `InvalidHintError` if it is not an integer. */
export function integerHint(hints: ResolvedHints, id: string): number {
  const value = hints[id];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new PlaybookInputError('InvalidHintError', `Hint ${id} must be an integer, got ${describeValue(value)}.`);
  }
  return value;
}

/** The value of a string hint of a resolved record; throws `InvalidHintError` if it is not a string. */
export function stringHint(hints: ResolvedHints, id: string): string {
  const value = hints[id];
  if (typeof value !== 'string') throw new PlaybookInputError('InvalidHintError', `Hint ${id} must be a string, got ${describeValue(value)}.`);
  return value;
}

/** The items of a comma-separated string hint, trimmed, empty ones dropped (`'osd, mon'` → `['osd', 'mon']`). */
export function listHint(hints: ResolvedHints, id: string): string[] {
  return stringHint(hints, id)
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
