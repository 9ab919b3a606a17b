/** The deepest nesting of a stored document (the document itself is level 1). */
export const MAX_DATA_DEPTH = 64;

/** True when `value` nests deeper than `levels` (objects and arrays; `value` itself is a level). */
export function nestsDeeper(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (levels === 0) return true;
  for (const child of Array.isArray(value) ? value : Object.values(value)) {
    if (nestsDeeper(child, levels - 1)) return true;
  }
  return false;
}

/**
 * Whether two values are the same JSON document: objects equal key by key whatever their
 * order, keys holding `undefined` left out (as `JSON.stringify` leaves them), arrays
 * element by element. Values are those of stored data (no cycles, no classes but arrays).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => jsonEqual(v, b[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keysOf = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const keys = keysOf(x);
  if (keys.length !== keysOf(y).length) return false;
  return keys.every((k) => Object.hasOwn(y, k) && jsonEqual(x[k], y[k]));
}
