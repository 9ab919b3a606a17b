import { versionedTable } from './versioned.js';

/** Servers, every version; the id is the host's hardware UUID. Indexed on cluster_id. */
export const servers = versionedTable('servers');
