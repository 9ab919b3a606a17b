-- Custom SQL migration file, put your code below! --
-- The indexes of the SQLite migrations 0001, 0003 and 0005 (their final state: 0005 drops
-- the plain (is_latest, time_deleted) indexes, which this schema never had), with the same
-- names, uniqueness and partial WHERE clauses. The JSON field `a.b` of `data` (JSON text) is
-- the expression (NULLIF(data::jsonb #> '{a,b}', 'null'::jsonb)): queries must use the very
-- same expression for PostgreSQL to use these indexes. A JSON null, like an absent field,
-- is SQL NULL, as with SQLite's json_extract, so it never collides in a unique index.
CREATE UNIQUE INDEX "users_login_live" ON "users" ((NULLIF(data::jsonb #> '{login}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_live" ON "users" ((NULLIF(data::jsonb #> '{email}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX "users_full_name_live" ON "users" ((NULLIF(data::jsonb #> '{full_name}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE UNIQUE INDEX "roles_name_live" ON "roles" ((NULLIF(data::jsonb #> '{name}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE UNIQUE INDEX "clusters_name_live" ON "clusters" ((NULLIF(data::jsonb #> '{name}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX "servers_name_live" ON "servers" ((NULLIF(data::jsonb #> '{name}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX "servers_cluster_live" ON "servers" ((NULLIF(data::jsonb #> '{cluster_id}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX "executions_state_latest" ON "executions" ((NULLIF(data::jsonb #> '{state}', 'null'::jsonb))) WHERE is_latest = 1;
--> statement-breakpoint
CREATE INDEX "playbook_configurations_time_live" ON "playbook_configurations" (time_updated) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX "executions_time_live" ON "executions" (time_updated) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
-- The default order of the execution list (newest created first).
CREATE INDEX "executions_time_created_live" ON "executions" ((NULLIF(data::jsonb #> '{time_created}', 'null'::jsonb))) WHERE is_latest = 1 AND time_deleted = 0;
