import { sql, type SQL } from 'drizzle-orm';

/**
 * A piece of a statement that a repository made for a statement of its own or of another
 * repository, opaque outside `db/`: a service combines the pieces of several repositories and
 * hands them on, without writing or reading SQL (lint keeps `drizzle-orm` inside `db/`).
 * `K` says what it is, so that one kind cannot stand for another.
 */
export class StatementPart<K extends 'condition' | 'ids' | 'statement'> {
  declare readonly kind: K;
  readonly #sql: SQL;

  private constructor(query: SQL) {
    this.#sql = query;
  }

  /** For `db/`: the piece this SQL is. */
  static of<K extends 'condition' | 'ids' | 'statement'>(query: SQL): StatementPart<K> {
    return new StatementPart<K>(query);
  }

  /** For `db/`: the SQL of a piece, to put in a statement. */
  static sql(part: StatementPart<'condition' | 'ids' | 'statement'>): SQL {
    return part.#sql;
  }
}

/** A condition (the model is live, a field has a value, one of some servers is in maintenance). */
export type Condition = StatementPart<'condition'>;
/** A subquery that selects ids (of the models a statement read). */
export type IdSubquery = StatementPart<'ids'>;
/** A whole statement (an `INSERT … RETURNING`, say), run together with another. */
export type Statement = StatementPart<'statement'>;

/** Conditions as a service combines them. */
export const Conditions = {
  /** Every one of `parts` holds (those undefined left out; none at all: true). */
  all(...parts: readonly (Condition | undefined)[]): Condition {
    const given = parts.filter((p): p is Condition => p !== undefined);
    if (given.length === 1) return given[0] as Condition;
    if (given.length === 0) return StatementPart.of(sql`1 = 1`);
    return StatementPart.of(sql`(${sql.join(
      given.map((p) => StatementPart.sql(p)),
      sql` AND `,
    )})`);
  },

  /** `condition` does not hold. */
  not(condition: Condition): Condition {
    return StatementPart.of(sql`NOT (${StatementPart.sql(condition)})`);
  },
};
