import { ServiceError } from './errors.js';
import type * as NodeTls from './tls.js';

// The browser's `#tls` (package.json `imports`, condition `browser`): a browser applies its
// own TLS settings and has neither undici nor a file system, so the options that need a
// dispatcher cannot be honoured there. Same exports as ./tls.ts (checked below).

/** The TLS options of a client. */
export type TlsSettings = NodeTls.TlsSettings;

/** Whether the settings need a dispatcher of their own (anything but the defaults). */
export function needsDispatcher(tls: TlsSettings): boolean {
  return !tls.verify || tls.certificateFile !== null || tls.caFile !== null;
}

/** Refuses: `verify: false`, `certificateFile` and `caFile` need Node (the browser's TLS settings apply). */
export async function createDispatcher(_tls: TlsSettings): Promise<unknown> {
  throw new ServiceError('the TLS options verify: false, certificateFile and caFile need Node: in a browser, the browser\'s own TLS settings apply');
}

/** Nothing to close: a browser never has a dispatcher. */
export async function closeDispatcher(_dispatcher: unknown): Promise<void> {}

// The type check that this module can stand in for ./tls.ts: the same functions, the same signatures.
const _standsIn = { needsDispatcher, createDispatcher, closeDispatcher } satisfies typeof NodeTls;
void _standsIn;
