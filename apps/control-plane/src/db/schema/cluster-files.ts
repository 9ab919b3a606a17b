import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Files of a deployed cluster that clients need (ceph.conf, client keyrings). */
export const clusterFiles = sqliteTable(
  'cluster_files',
  {
    clusterId: text('cluster_id').notNull(),
    name: text('name').notNull(),
    content: text('content').notNull(),
    timeUpdated: integer('time_updated').notNull(),
  },
  (t) => [primaryKey({ columns: [t.clusterId, t.name] })],
);
