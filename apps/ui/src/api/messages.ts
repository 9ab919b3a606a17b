import { NotLoggedInError, ServiceApiError, ServiceError } from '@carapace/client';

/** Whether `err` is an answer of the API with this HTTP status. */
export function isApiStatus(err: unknown, status: number): boolean {
  return err instanceof ServiceApiError && err.status === status;
}

/**
 * The text to show for a failed call: the API's own description of the error; a 403 says
 * plainly that the user lacks the permission; a call that got no answer says so.
 */
export function errorMessage(err: unknown): string {
  if (err instanceof ServiceApiError) {
    if (err.status === 403) {
      const detail = err.description && err.description !== 'Forbidden' ? ` (${err.description})` : '';
      return `You do not have the permission to do this${detail}. Ask an administrator for a role that grants it.`;
    }
    if (err.status === 401) return 'Your session has expired: sign in again.';
    if (err.status === 429) return err.description || 'Too many attempts: wait a moment and try again.';
    if (err.status >= 500) return `The control plane failed (${err.status}): ${err.description || err.error}`;
    return err.description || `${err.code} ${err.error}`;
  }
  if (err instanceof NotLoggedInError) return 'You are not signed in.';
  if (err instanceof ServiceError) {
    if (/abort/i.test(err.message)) return 'The request was cancelled.';
    return `The control plane did not answer: ${err.message}`;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The title of an error notice: names permission problems and missing things. */
export function errorTitle(err: unknown): string {
  if (isApiStatus(err, 403)) return 'Permission denied';
  if (isApiStatus(err, 404)) return 'Not found';
  if (isApiStatus(err, 409)) return 'Conflict';
  if (err instanceof ServiceApiError && err.status < 500) return 'Request refused';
  return 'Something went wrong';
}
