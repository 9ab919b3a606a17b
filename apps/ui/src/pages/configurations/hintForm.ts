import type { HintDescriptor } from '@carapace/models';

/** One field of the hints form, derived from a playbook's hint descriptor. */
export interface HintField {
  id: string;
  label: string;
  description: string;
  kind: 'boolean' | 'integer' | 'number' | 'select' | 'string';
  /** Choices of a `select` field, as strings (the value sent is the original one). */
  options: { value: string; label: string }[];
  defaultValue: unknown;
}

/** The form value of a hint: boolean, number, string, or '' for "not set". */
export type HintFormValue = boolean | number | string;

/** `dmcrypt` → `Dmcrypt`, `mon_count` → `Mon count`. */
export function hintLabel(id: string): string {
  const words = id.replace(/[_-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The form fields of a playbook's hints: boolean → switch, integer → number input, values → select, else text. */
export function hintFields(hints: readonly HintDescriptor[]): HintField[] {
  return hints.map((hint) => {
    const type = hint.type.toLowerCase();
    const values = Array.isArray(hint.values) ? hint.values : [];
    let kind: HintField['kind'];
    if (type === 'boolean' || type === 'bool') kind = 'boolean';
    else if (values.length > 0 || type === 'select' || type === 'enum') kind = 'select';
    else if (type === 'integer' || type === 'int') kind = 'integer';
    else if (type === 'number' || type === 'float') kind = 'number';
    else kind = 'string';
    return {
      id: hint.id,
      label: hintLabel(hint.id),
      description: hint.description,
      kind,
      options: values.map((v) => ({ value: String(v), label: String(v) })),
      defaultValue: hint.default_value,
    };
  });
}

/** The text of a form value (a string, number or boolean; anything else is empty). */
function scalarText(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

/** The initial values of the form: each hint's default. */
export function initialHintValues(fields: readonly HintField[]): Record<string, HintFormValue> {
  const values: Record<string, HintFormValue> = {};
  for (const field of fields) {
    const d = field.defaultValue;
    if (field.kind === 'boolean') values[field.id] = d === true;
    else if (field.kind === 'integer' || field.kind === 'number') values[field.id] = typeof d === 'number' ? d : '';
    else values[field.id] = scalarText(d);
  }
  return values;
}

/**
 * The `hints` of the create call: each field's value in the type the playbook describes;
 * empty fields are left out (the playbook's default applies).
 */
export function hintValues(fields: readonly HintField[], values: Record<string, unknown>): { id: string; value: unknown }[] {
  const out: { id: string; value: unknown }[] = [];
  for (const field of fields) {
    const v = values[field.id];
    if (v === undefined || v === '' || v === null) continue;
    switch (field.kind) {
      case 'boolean':
        out.push({ id: field.id, value: v === true || v === 'true' });
        break;
      case 'integer': {
        const n = typeof v === 'number' ? v : Number(v);
        if (Number.isFinite(n)) out.push({ id: field.id, value: Math.trunc(n) });
        break;
      }
      case 'number': {
        const n = typeof v === 'number' ? v : Number(v);
        if (Number.isFinite(n)) out.push({ id: field.id, value: n });
        break;
      }
      case 'select': {
        const original = findOriginal(field, scalarText(v));
        out.push({ id: field.id, value: original });
        break;
      }
      default:
        out.push({ id: field.id, value: scalarText(v) });
    }
  }
  return out;
}

function findOriginal(field: HintField, value: string): unknown {
  const d = field.defaultValue;
  if (typeof d === 'number' && Number.isFinite(Number(value))) return Number(value);
  if (typeof d === 'boolean') return value === 'true';
  return value;
}
