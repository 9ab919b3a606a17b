import { randomUUID } from 'node:crypto';
import { and, asc, eq, gte, sql, type SQL } from 'drizzle-orm';
import type { ExecutionStepData } from '@carapace/models';
import { QueryBudgetExceeded, withQueryBudget, type Db } from './client.js';
import { budgetError, parseFilter, parseSort, type ModelFields } from './list-query.js';
import { executionArtifacts, executionLogChunks, executionSteps } from './schema/index.js';
import type { ListCursor, ListRequest, Page, Stored } from '../domain/list-types.js';
import { DEFAULT_LIMITS } from './versioned.repository.js';

const STEP_FIELDS: ModelFields = {
  data: [],
  defaultSort: [['time_finished', 1]],
  columns: {
    id: 'id',
    time_updated: 'time_updated',
    role: 'role',
    name: 'name',
    result: 'result',
    server_id: 'server_id',
    time_started: 'time_started',
    time_finished: 'time_finished',
  },
};

/** A step as the runner reports it. */
export interface StepInput {
  readonly role: string;
  readonly name: string;
  readonly result: string;
  readonly error: Record<string, unknown>;
  readonly serverId: string | null;
  readonly timeStarted: number;
  readonly timeFinished: number;
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
    },
  };
}

/** The steps and the log of executions; appends are idempotent. */
export class ExecutionEventsRepository {
  private readonly stepByRowid;

  /** `queryBudgetMs` bounds the time of one step list query (`withQueryBudget`). */
  constructor(
    private readonly db: Db,
    private readonly queryBudgetMs = DEFAULT_LIMITS.queryBudgetMs,
  ) {
    this.stepByRowid = db.$client.prepare<[number], StepRow>('SELECT * FROM execution_steps WHERE rowid = ?');
  }

  /** Stores a step once per `(execution, seq)`; true when it was new. */
  addStep(executionId: string, seq: number, step: StepInput, nowS: number): boolean {
    return (
      this.db
        .insert(executionSteps)
        .values({
          executionId,
          seq,
          id: randomUUID(),
          timeUpdated: nowS,
          role: step.role,
          name: step.name,
          result: step.result,
          error: step.error,
          serverId: step.serverId,
          timeStarted: step.timeStarted,
          timeFinished: step.timeFinished,
        })
        .onConflictDoNothing()
        .run().changes === 1
    );
  }

  /** A page of the steps of an execution, as step models. */
  listSteps(executionId: string, request: ListRequest): Page<Stored<ExecutionStepData>> {
    const { where, order } = this.stepClauses(executionId, request);
    const limit = sql` LIMIT ${request.perPage} OFFSET ${(request.page - 1) * request.perPage}`;
    const [total, rows] = this.budgeted(() => [
      this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM execution_steps WHERE ${where}`).n,
      this.db.all<StepRow>(sql`SELECT * FROM execution_steps WHERE ${where} ORDER BY ${order}${limit}`),
    ]);
    return { total, items: rows.map(stepModel) };
  }

  /**
   * Every step of an execution matching the request, read in batches (`ListCursor`): the
   * matching rowids are taken in order at once (a step is never rewritten), then each
   * `next()` reads a bounded number of rows and bytes, so an `all` answer never holds every
   * step in memory.
   */
  cursorSteps(executionId: string, request: ListRequest): ListCursor<Stored<ExecutionStepData>> {
    const { where, order } = this.stepClauses(executionId, request);
    const keys = this.budgeted(() => this.db.all<{ k: number }>(sql`SELECT rowid AS k FROM execution_steps WHERE ${where} ORDER BY ${order}`)).map((r) => r.k);
    let next = 0;
    return {
      total: keys.length,
      next: () => {
        const items: Stored<ExecutionStepData>[] = [];
        let bytes = 0;
        while (next < keys.length && items.length < STEP_BATCH_ROWS && bytes < STEP_BATCH_BYTES) {
          const row = this.stepByRowid.get(keys[next++] as number);
          if (!row) continue;
          items.push(stepModel(row));
          bytes += row.error.length + row.name.length + row.role.length;
        }
        return items;
      },
    };
  }

  private stepClauses(executionId: string, request: ListRequest): { where: SQL; order: SQL } {
    const filter = parseFilter(STEP_FIELDS, request.filter);
    const order = parseSort(STEP_FIELDS, request.sortBy);
    const where = filter.where ? sql`execution_id = ${executionId} AND ${filter.where} AND budget_check(rowid)` : sql`execution_id = ${executionId}`;
    return { where, order };
  }

  private budgeted<T>(fn: () => T): T {
    try {
      return withQueryBudget(this.db, this.queryBudgetMs, fn);
    } catch (e) {
      throw e instanceof QueryBudgetExceeded ? budgetError(e) : e;
    }
  }

  /** The last step of an execution that failed (`error` or `unreachable`), in the runner's order; null if none did. */
  lastFailedStep(executionId: string): StepInput | null {
    const row = this.db.get<StepRow | undefined>(
      sql`SELECT * FROM execution_steps WHERE execution_id = ${executionId} AND result IN ('error', 'unreachable') ORDER BY seq DESC LIMIT 1`,
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
   * Stores a file a run handed back, once per `(execution, name)` (a resent one is the
   * same); true when it was new.
   */
  addArtifact(executionId: string, seq: number, name: string, content: string): boolean {
    return this.db.insert(executionArtifacts).values({ executionId, name, seq, content }).onConflictDoNothing().run().changes === 1;
  }

  /** Whether the execution has a file of that name already. */
  hasArtifact(executionId: string, name: string): boolean {
    return (
      this.db
        .select({ name: executionArtifacts.name })
        .from(executionArtifacts)
        .where(and(eq(executionArtifacts.executionId, executionId), eq(executionArtifacts.name, name)))
        .get() !== undefined
    );
  }

  /** How many files the execution has. */
  countArtifacts(executionId: string): number {
    return this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM execution_artifacts WHERE execution_id = ${executionId}`).n;
  }

  /** The files of an execution, by name. */
  listArtifacts(executionId: string): { name: string; content: string }[] {
    return this.db
      .select({ name: executionArtifacts.name, content: executionArtifacts.content })
      .from(executionArtifacts)
      .where(eq(executionArtifacts.executionId, executionId))
      .orderBy(asc(executionArtifacts.name))
      .all();
  }

  /** Forgets the files of an execution (at its end). */
  removeArtifacts(executionId: string): void {
    this.db.delete(executionArtifacts).where(eq(executionArtifacts.executionId, executionId)).run();
  }

  /** Stores a log chunk once per `(execution, offset)`; true when it was new. */
  appendLog(executionId: string, offset: number, text: string): boolean {
    return this.db.insert(executionLogChunks).values({ executionId, offset, text }).onConflictDoNothing().run().changes === 1;
  }

  /**
   * The log from `fromOffset` on, as far as it is contiguous: chunks that arrived out of
   * order wait until the gap before them is filled. Returns the text and the next offset.
   * `maxChunks` bounds one read, so a follower far behind reads in bounded steps.
   */
  readLog(executionId: string, fromOffset = 0, maxChunks?: number): { text: string; next: number } {
    const query = this.db
      .select({ offset: executionLogChunks.offset, text: executionLogChunks.text })
      .from(executionLogChunks)
      .where(and(eq(executionLogChunks.executionId, executionId), gte(executionLogChunks.offset, fromOffset)))
      .orderBy(asc(executionLogChunks.offset));
    const rows = maxChunks ? query.limit(maxChunks).all() : query.all();
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
