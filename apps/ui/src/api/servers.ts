import type { ServerFacts, ServerState, Server } from '@carapace/models';

/**
 * The server states of `@carapace/models` (`SERVER_STATES`), listed here as types only so
 * that the browser bundle does not carry the models' schema library.
 */
export const SERVER_STATE_NAMES = [
  'operational',
  'off',
  'maintenance_no_reconfig',
  'maintenance_reconfig',
  'gathering_facts',
  'unreachable',
] as const satisfies readonly ServerState[];

/** The server's facts, or null until a runner has gathered them (`facts` is `{}` then). */
export function serverFacts(server: Server): ServerFacts | null {
  const facts = server.data.facts as Partial<ServerFacts>;
  return typeof facts.gathered_at === 'number' ? (facts as ServerFacts) : null;
}
