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

  it('takes numbers of a path or query in decimal digits only', () => {
    const id = '4c4c4544-0042-3510-8052-b3c04f4e4d32';
    const query = compile(ListQuerySchema, 'querystring');
    const params = compile(VersionParamsSchema, 'params');
    for (const lenient of ['0x10', '1e1', '1.5', '1.0', ' 5', '5 ', '+5', '-1', '0b11', '0o7', 'Infinity', 'NaN', '', '５']) {
      expect(query({ page: lenient }).error, lenient).toMatchObject({ statusCode: 400, errorName: 'BadRequest' });
      expect(query({ per_page: lenient }).error, lenient).toMatchObject({ message: expect.stringContaining('Query parameter "per_page" must be a decimal integer') });
      expect(params({ id, version: lenient }).error, lenient).toMatchObject({ statusCode: 400, message: expect.stringContaining('Path parameter "version"') });
    }
    expect(query({ page: ['1', '2'] }).error).toMatchObject({ statusCode: 400, message: expect.stringContaining('given more than once') });
    expect(query({ page: '05', per_page: '10' }).value).toEqual({ page: 5, per_page: 10 });
    expect(params({ id, version: '007' }).value).toEqual({ id, version: 7 });
    // In range is still the schema's business: a schema error, not a BadRequest of its own.
    expect(query({ page: '0' }).error).toBeInstanceOf(Array);
    expect(params({ id, version: '0' }).error).toBeInstanceOf(Array);
  });
});
