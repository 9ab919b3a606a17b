-- The servers in maintenance (maintenance_enter), as an index of its own: every execution
-- created asks whether one of its servers is in maintenance (ExecutionService.create), and
-- through this index the answer decodes no server's JSON. The state is written into the
-- statement as a literal: a bound parameter cannot prove this predicate.
CREATE INDEX "servers_in_maintenance" ON "servers" ("id") WHERE is_latest = 1 AND time_deleted = 0 AND (NULLIF(data::jsonb #> '{state}', 'null'::jsonb)) = '"maintenance_no_reconfig"'::jsonb;
