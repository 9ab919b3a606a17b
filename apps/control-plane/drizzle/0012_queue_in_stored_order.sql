-- The queue in the order its executions were stored (pk): dispatch reads it a page at a time
-- after the last key it read (`ExecutionClaims`), and nothing of a row but its key, id and
-- version is computed. time_created counts whole seconds and ties were broken by pk, and a
-- queued execution is never written again until it leaves the queue: the order is the one
-- the queue had, except that replicas' clocks no longer decide it.
DROP INDEX `executions_queued`;
--> statement-breakpoint
CREATE INDEX `executions_queued` ON `executions` (`pk`) WHERE is_latest = 1 AND time_deleted = 0 AND json_extract(data, '$.state') = 'created';
