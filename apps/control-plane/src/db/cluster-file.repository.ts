import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** The files of a cluster for its clients (ceph.conf, keyrings). */
export class ClusterFileRepository {
  constructor(private readonly db: Database) {}

  /** Stores or replaces a file. */
  async put(clusterId: string, name: string, content: string, nowS: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO cluster_files (cluster_id, name, content, time_updated) VALUES (${clusterId}, ${name}, ${content}, ${nowS})
      ON CONFLICT (cluster_id, name) DO UPDATE SET content = excluded.content, time_updated = excluded.time_updated`);
  }

  /** Every file of a cluster, by name. */
  list(clusterId: string): Promise<{ name: string; content: string }[]> {
    return this.db.all(sql`SELECT name, content FROM cluster_files WHERE cluster_id = ${clusterId} ORDER BY name`);
  }

  /** Forgets every file of a cluster (purge). */
  async removeAll(clusterId: string): Promise<void> {
    await this.db.run(sql`DELETE FROM cluster_files WHERE cluster_id = ${clusterId}`);
  }
}
