-- The queue of executions waiting to start, oldest first, as an index of its own: dispatch
-- reads it at every pass (`ExecutionClaims`). Without it, PostgreSQL's plan for the queue
-- depends on statistics of the state expression: before autovacuum has analyzed the table
-- (a new installation, a burst of executions), it read every live execution in creation
-- order, decoding each one's JSON to find the few still queued (about 100 ms per pass with
-- 20,000 executions ended; 1 ms with this index). The state is written into the statement
-- as a literal: a bound parameter cannot prove this predicate.
CREATE INDEX "executions_queued" ON "executions" ((NULLIF(data::jsonb #> '{time_created}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0 AND (NULLIF(data::jsonb #> '{state}', 'null'::jsonb)) = '"created"'::jsonb;
