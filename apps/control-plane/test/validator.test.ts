import { IdParamsSchema, ListQuerySchema, VersionParamsSchema } from '@carapace/models';
import { describe, expect, it } from 'vitest';
import { validatorCompiler } from '../src/http/validator.js';

describe('the request validator', () => {
  const compile = (schema: object, httpPart: string) =>
    validatorCompiler({ schema, httpPart, method: 'GET', url: '/x' }) as (value: unknown) => {
      value?: unknown;
      error?: unknown;
    };

  it('takes what passes as it came, converts path and query values that need it, refuses the rest', () => {
    const id = '4c4c4544-0042-3510-8052-b3c04f4e4d32';
    const params = { id };
    expect(compile(IdParamsSchema, 'params')(params).value).toBe(params);
    expect(compile(VersionParamsSchema, 'params')({ id, version: '3' }).value).toEqual({ id, version: 3 });
    expect(compile(ListQuerySchema, 'querystring')({ page: '2', per_page: '10', filter: '{}' }).value).toEqual({ page: 2, per_page: 10, filter: '{}' });
    expect(compile(IdParamsSchema, 'params')({ id: 'not-a-uuid' }).error).toBeDefined();
    expect(compile(VersionParamsSchema, 'params')({ id, version: 'x' }).error).toBeDefined();
    expect(compile(ListQuerySchema, 'querystring')({ nope: '1' }).error).toBeDefined();
    // Bodies are never converted.
    expect(compile(VersionParamsSchema, 'body')({ id, version: '3' }).error).toBeDefined();
  });
});
