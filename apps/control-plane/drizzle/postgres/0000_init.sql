CREATE TABLE "change_counters" (
	"name" text PRIMARY KEY NOT NULL,
	"value" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cluster_files" (
	"cluster_id" text NOT NULL,
	"name" text NOT NULL,
	"content" text NOT NULL,
	"time_updated" bigint NOT NULL,
	CONSTRAINT "cluster_files_cluster_id_name_pk" PRIMARY KEY("cluster_id","name")
);
--> statement-breakpoint
CREATE TABLE "clusters" (
	"pk" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"version" bigint NOT NULL,
	"time_updated" bigint NOT NULL,
	"time_deleted" bigint DEFAULT 0 NOT NULL,
	"initiator_id" text,
	"is_latest" smallint NOT NULL,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credentials" (
	"user_id" text PRIMARY KEY NOT NULL,
	"password_hash" text NOT NULL,
	"time_updated" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "execution_artifacts" (
	"execution_id" text NOT NULL,
	"name" text NOT NULL,
	"seq" bigint NOT NULL,
	"content" text NOT NULL,
	CONSTRAINT "execution_artifacts_execution_id_name_pk" PRIMARY KEY("execution_id","name")
);
--> statement-breakpoint
CREATE TABLE "execution_log_chunks" (
	"execution_id" text NOT NULL,
	"offset" bigint NOT NULL,
	"text" text NOT NULL,
	CONSTRAINT "execution_log_chunks_execution_id_offset_pk" PRIMARY KEY("execution_id","offset")
);
--> statement-breakpoint
CREATE TABLE "execution_steps" (
	"execution_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"id" text NOT NULL,
	"time_updated" bigint NOT NULL,
	"role" text NOT NULL,
	"name" text NOT NULL,
	"result" text NOT NULL,
	"error" text NOT NULL,
	"server_id" text,
	"time_started" bigint NOT NULL,
	"time_finished" bigint NOT NULL,
	CONSTRAINT "execution_steps_execution_id_seq_pk" PRIMARY KEY("execution_id","seq")
);
--> statement-breakpoint
CREATE TABLE "executions" (
	"pk" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"version" bigint NOT NULL,
	"time_updated" bigint NOT NULL,
	"time_deleted" bigint DEFAULT 0 NOT NULL,
	"initiator_id" text,
	"is_latest" smallint NOT NULL,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mail_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"recipient" text NOT NULL,
	"subject" text NOT NULL,
	"body" text NOT NULL,
	"time_created_ms" bigint NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"next_attempt_ms" bigint NOT NULL,
	"last_error" text
);
--> statement-breakpoint
CREATE TABLE "notification_attempts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"delivery_id" text NOT NULL,
	"attempt" bigint NOT NULL,
	"time_ms" bigint NOT NULL,
	"duration_ms" bigint NOT NULL,
	"status" bigint,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "notification_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"execution_id" text NOT NULL,
	"event" text NOT NULL,
	"url" text NOT NULL,
	"body" text NOT NULL,
	"state" text NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"time_created_ms" bigint NOT NULL,
	"next_attempt_ms" bigint NOT NULL,
	"time_done_ms" bigint,
	"last_error" text
);
--> statement-breakpoint
CREATE TABLE "password_resets" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"time_created" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint
);
--> statement-breakpoint
CREATE TABLE "playbook_configurations" (
	"pk" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"version" bigint NOT NULL,
	"time_updated" bigint NOT NULL,
	"time_deleted" bigint DEFAULT 0 NOT NULL,
	"initiator_id" text,
	"is_latest" smallint NOT NULL,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "roles" (
	"pk" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"version" bigint NOT NULL,
	"time_updated" bigint NOT NULL,
	"time_deleted" bigint DEFAULT 0 NOT NULL,
	"initiator_id" text,
	"is_latest" smallint NOT NULL,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runners" (
	"name" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"labels" text NOT NULL,
	"time_created" bigint NOT NULL,
	"created_by" text,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"time_created" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_locks" (
	"server_id" text PRIMARY KEY NOT NULL,
	"execution_id" text NOT NULL,
	"owner" text NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "servers" (
	"pk" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"version" bigint NOT NULL,
	"time_updated" bigint NOT NULL,
	"time_deleted" bigint DEFAULT 0 NOT NULL,
	"initiator_id" text,
	"is_latest" smallint NOT NULL,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tokens" (
	"jti" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"time_created" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "users" (
	"pk" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"version" bigint NOT NULL,
	"time_updated" bigint NOT NULL,
	"time_deleted" bigint DEFAULT 0 NOT NULL,
	"initiator_id" text,
	"is_latest" smallint NOT NULL,
	"data" text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "clusters_id_version" ON "clusters" USING btree ("id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "clusters_latest" ON "clusters" USING btree ("id") WHERE "clusters"."is_latest" = 1;--> statement-breakpoint
CREATE UNIQUE INDEX "execution_steps_id_unique" ON "execution_steps" USING btree ("id");--> statement-breakpoint
CREATE INDEX "execution_steps_finished" ON "execution_steps" USING btree ("execution_id","time_finished");--> statement-breakpoint
CREATE UNIQUE INDEX "executions_id_version" ON "executions" USING btree ("id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "executions_latest" ON "executions" USING btree ("id") WHERE "executions"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX "mail_outbox_next_attempt" ON "mail_outbox" USING btree ("next_attempt_ms");--> statement-breakpoint
CREATE INDEX "notification_attempts_delivery" ON "notification_attempts" USING btree ("delivery_id","attempt");--> statement-breakpoint
CREATE INDEX "notification_deliveries_due" ON "notification_deliveries" USING btree ("state","next_attempt_ms");--> statement-breakpoint
CREATE INDEX "notification_deliveries_execution" ON "notification_deliveries" USING btree ("execution_id");--> statement-breakpoint
CREATE INDEX "password_resets_user" ON "password_resets" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "playbook_configurations_id_version" ON "playbook_configurations" USING btree ("id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "playbook_configurations_latest" ON "playbook_configurations" USING btree ("id") WHERE "playbook_configurations"."is_latest" = 1;--> statement-breakpoint
CREATE UNIQUE INDEX "roles_id_version" ON "roles" USING btree ("id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "roles_latest" ON "roles" USING btree ("id") WHERE "roles"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX "server_locks_execution" ON "server_locks" USING btree ("execution_id");--> statement-breakpoint
CREATE INDEX "server_locks_owner" ON "server_locks" USING btree ("owner");--> statement-breakpoint
CREATE UNIQUE INDEX "servers_id_version" ON "servers" USING btree ("id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "servers_latest" ON "servers" USING btree ("id") WHERE "servers"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX "tokens_user" ON "tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "tokens_expires" ON "tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "users_id_version" ON "users" USING btree ("id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "users_latest" ON "users" USING btree ("id") WHERE "users"."is_latest" = 1;