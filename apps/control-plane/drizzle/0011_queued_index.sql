-- The queue of executions waiting to start, oldest first, as an index of its own: dispatch
-- reads it at every pass (`ExecutionClaims`), and through this index a pass reads only the
-- queued executions, however many ended before them. The state is written into the
-- statement as a literal, for the planner to match this predicate.
CREATE INDEX `executions_queued` ON `executions` (json_extract(data, '$.time_created')) WHERE is_latest = 1 AND time_deleted = 0 AND json_extract(data, '$.state') = 'created';
