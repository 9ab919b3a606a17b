import { isMap, isPair, isScalar, isSeq, parseDocument, stringify, type Node as YamlNode } from 'yaml';

/** The two text forms of a configuration in the editor. */
export type ConfigMode = 'json' | 'yaml';

/** A problem found in the text, with its place (character offsets) when known. */
export interface TextProblem {
  message: string;
  from: number;
  to: number;
}

/** The configuration as text in `mode`. */
export function configToText(value: unknown, mode: ConfigMode): string {
  return mode === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value, { lineWidth: 0 });
}

/** Offset of line `line` (1-based), column `column` (1-based) in `text`. */
function offsetOf(text: string, line: number, column: number): number {
  let at = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', at);
    if (nl === -1) return text.length;
    at = nl + 1;
  }
  return Math.min(text.length, at + Math.max(0, column - 1));
}

/** Parses the editor text: the value, or the problem with its place. */
export function parseConfigText(text: string, mode: ConfigMode): { value: unknown } | { problem: TextProblem } {
  if (mode === 'json') {
    try {
      return { value: JSON.parse(text) };
    } catch (err) {
      const message = (err as Error).message;
      let at = text.length;
      const pos = /position (\d+)/.exec(message);
      const lc = /line (\d+) column (\d+)/.exec(message);
      if (lc) at = offsetOf(text, Number(lc[1]), Number(lc[2]));
      else if (pos) at = Number(pos[1]);
      return { problem: { message: `Invalid JSON: ${message}`, from: Math.max(0, at - 1), to: Math.min(text.length, at + 1) } };
    }
  }
  const doc = parseDocument(text, { prettyErrors: false });
  const first = doc.errors[0];
  if (first) {
    const [from, to] = first.pos;
    return { problem: { message: `Invalid YAML: ${first.message.split('\n')[0] ?? ''}`, from, to: Math.max(to, from + 1) } };
  }
  return { value: doc.toJS() };
}

/**
 * The path named by an API validation error (`Invalid body at "data.configuration.inventory.all": must be object.`),
 * relative to the configuration (the editor's content), or null when it names none.
 */
export function errorPath(description: string): (string | number)[] | null {
  const m = /at "([^"]*)"/.exec(description);
  if (!m?.[1]) return null;
  const parts: (string | number)[] = m[1].split('.').map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  if (parts[0] === 'data') parts.shift();
  if (parts[0] === 'configuration') parts.shift();
  else return null;
  return parts;
}

/**
 * The place in `text` (JSON or YAML) of the value at `path`, or of its deepest existing
 * parent's key when the value is missing; the whole text when the path is empty.
 */
export function locatePath(text: string, path: readonly (string | number)[]): { from: number; to: number } | null {
  const doc = parseDocument(text);
  if (doc.errors.length) return null;
  let node: unknown = doc.contents;
  let place: { from: number; to: number } | null = null;
  const rangeOf = (n: unknown) => {
    const range = (n as YamlNode | null)?.range;
    return range ? { from: range[0], to: Math.max(range[1], range[0] + 1) } : null;
  };
  place = rangeOf(node);
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(key));
      if (!pair) return place;
      place = rangeOf(pair.key) ?? place;
      node = pair.value;
      const inner = rangeOf(node);
      if (inner && !isMap(node) && !isSeq(node)) place = { from: place?.from ?? inner.from, to: inner.to };
    } else if (isSeq(node) && typeof key === 'number') {
      const item = node.items[key];
      if (!item) return place;
      node = item;
      place = rangeOf(item) ?? place;
    } else {
      return place;
    }
  }
  return place;
}
