import { sql } from 'drizzle-orm';
import type { SecretBox } from '../secrets/secret-box.js';
import type { Database } from './database.js';
import { secretContext } from './encryption.repository.js';

/** The files of a cluster for its clients (ceph.conf, keyrings), stored encrypted (they hold Ceph keys). */
export class ClusterFileRepository {
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
  ) {}

  /** Stores or replaces a file. */
  async put(clusterId: string, name: string, content: string, nowS: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO cluster_files (cluster_id, name, content, time_updated) VALUES (${clusterId}, ${name}, ${this.box.seal(content, secretContext.clusterFile(clusterId, name))}, ${nowS})
      ON CONFLICT (cluster_id, name) DO UPDATE SET content = excluded.content, time_updated = excluded.time_updated`);
  }

  /** Every file of a cluster, by name. */
  async list(clusterId: string): Promise<{ name: string; content: string }[]> {
    const rows = await this.db.all<{ name: string; content: string }>(sql`SELECT name, content FROM cluster_files WHERE cluster_id = ${clusterId} ORDER BY name`);
    return rows.map((r) => ({ name: r.name, content: this.box.open(r.content, secretContext.clusterFile(clusterId, r.name)) }));
  }

  /** Forgets every file of a cluster (purge). */
  async removeAll(clusterId: string): Promise<void> {
    await this.db.run(sql`DELETE FROM cluster_files WHERE cluster_id = ${clusterId}`);
  }
}
