-- Expression indexes on the JSON `data` of clusters, servers and executions. Queries must
-- use the very same expression, json_extract(data, '$.<field>'), for SQLite to use them.
CREATE UNIQUE INDEX `clusters_name_live` ON `clusters` (json_extract(data, '$.name')) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX `servers_name_live` ON `servers` (json_extract(data, '$.name')) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX `servers_cluster_live` ON `servers` (json_extract(data, '$.cluster_id')) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX `executions_state_latest` ON `executions` (json_extract(data, '$.state')) WHERE is_latest = 1;
--> statement-breakpoint
CREATE INDEX `playbook_configurations_time_live` ON `playbook_configurations` (time_updated) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX `executions_time_live` ON `executions` (time_updated) WHERE is_latest = 1 AND time_deleted = 0;
