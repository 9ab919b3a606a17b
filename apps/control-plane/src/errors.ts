/**
 * Domain errors: each carries the HTTP status and the `error` name of the API's error body
 * (api-v1 §2). Services throw them; the one error handler turns them into responses.
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorName: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = errorName;
  }
}

export const badRequest = (description: string) => new ApiError(400, 'BadRequest', description);
export const invalidJson = (description: string) => new ApiError(400, 'InvalidJSONError', description);
export const unauthorized = (description = 'Unauthorized.') =>
  new ApiError(401, 'Unauthorized', description, { 'www-authenticate': 'Token realm="Application"' });
export const forbidden = (description = 'You are not allowed to do that.') => new ApiError(403, 'Forbidden', description);
export const notFound = (description = 'Not found.') => new ApiError(404, 'NotFound', description);
export const conflict = (name: string, description: string) => new ApiError(409, name, description);
export const tooManyRequests = (description: string, retryAfterS: number) =>
  new ApiError(429, 'TooManyRequests', description, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterS))) });

/** A live model with the same unique key (login, e-mail, name) exists already. */
export class UniqueViolation extends Error {
  constructor(readonly field: string) {
    super(`unique field ${field} is taken`);
  }
}
