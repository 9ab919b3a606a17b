import { asc, eq } from 'drizzle-orm';
import type { Db } from './client.js';
import { clusterFiles } from './schema/index.js';

/** The files of a cluster for its clients (ceph.conf, keyrings). */
export class ClusterFileRepository {
  constructor(private readonly db: Db) {}

  /** Stores or replaces a file. */
  put(clusterId: string, name: string, content: string, nowS: number): void {
    this.db
      .insert(clusterFiles)
      .values({ clusterId, name, content, timeUpdated: nowS })
      .onConflictDoUpdate({ target: [clusterFiles.clusterId, clusterFiles.name], set: { content, timeUpdated: nowS } })
      .run();
  }

  /** Every file of a cluster, by name. */
  list(clusterId: string): { name: string; content: string }[] {
    return this.db
      .select({ name: clusterFiles.name, content: clusterFiles.content })
      .from(clusterFiles)
      .where(eq(clusterFiles.clusterId, clusterId))
      .orderBy(asc(clusterFiles.name))
      .all();
  }

  /** Forgets every file of a cluster (purge). */
  removeAll(clusterId: string): void {
    this.db.delete(clusterFiles).where(eq(clusterFiles.clusterId, clusterId)).run();
  }
}
