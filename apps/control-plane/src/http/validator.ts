import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';

/**
 * Compiles the validator of a request part: TypeBox's compiled check, as
 * `TypeBoxValidatorCompiler` of @fastify/type-provider-typebox does, with one difference:
 * path parameters and query strings are converted (`Value.Convert`: "5" → 5) only when they
 * do not pass as they came. The conversion is interpretive and cost several µs on every
 * request (the `{id}` of every `GET /v1/<model>/{id}/`), and it leaves a value that passes
 * as it is (it only coerces what does not match its type), so the outcome is the same.
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  return (value: unknown) => {
    if (check.Check(value)) return { value };
    if (httpPart === 'body') return { error: check.Errors(value) };
    const converted = Value.Convert(schema, value);
    return check.Check(converted) ? { value: converted } : { error: check.Errors(converted) };
  };
};
