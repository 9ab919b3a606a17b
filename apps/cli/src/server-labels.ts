import { ServiceApiError, type Client } from '@carapace/client';
import type { Server } from '@carapace/models';

/** Ids a list call filters on at most: the filter travels in the URL. */
const IDS_PER_CALL = 100;

/** How a server is shown to a person: its name, and its address when that says more. */
export function serverLabel(server: Server): string {
  const name = server.data.name || server.data.fqdn || server.id;
  const ip = server.data.ip;
  return ip && ip !== name ? `${name} (${ip})` : name;
}

/**
 * Server id → {@link serverLabel} for the given ids, deleted servers included, in one list
 * call per hundred ids. When the service refuses (no permission to view servers, say), the
 * map is empty and the caller shows the ids: names are a help, not the command's purpose.
 */
export async function serverLabels(client: Client, ids: Iterable<string>): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  const labels = new Map<string, string>();
  try {
    for (let at = 0; at < unique.length; at += IDS_PER_CALL) {
      const page = await client.getServers({ all: true, filter: { id: { in: unique.slice(at, at + IDS_PER_CALL) }, time_deleted: { gte: 0 } } });
      for (const server of page.items) labels.set(server.id, serverLabel(server));
    }
  } catch (err) {
    if (err instanceof ServiceApiError) return new Map();
    throw err;
  }
  return labels;
}
