import { ServiceError } from './errors.js';

/** The TLS options of a client. */
export interface TlsSettings {
  /** Whether the server's certificate is checked. */
  readonly verify: boolean;
  /** Path of a PEM file holding the client certificate and its private key, or null. */
  readonly certificateFile: string | null;
  /** Path of a PEM file of CA certificates to trust instead of the built-in ones, or null. */
  readonly caFile: string | null;
}

/** Whether the settings need a dispatcher of their own (anything but the defaults). */
export function needsDispatcher(tls: TlsSettings): boolean {
  return !tls.verify || tls.certificateFile !== null || tls.caFile !== null;
}

async function readPem(path: string, what: string): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new ServiceError(`cannot read the ${what} ${path}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Creates the undici dispatcher carrying the TLS options, for `fetch` in Node. Loaded on
 * first use only, so that a browser build never needs undici or the file system. The
 * certificate file is given to TLS both as certificate and as key: OpenSSL takes from a PEM
 * file the blocks of the kind it looks for.
 */
export async function createDispatcher(tls: TlsSettings): Promise<unknown> {
  const connect: { rejectUnauthorized: boolean; cert?: string; key?: string; ca?: string } = { rejectUnauthorized: tls.verify };
  if (tls.certificateFile !== null) {
    const pem = await readPem(tls.certificateFile, 'client certificate file');
    connect.cert = pem;
    connect.key = pem;
  }
  if (tls.caFile !== null) connect.ca = await readPem(tls.caFile, 'CA file');
  const { Agent } = await import('undici');
  return new Agent({ connect });
}

/** Closes a dispatcher made by {@link createDispatcher}. */
export async function closeDispatcher(dispatcher: unknown): Promise<void> {
  if (dispatcher && typeof (dispatcher as { close?: unknown }).close === 'function') {
    await (dispatcher as { close: () => Promise<void> }).close();
  }
}
