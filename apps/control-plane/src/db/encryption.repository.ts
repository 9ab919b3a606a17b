import { sql, type SQL } from 'drizzle-orm';
import type { Database } from './database.js';

/** The key the secrets are encrypted with, as the database records it (never the key). */
export interface StoredKey {
  readonly id: string;
  readonly checkValue: string;
}

/** One secret value as stored, with the context it is sealed in. */
export interface SecretValue {
  readonly context: string;
  readonly value: string;
}

/**
 * Every column that holds a secret, with the context its values are sealed in (the table and
 * the row: a sealed value copied into another row does not open there). The repositories of
 * these tables seal with the same contexts (`secretContext`).
 */
const SECRET_COLUMNS: readonly {
  readonly select: SQL;
  readonly update: (value: string, row: Record<string, string | number>) => SQL;
  readonly context: (row: Record<string, string | number>) => string;
}[] = [
  {
    select: sql`SELECT name, value FROM secrets ORDER BY name`,
    context: (r) => secretContext.secret(String(r.name)),
    update: (v, r) => sql`UPDATE secrets SET value = ${v} WHERE name = ${r.name}`,
  },
  {
    select: sql`SELECT cluster_id, name, content AS value FROM cluster_files ORDER BY cluster_id, name`,
    context: (r) => secretContext.clusterFile(String(r.cluster_id), String(r.name)),
    update: (v, r) => sql`UPDATE cluster_files SET content = ${v} WHERE cluster_id = ${r.cluster_id} AND name = ${r.name}`,
  },
  {
    select: sql`SELECT execution_id, name, content AS value FROM execution_artifacts ORDER BY execution_id, name`,
    context: (r) => secretContext.artifact(String(r.execution_id), String(r.name)),
    update: (v, r) => sql`UPDATE execution_artifacts SET content = ${v} WHERE execution_id = ${r.execution_id} AND name = ${r.name}`,
  },
  {
    select: sql`SELECT id, body AS value FROM mail_outbox ORDER BY id`,
    context: () => secretContext.mail(),
    update: (v, r) => sql`UPDATE mail_outbox SET body = ${v} WHERE id = ${r.id}`,
  },
];

/** The context each secret column's values are sealed in. */
export const secretContext = {
  secret: (name: string) => `secrets:${name}`,
  clusterFile: (clusterId: string, name: string) => `cluster_files:${clusterId}/${name}`,
  artifact: (executionId: string, name: string) => `execution_artifacts:${executionId}/${name}`,
  // A mail is sealed before its row (and its id) exists.
  mail: () => 'mail_outbox',
};

/** The record of the key the secrets are encrypted with, and every secret value (for encryption and rotation). */
export class EncryptionRepository {
  constructor(private readonly db: Database) {}

  /** The key the secrets are encrypted with; undefined while they are in clear. */
  current(): Promise<StoredKey | undefined> {
    return this.db.get<StoredKey>(sql`SELECT id, check_value AS "checkValue" FROM encryption_keys ORDER BY time_created DESC LIMIT 1`);
  }

  /**
   * Records the key the secrets are (now) encrypted with, if none is recorded; true when this
   * call recorded it. Inside a transaction; on PostgreSQL, replicas starting together take
   * turns (a transaction-scoped advisory lock), so that the second sees the first's key.
   */
  async claim(key: StoredKey, nowS: number): Promise<boolean> {
    const lock = this.db.engine.lockNamed('carapace.encryption_keys');
    if (lock) await this.db.run(lock);
    return (await this.db.run(sql`
      INSERT INTO encryption_keys (id, check_value, time_created)
      SELECT ${key.id}, ${key.checkValue}, ${nowS} WHERE NOT EXISTS (SELECT 1 FROM encryption_keys)`)) === 1;
  }

  /** Replaces the recorded key (a rotation, inside its transaction). */
  async replace(key: StoredKey, nowS: number): Promise<void> {
    await this.db.run(sql`DELETE FROM encryption_keys`);
    await this.db.run(sql`INSERT INTO encryption_keys (id, check_value, time_created) VALUES (${key.id}, ${key.checkValue}, ${nowS})`);
  }

  /**
   * Rewrites every secret value with `change` (called with the stored value and its
   * context; a value it returns unchanged is not written). Returns how many were rewritten.
   * Run it inside a transaction: all or nothing.
   */
  async rewriteAll(change: (value: string, context: string) => string): Promise<number> {
    let changed = 0;
    for (const column of SECRET_COLUMNS) {
      const rows = await this.db.all<Record<string, string | number> & { value: string }>(column.select);
      for (const row of rows) {
        const context = column.context(row);
        const next = change(row.value, context);
        if (next === row.value) continue;
        await this.db.run(column.update(next, row));
        changed++;
      }
    }
    return changed;
  }

  /** Every secret value with its context (to check that each opens). */
  async all(): Promise<SecretValue[]> {
    const values: SecretValue[] = [];
    for (const column of SECRET_COLUMNS) {
      for (const row of await this.db.all<Record<string, string | number> & { value: string }>(column.select)) {
        values.push({ context: column.context(row), value: row.value });
      }
    }
    return values;
  }
}
