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
