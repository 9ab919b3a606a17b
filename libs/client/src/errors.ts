/**
 * Any failure of a call: the API could not be reached, the call timed out or was aborted, or
 * the answer could not be parsed. The original error is kept as `cause`. An error answer of
 * the API is the subclass {@link ServiceApiError}.
 */
export class ServiceError extends Error {
  override name = 'ServiceError';

  /**
   * @param message - What went wrong, in words.
   * @param options - `cause`: the original error.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The parsed error body of the API (api-v1 §2): `{code, error, description, message}`. */
export interface ApiErrorBody {
  /** The HTTP status code. */
  readonly code: number;
  /** The name of the error, for example `Forbidden` or `CannotUpdateManagedFieldsError`. */
  readonly error: string;
  /** What went wrong, for a human. */
  readonly description: string;
  /** The same text as `description` (what the original client reads). */
  readonly message?: string;
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body.code === 'number' && typeof body.error === 'string' && typeof body.description === 'string';
}

/**
 * An error answer of the API (HTTP status 400 or above). It holds the response (its body
 * already read), the parsed JSON of the body, and the error's `code`, `error` and
 * `description`. When the body is not the API's error object (a proxy's HTML page, say),
 * `json` is whatever parsed (or null), `code` is the HTTP status, `error` the status text and
 * `description` the start of the body.
 */
export class ServiceApiError extends ServiceError {
  override name = 'ServiceApiError';
  /** The HTTP response; its body has been read already (see `body` and `json`). */
  readonly response: Response;
  /** The raw text of the response body. */
  readonly body: string;
  /** The response body parsed as JSON, or null when it is not JSON. */
  readonly json: unknown;
  /** The error code: the `code` of the body, else the HTTP status. */
  readonly code: number;
  /** The error name: the `error` of the body, else the HTTP status text. */
  readonly error: string;
  /** The description: the `description` of the body, else the start of the body text. */
  readonly description: string;

  /**
   * @param response - The error response (its body already read).
   * @param body - The text of the body.
   * @param json - The body parsed as JSON, or null.
   */
  constructor(response: Response, body: string, json: unknown) {
    const parsed = isErrorBody(json) ? json : null;
    const code = parsed?.code ?? response.status;
    const error = parsed?.error ?? (response.statusText || `HTTP ${response.status}`);
    const description = parsed?.description ?? body.slice(0, 500);
    super(`${code} ${error}: ${description}`);
    this.response = response;
    this.body = body;
    this.json = json;
    this.code = code;
    this.error = error;
    this.description = description;
  }

  /** The HTTP status of the response. */
  get status(): number {
    return this.response.status;
  }
}

/**
 * A call needs a token, and the client has none and no password to log in with (a client
 * made with only a `token`, after the server refused it).
 */
export class NotLoggedInError extends ServiceError {
  override name = 'NotLoggedInError';
}
