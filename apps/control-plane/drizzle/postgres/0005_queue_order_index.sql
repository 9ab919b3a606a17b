-- The queue's index in the queue's order. Dispatch reads the oldest queued executions first,
-- NULLs first then pk (`parseSort`, SQLite's order: its indexes end in the rowid, which is
-- pk). This index, from 0004, put NULLs last and ended in nothing, so it gave the queued rows
-- but not their order: PostgreSQL read every queued execution, decoding each one's JSON, and
-- sorted them all for each page (8 ms a pass with 500 queued, measured by auto_explain under
-- bench:scale). In the queue's order, a pass reads its page and stops (0.1 ms).
DROP INDEX "executions_queued";
--> statement-breakpoint
CREATE INDEX "executions_queued" ON "executions" ((NULLIF(data::jsonb #> '{time_created}', 'null'::jsonb)) ASC NULLS FIRST, pk) WHERE is_latest = 1 AND time_deleted = 0 AND (NULLIF(data::jsonb #> '{state}', 'null'::jsonb)) = '"created"'::jsonb;
