import { Client, ServiceApiError } from '@carapace/client';
import { expect } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from './control-plane.js';
import type { recordingFetch } from './recording-fetch.js';

/** The error a client call fails with, which must be a ServiceApiError (an answer of the API). */
export async function apiFailure(promise: Promise<unknown>): Promise<ServiceApiError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceApiError);
  return err as ServiceApiError;
}

/** A control plane and a client of it logged in as root, whose requests `recorder` records. */
export async function startRecordedClient(recorder: ReturnType<typeof recordingFetch>): Promise<{ cp: TestControlPlane; client: Client }> {
  const cp = await TestControlPlane.start();
  const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
  return { cp, client };
}

/** Closes the client, then stops its control plane. */
export async function stopRecordedClient({ cp, client }: { cp: TestControlPlane; client: Client }): Promise<void> {
  await client.close();
  await cp.stop();
}
