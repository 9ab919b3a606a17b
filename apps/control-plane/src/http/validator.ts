import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import { badRequest } from '../errors.js';

// What a number in a path or a query string may look like: decimal digits, nothing else.
// `Value.Convert` would also take "0x10", "1e1", "1.5" (→ 1), " 5", "+5" and "0b11".
const DECIMAL = /^[0-9]+$/;

/** The properties of an object schema that hold numbers (`integer` or `number`). */
function numericProperties(schema: TSchema): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties;
  if (!properties) return [];
  return Object.keys(properties).filter((key) => properties[key]?.type === 'integer' || properties[key]?.type === 'number');
}

/**
 * Compiles the validator of a request part: TypeBox's compiled check, as
 * `TypeBoxValidatorCompiler` of @fastify/type-provider-typebox does, with two differences.
 *
 * Path parameters and query strings are converted (`Value.Convert`: "5" → 5) only when they
 * do not pass as they came. The conversion is interpretive and cost several µs on every
 * request (the `{id}` of every `GET /v1/<model>/{id}/`), and it leaves a value that passes
 * as it is (it only coerces what does not match its type), so the outcome is the same.
 *
 * Before converting, every number of a path or query must be written in decimal digits
 * only: anything else ("0x10", "1e1", "1.5", " 5", "+5", "-1", "") is a 400 `BadRequest`
 * naming the parameter, also for a path parameter (a malformed id stays a 404: ids are not
 * numbers). Leading zeros are taken ("05" is 5: decimal, never octal).
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  const numeric = httpPart === 'params' || httpPart === 'querystring' ? numericProperties(schema) : [];
  const where = httpPart === 'params' ? 'Path parameter' : 'Query parameter';
  return (value: unknown) => {
    if (check.Check(value)) return { value };
    if (httpPart === 'body') return { error: check.Errors(value) };
    if (typeof value === 'object' && value !== null) {
      for (const key of numeric) {
        const given = (value as Record<string, unknown>)[key];
        if (given === undefined || typeof given === 'number' || (typeof given === 'string' && DECIMAL.test(given))) continue;
        const shown = typeof given === 'string' ? JSON.stringify(given.slice(0, 32)) : 'given more than once';
        return { error: badRequest(`${where} "${key}" must be a decimal integer (digits only): ${shown} is not.`) };
      }
    }
    const converted = Value.Convert(schema, value);
    return check.Check(converted) ? { value: converted } : { error: check.Errors(converted) };
  };
};
