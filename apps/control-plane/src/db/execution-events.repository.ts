import { randomUUID } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import type { ExecutionStepData, StepPreview } from '@carapace/models';
import { QueryBudgetExceeded, RejectedPattern, type Database } from './database.js';
import { budgetError, patternError, parseFilter, parseSort, type ModelFields } from './list-query.js';
import type { ListCursor, ListRequest, Page, Stored } from '../domain/list-types.js';
import { DEFAULT_LIMITS } from './versioned.repository.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { secretContext } from './encryption.repository.js';

const STEP_FIELDS: ModelFields = {
  data: [],
  defaultSort: [['time_finished', 1]],
  columns: {
    id: ['id', 'text'],
    time_updated: ['time_updated', 'number'],
    role: ['role', 'text'],
    name: ['name', 'text'],
    result: ['result', 'text'],
    server_id: ['server_id', 'text'],
    time_started: ['time_started', 'number'],
    time_finished: ['time_finished', 'number'],
  },
  // The runner's order: a step's sequence number within its execution.
  tiebreak: 'seq',
};
const STEP_COLUMNS = sql.raw('id, execution_id, time_updated, role, name, result, error, server_id, time_started, time_finished, preview');

/** Which event of an execution: the runner's sequence number of it. */
export interface EventKey {
  readonly executionId: string;
  readonly seq: number;
}

/** A chunk of an execution's log, at its offset. */
export interface LogChunkInput {
  readonly executionId: string;
  readonly offset: number;
  readonly text: string;
}

/** A step as the runner reports it. */
export interface StepInput {
  readonly role: string;
  readonly name: string;
  readonly result: string;
  readonly error: Record<string, unknown>;
  readonly serverId: string | null;
  readonly timeStarted: number;
  readonly timeFinished: number;
  /** A preview's verdict on the task; null (or absent) in a real run. */
  readonly preview?: StepPreview | null;
}

interface StepRow {
  id: string;
  execution_id: string;
  time_updated: number;
  role: string;
  name: string;
  result: string;
  error: string;
  server_id: string | null;
  time_started: number;
  time_finished: number;
  preview: string | null;
}

/** The most steps, and about the most bytes, one `cursorSteps` batch reads. */
const STEP_BATCH_ROWS = 256;
const STEP_BATCH_BYTES = 512 * 1024;

/** A stored step as the API serves it. */
function stepModel(r: StepRow): Stored<ExecutionStepData> {
  return {
    id: r.id,
    version: 1,
    time_updated: r.time_updated,
    time_deleted: 0,
    initiator_id: null,
    data: {
      execution_id: r.execution_id,
      role: r.role,
      name: r.name,
      result: r.result,
      error: JSON.parse(r.error) as Record<string, unknown>,
      server_id: r.server_id,
      time_started: r.time_started,
      time_finished: r.time_finished,
      ...(r.preview ? { preview: JSON.parse(r.preview) as StepPreview } : {}),
    },
  };
}

/** The steps and the log of executions; appends are idempotent. Files a run hands back are stored encrypted (keyrings). */
export class ExecutionEventsRepository {
  /** `queryBudgetMs` bounds the time of one step list query (`Database.withBudget`). */
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly queryBudgetMs = DEFAULT_LIMITS.queryBudgetMs,
  ) {}

  /**
   * Stores steps, each once per `(execution, seq)`, in one statement; returns the keys of
   * those that were new.
   */
  async addSteps(steps: readonly (StepInput & EventKey)[], nowS: number): Promise<EventKey[]> {
    if (steps.length === 0) return [];
    const columns = sql.raw('execution_id, seq, id, time_updated, role, name, result, error, server_id, time_started, time_finished, preview');
    const rows = steps.map(
      (s) =>
        [s.executionId, s.seq, randomUUID(), nowS, s.role, s.name, s.result, JSON.stringify(s.error), s.serverId, s.timeStarted, s.timeFinished, s.preview ? JSON.stringify(s.preview) : null] as const,
    );
    const source = this.db.engine.rowSource(rows, ['text', 'int8', 'text', 'int8', 'text', 'text', 'text', 'text', 'text', 'int8', 'int8', 'text']);
    return this.db.all<EventKey>(sql`
      INSERT INTO execution_steps (${columns}) ${source}
      ON CONFLICT (execution_id, seq) DO NOTHING RETURNING execution_id AS "executionId", seq`);
  }

  /** A page of the steps of an execution, as step models. */
  async listSteps(executionId: string, request: ListRequest): Promise<Page<Stored<ExecutionStepData>>> {
    const { where, order } = this.stepClauses(executionId, request);
    const limit = sql` LIMIT ${request.perPage} OFFSET ${(request.page - 1) * request.perPage}`;
    const [total, rows] = await this.budgeted(async () => [
      (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM execution_steps WHERE ${where}`))?.n ?? 0,
      await this.db.all<StepRow>(sql`SELECT ${STEP_COLUMNS} FROM execution_steps WHERE ${where} ORDER BY ${order}${limit}`),
    ] as const);
    return { total, items: rows.map(stepModel) };
  }

  /**
   * Every step of an execution matching the request, read in batches (`ListCursor`): the
   * matching sequence numbers are taken in order at once (a step is never rewritten), then
   * each `next()` reads a bounded number of rows and bytes, so an `all` answer never holds
   * every step in memory.
   */
  async cursorSteps(executionId: string, request: ListRequest): Promise<ListCursor<Stored<ExecutionStepData>>> {
    const { where, order } = this.stepClauses(executionId, request);
    const keys = (await this.budgeted(() => this.db.all<{ k: number }>(sql`SELECT seq AS k FROM execution_steps WHERE ${where} ORDER BY ${order}`))).map(
      (r) => r.k,
    );
    let next = 0;
    return {
      total: keys.length,
      next: async () => {
        const items: Stored<ExecutionStepData>[] = [];
        let bytes = 0;
        while (next < keys.length && items.length < STEP_BATCH_ROWS && bytes < STEP_BATCH_BYTES) {
          const row = await this.db.get<StepRow>(
            sql`SELECT ${STEP_COLUMNS} FROM execution_steps WHERE execution_id = ${executionId} AND seq = ${keys[next++] as number}`,
          );
          if (!row) continue;
          items.push(stepModel(row));
          bytes += row.error.length + row.name.length + row.role.length;
        }
        return items;
      },
    };
  }

  private stepClauses(executionId: string, request: ListRequest): { where: SQL; order: SQL } {
    const engine = this.db.engine;
    const filter = parseFilter(STEP_FIELDS, request.filter, { engine });
    const order = parseSort(STEP_FIELDS, request.sortBy, { engine });
    if (!filter.where) return { where: sql`execution_id = ${executionId}`, order };
    const check = engine.budgetCheck('seq');
    const budget = check ? sql` AND ${check}` : sql``;
    return { where: sql`execution_id = ${executionId} AND ${filter.where}${budget}`, order };
  }

  private async budgeted<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await this.db.withBudget(this.queryBudgetMs, fn);
    } catch (e) {
      if (e instanceof RejectedPattern) throw patternError(e);
      throw e instanceof QueryBudgetExceeded ? budgetError(e) : e;
    }
  }

  /** The last step of an execution that failed (`error` or `unreachable`), in the runner's order; null if none did. */
  async lastFailedStep(executionId: string): Promise<StepInput | null> {
    const row = await this.db.get<StepRow>(
      sql`SELECT ${STEP_COLUMNS} FROM execution_steps WHERE execution_id = ${executionId} AND result IN ('error', 'unreachable') ORDER BY seq DESC LIMIT 1`,
    );
    if (!row) return null;
    return {
      role: row.role,
      name: row.name,
      result: row.result,
      error: JSON.parse(row.error) as Record<string, unknown>,
      serverId: row.server_id,
      timeStarted: row.time_started,
      timeFinished: row.time_finished,
    };
  }

  /**
   * The servers of an execution that failed on their own: a step `error` or `unreachable`
   * whose error the task did not ignore (`ignored` in the error object, set from the
   * runner's `StepEvent.ignored`). Steps of no known server are left out.
   */
  async failedServers(executionId: string): Promise<string[]> {
    const rows = await this.db.all<{ server_id: string | null; error: string }>(
      sql`SELECT server_id, error FROM execution_steps WHERE execution_id = ${executionId} AND result IN ('error', 'unreachable') ORDER BY seq`,
    );
    const failed = new Set<string>();
    for (const row of rows) {
      if (!row.server_id) continue;
      const error = JSON.parse(row.error) as Record<string, unknown>;
      if (error.ignored === true) continue;
      failed.add(row.server_id);
    }
    return [...failed];
  }

  /**
   * The preview verdicts of an execution's steps in the runner's order, at most `limit`:
   * server, role, task name and verdict (steps without one are left out).
   */
  async previewSteps(executionId: string, limit: number): Promise<{ serverId: string | null; role: string; name: string; preview: StepPreview }[]> {
    const rows = await this.db.all<{ server_id: string | null; role: string; name: string; preview: string }>(
      sql`SELECT server_id, role, name, preview FROM execution_steps WHERE execution_id = ${executionId} AND preview IS NOT NULL ORDER BY seq LIMIT ${limit}`,
    );
    return rows.map((r) => ({ serverId: r.server_id, role: r.role, name: r.name, preview: JSON.parse(r.preview) as StepPreview }));
  }

  /**
   * Stores a file a run handed back, once per `(execution, name)` (a resent one is the
   * same); true when it was new.
   */
  async addArtifact(executionId: string, seq: number, name: string, content: string): Promise<boolean> {
    const changed = await this.db.run(sql`
      INSERT INTO execution_artifacts (execution_id, name, seq, content) VALUES (${executionId}, ${name}, ${seq}, ${this.box.seal(content, secretContext.artifact(executionId, name))})
      ON CONFLICT (execution_id, name) DO NOTHING`);
    return changed === 1;
  }

  /** Whether the execution has a file of that name already. */
  async hasArtifact(executionId: string, name: string): Promise<boolean> {
    const row = await this.db.get(sql`SELECT name FROM execution_artifacts WHERE execution_id = ${executionId} AND name = ${name}`);
    return row !== undefined;
  }

  /** How many files the execution has. */
  async countArtifacts(executionId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM execution_artifacts WHERE execution_id = ${executionId}`))?.n ?? 0;
  }

  /** Forgets the files of an execution (at its end). */
  async removeArtifacts(executionId: string): Promise<void> {
    await this.db.run(sql`DELETE FROM execution_artifacts WHERE execution_id = ${executionId}`);
  }

  /** Forgets the files of executions (at their end) and returns them: by execution, each one's sorted by name. */
  async takeArtifacts(executionIds: readonly string[]): Promise<Map<string, { name: string; content: string }[]>> {
    const byExecution = new Map<string, { name: string; content: string }[]>();
    if (executionIds.length === 0) return byExecution;
    const files = await this.db.all<{ executionId: string; name: string; content: string }>(
      sql`DELETE FROM execution_artifacts WHERE execution_id IN (${this.db.engine.textList(executionIds)}) RETURNING execution_id AS "executionId", name, content`,
    );
    files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const { executionId, name, content } of files) {
      const own = byExecution.get(executionId) ?? [];
      own.push({ name, content: this.box.open(content, secretContext.artifact(executionId, name)) });
      byExecution.set(executionId, own);
    }
    return byExecution;
  }

  /**
   * Stores log chunks, each once per `(execution, offset)`, in one statement; returns those
   * that were new.
   */
  async appendLogs(chunks: readonly LogChunkInput[]): Promise<LogChunkInput[]> {
    if (chunks.length === 0) return [];
    const rows = chunks.map((c) => [c.executionId, c.offset, c.text] as const);
    const source = this.db.engine.rowSource(rows, ['text', 'int8', 'text']);
    const added = await this.db.all<{ executionId: string; offset: number }>(sql`
      INSERT INTO execution_log_chunks (execution_id, "offset", text) ${source}
      ON CONFLICT (execution_id, "offset") DO NOTHING RETURNING execution_id AS "executionId", "offset"`);
    const stored = new Set(added.map((a) => `${a.offset} ${a.executionId}`));
    // A chunk sent twice in one batch is stored once, and counted once.
    return chunks.filter((c) => stored.delete(`${c.offset} ${c.executionId}`));
  }

  /**
   * The log from `fromOffset` on, as far as it is contiguous: chunks that arrived out of
   * order wait until the gap before them is filled. Returns the text and the next offset.
   * `maxChunks` bounds one read, so a follower far behind reads in bounded steps.
   */
  async readLog(executionId: string, fromOffset = 0, maxChunks?: number): Promise<{ text: string; next: number }> {
    const limit = maxChunks ? sql` LIMIT ${maxChunks}` : sql``;
    const rows = await this.db.all<{ offset: number; text: string }>(sql`
      SELECT "offset", text FROM execution_log_chunks
       WHERE execution_id = ${executionId} AND "offset" >= ${fromOffset}
       ORDER BY "offset"${limit}`);
    const parts: string[] = [];
    let next = fromOffset;
    for (const row of rows) {
      if (row.offset > next) break;
      if (row.offset + row.text.length <= next) continue;
      parts.push(row.text.slice(next - row.offset));
      next = row.offset + row.text.length;
    }
    return { text: parts.join(''), next };
  }
}
