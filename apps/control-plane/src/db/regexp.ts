import { RE2JS, RE2JSException } from 're2js';

/** The longest `regexp` filter pattern taken. */
export const MAX_REGEXP_LENGTH = 256;
/** The largest RE2 program a pattern may compile to: matching costs up to program size × text length. */
export const MAX_REGEXP_INSTRUCTIONS = 1000;

/** A compiled pattern and the size of its program. */
export interface CompiledPattern {
  readonly re: RE2JS;
  readonly instructions: number;
}

/**
 * Compiles a user-given regular expression with RE2 (re2js, a port of RE2): matching takes
 * time linear in the text, whatever the pattern. Throws an `Error` saying why a pattern is
 * refused: too long, not valid, or using what RE2 cannot run in linear time (backreferences,
 * lookaround).
 */
export function compileRegexp(pattern: string): RE2JS {
  if (pattern.length > MAX_REGEXP_LENGTH) throw new Error(`the pattern is longer than ${MAX_REGEXP_LENGTH} characters`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (e) {
    if (e instanceof RE2JSException) {
      throw new Error(`${e.message} (RE2 syntax: no backreferences nor lookaround)`, { cause: e });
    }
    throw e;
  }
  if (programSize(re) > MAX_REGEXP_INSTRUCTIONS) {
    throw new Error(`the pattern is too complex: it compiles to more than ${MAX_REGEXP_INSTRUCTIONS} RE2 instructions`);
  }
  return re;
}

/** The number of instructions of a compiled pattern's RE2 program. */
export function programSize(re: RE2JS): number {
  // re2js types the count as `any`; it is the size of RE2's compiled program.
  return Number(re.re2().numberOfInstructions());
}
