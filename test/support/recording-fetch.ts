import type { FetchFunction } from '@carapace/client';

/** A request the client sent, as `fetch` saw it. */
export interface SentRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Headers;
  /** The HTTP status of the answer, once it came. */
  status?: number;
}

/**
 * The global `fetch`, recording what passes through it: the client's `fetch` option lets a
 * test see how many logins happened and which headers were sent. Nothing is altered.
 */
export function recordingFetch(): { fetch: FetchFunction; sent: SentRequest[]; logins: () => number } {
  const sent: SentRequest[] = [];
  const fn: FetchFunction = async (url, init) => {
    const entry: SentRequest = { method: init.method ?? 'GET', url: new URL(url), headers: new Headers(init.headers) };
    sent.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    return response;
  };
  return { fetch: fn, sent, logins: () => sent.filter((r) => r.method === 'POST' && r.url.pathname === '/v1/auth/').length };
}
