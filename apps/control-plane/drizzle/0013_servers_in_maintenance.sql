-- The servers in maintenance (maintenance_enter), as an index of its own: every execution
-- created asks whether one of its servers is in maintenance (ExecutionService.create), and
-- through this index the answer reads no server's JSON (their facts weigh about 10 KB each).
-- The state is written into the statement as a literal, for the planner to match this
-- predicate.
CREATE INDEX `servers_in_maintenance` ON `servers` (`id`) WHERE is_latest = 1 AND time_deleted = 0 AND json_extract(data, '$.state') = 'maintenance_no_reconfig';
