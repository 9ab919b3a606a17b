-- The queue in the order its executions were stored (pk), as on SQLite (0012). Ordered by
-- time_created, each row read for a page computed the order's expression, parsing the row's
-- JSON, even though the index gave the order (auto_explain under bench:scale: 5 to 12 ms a
-- pass for 500 to 800 queued; a scratch database: 13.7 ms against 0.9 ms for 800 rows
-- ordered by pk); and before statistics some connections planned it through another index
-- and sorted. On pk there is nothing to compute and no other order to choose.
DROP INDEX "executions_queued";
--> statement-breakpoint
CREATE INDEX "executions_queued" ON "executions" (pk) WHERE is_latest = 1 AND time_deleted = 0 AND (NULLIF(data::jsonb #> '{state}', 'null'::jsonb)) = '"created"'::jsonb;
