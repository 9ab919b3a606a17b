// What the system under bench:scale costs: the CPU time and memory of its processes (from
// /proc), and the statements PostgreSQL ran (pg_stat_statements).
import { readFileSync } from 'node:fs';
import pg from 'pg';

/** The statements PostgreSQL ran from `start` on, by time (`pg_stat_statements`). */
export class PostgresStatements {
  private constructor(private readonly client: pg.Client) {}

  static async start(url: string): Promise<PostgresStatements> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
    return new PostgresStatements(client);
  }

  /** Prints the 20 statements that took the most time, per execution, and closes. */
  async print(scenario: string, executions: number): Promise<void> {
    const top = await this.client.query<{ calls: string; ms: number; query: string }>(
      `SELECT calls, total_exec_time AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20`,
    );
    const all = await this.client.query<{ calls: string; ms: number }>('SELECT sum(calls) AS calls, sum(total_exec_time) AS ms FROM pg_stat_statements');
    await this.client.end();
    console.log(`\n${scenario}: PostgreSQL statements of the dispatch phase, per execution (calls, ms in the server)`);
    for (const row of top.rows) console.log(`${(Number(row.calls) / executions).toFixed(3)}  ${(row.ms / executions).toFixed(4)}  ${row.query}`);
    console.log(`all: ${(Number(all.rows[0]?.calls) / executions).toFixed(2)} statements, ${((all.rows[0]?.ms ?? 0) / executions).toFixed(3)} ms`);
  }
}

/** CPU ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS = 100;

export function procStats(pid: number): { rssKiB: number; cpuMs: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssKiB, cpuMs: (ticks * 1000) / TICKS };
}

/** CPU time (ms) of a process and of the children it waited for (fields 14–17 of /proc/<pid>/stat). */
function treeCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / TICKS;
  } catch {
    return 0; // gone
  }
}

/** CPU time (ms) of the PostgreSQL server: its postmaster, the backends alive and those it reaped. */
export function postgresCpuMs(postmaster: number | undefined): number {
  if (!postmaster) return 0;
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    children = [];
  }
  return treeCpuMs(postmaster) + children.reduce((sum, pid) => sum + treeCpuMs(pid), 0);
}
