import { existsSync } from 'node:fs';
import { getTableName, sql } from 'drizzle-orm';
import { getTableConfig } from 'drizzle-orm/sqlite-core';
import { databaseProblem, isPostgresUrl, openDatabase } from './client.js';
import type { Database } from './database.js';
import * as schema from './schema/index.js';

/** Rows copied per INSERT. */
const BATCH_ROWS = 500;
/** Tables whose rows live only as long as a process or a window: not copied. */
const EPHEMERAL = new Set(['runner_sessions', 'throttle_events']);
/** Columns whose values PostgreSQL draws from a sequence, to move past the copied rows. */
const SERIAL_COLUMNS: Readonly<Record<string, string>> = {
  users: 'pk',
  roles: 'pk',
  clusters: 'pk',
  servers: 'pk',
  playbook_configurations: 'pk',
  executions: 'pk',
  mail_outbox: 'id',
  notification_attempts: 'id',
};

/** What `copyToPostgres` copied: rows by table. */
export interface CopyReport {
  readonly tables: { readonly name: string; readonly rows: number }[];
}

/** Why a copy was refused (the target is not empty, the source is missing...). */
export class CopyRefused extends Error {}

function tablesToCopy(): { name: string; columns: string[] }[] {
  return Object.values(schema)
    .map((table) => ({ name: getTableName(table), columns: getTableConfig(table).columns.map((c) => c.name) }))
    .filter((t) => !EPHEMERAL.has(t.name));
}

/**
 * Copies an SQLite installation's tables into a PostgreSQL database: the target is migrated
 * first and must hold no rows yet; every table is copied in one transaction (all or nothing),
 * in batches, then the sequences move past the copied keys, and the row counts of both
 * sides are compared before the commit. Process-bound tables (runner sessions, throttle
 * counts) are left behind. The SQLite file is only read.
 */
export async function copyToPostgres(sqlitePath: string, url: string, onTable?: (name: string, rows: number) => void): Promise<CopyReport> {
  if (!isPostgresUrl(url)) throw new CopyRefused('the target must be a postgres:// URL');
  if (sqlitePath !== ':memory:' && !existsSync(sqlitePath)) throw new CopyRefused(`no SQLite database at ${sqlitePath}`);
  const source = await openDatabase(sqlitePath, { readonly: true });
  let target: Database | null = null;
  try {
    const behind = await databaseProblem(source);
    if (behind) throw new CopyRefused(`the SQLite database is not at this release's schema (${behind}): start this release on it once, then stop it and copy`);
    target = await openDatabase(url, { poolSize: 2 });
    const into = target;
    const tables = tablesToCopy();
    for (const { name } of tables) {
      const row = await into.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${sql.identifier(name)}`);
      if ((row?.n ?? 0) > 0) throw new CopyRefused(`the target database is not empty: ${name} has rows (copy into a new database)`);
    }
    const report: { name: string; rows: number }[] = [];
    await into.transaction(async () => {
      for (const { name, columns } of tables) {
        const rows = await copyTable(source, into, name, columns);
        const serial = SERIAL_COLUMNS[name];
        if (serial) {
          await into.run(
            sql`SELECT setval(pg_get_serial_sequence(${name}, ${serial}), coalesce((SELECT max(${sql.identifier(serial)}) FROM ${sql.identifier(name)}), 0) + 1, false)`,
          );
        }
        const copied = await into.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${sql.identifier(name)}`);
        if ((copied?.n ?? 0) !== rows) throw new Error(`${name}: ${rows} rows read, ${copied?.n ?? 0} in the target`);
        report.push({ name, rows });
        onTable?.(name, rows);
      }
    });
    return { tables: report };
  } finally {
    await target?.close();
    await source.close();
  }
}

async function copyTable(source: Database, target: Database, name: string, columns: string[]): Promise<number> {
  const list = sql.join(
    columns.map((c) => sql.identifier(c)),
    sql`, `,
  );
  let copied = 0;
  // In rowid order, a batch at a time: the source is never read whole into memory.
  for (let after = 0; ; ) {
    const rows = await source.all<Record<string, unknown> & { _rowid: number }>(
      sql`SELECT rowid AS _rowid, ${list} FROM ${sql.identifier(name)} WHERE rowid > ${after} ORDER BY rowid LIMIT ${BATCH_ROWS}`,
    );
    if (rows.length === 0) return copied;
    const values = sql.join(
      rows.map(
        (row) =>
          sql`(${sql.join(
            columns.map((c) => sql`${row[c] ?? null}`),
            sql`, `,
          )})`,
      ),
      sql`, `,
    );
    await target.run(sql`INSERT INTO ${sql.identifier(name)} (${list}) VALUES ${values}`);
    copied += rows.length;
    after = rows[rows.length - 1]?._rowid ?? after;
  }
}
