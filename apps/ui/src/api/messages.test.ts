import { ServiceApiError, ServiceError } from '@carapace/client';
import { describe, expect, it } from 'vitest';
import { errorMessage, errorTitle } from './messages.ts';

function apiError(status: number, error: string, description: string): ServiceApiError {
  const body = JSON.stringify({ code: status, error, description, message: description });
  return new ServiceApiError(new Response(body, { status }), body, JSON.parse(body));
}

describe('errorMessage', () => {
  it("gives the API's description", () => {
    expect(errorMessage(apiError(409, 'CannotDeleteClusterWithServers', 'The cluster still has servers.'))).toBe('The cluster still has servers.');
    expect(errorTitle(apiError(409, 'CannotDeleteClusterWithServers', 'x'))).toBe('Conflict');
  });

  it('says plainly that a 403 is a missing permission', () => {
    const err = apiError(403, 'Forbidden', 'Permission create_cluster is required.');
    expect(errorMessage(err)).toBe('You do not have the permission to do this (Permission create_cluster is required.). Ask an administrator for a role that grants it.');
    expect(errorTitle(err)).toBe('Permission denied');
  });

  it('tells when the control plane did not answer', () => {
    expect(errorMessage(new ServiceError('fetch failed'))).toBe('The control plane did not answer: fetch failed');
  });
});
