CREATE TABLE `cluster_files` (
	`cluster_id` text NOT NULL,
	`name` text NOT NULL,
	`content` text NOT NULL,
	`time_updated` integer NOT NULL,
	PRIMARY KEY(`cluster_id`, `name`)
);
--> statement-breakpoint
CREATE TABLE `clusters` (
	`pk` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`version` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_deleted` integer DEFAULT 0 NOT NULL,
	`initiator_id` text,
	`is_latest` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `clusters_id_version` ON `clusters` (`id`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `clusters_latest` ON `clusters` (`id`) WHERE "clusters"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX `clusters_live` ON `clusters` (`is_latest`,`time_deleted`);--> statement-breakpoint
CREATE TABLE `execution_log_chunks` (
	`execution_id` text NOT NULL,
	`offset` integer NOT NULL,
	`text` text NOT NULL,
	PRIMARY KEY(`execution_id`, `offset`)
);
--> statement-breakpoint
CREATE TABLE `execution_steps` (
	`execution_id` text NOT NULL,
	`seq` integer NOT NULL,
	`id` text NOT NULL,
	`time_updated` integer NOT NULL,
	`role` text NOT NULL,
	`name` text NOT NULL,
	`result` text NOT NULL,
	`error` text NOT NULL,
	`server_id` text,
	`time_started` integer NOT NULL,
	`time_finished` integer NOT NULL,
	PRIMARY KEY(`execution_id`, `seq`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `execution_steps_id_unique` ON `execution_steps` (`id`);--> statement-breakpoint
CREATE INDEX `execution_steps_finished` ON `execution_steps` (`execution_id`,`time_finished`);--> statement-breakpoint
CREATE TABLE `executions` (
	`pk` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`version` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_deleted` integer DEFAULT 0 NOT NULL,
	`initiator_id` text,
	`is_latest` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `executions_id_version` ON `executions` (`id`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `executions_latest` ON `executions` (`id`) WHERE "executions"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX `executions_live` ON `executions` (`is_latest`,`time_deleted`);--> statement-breakpoint
CREATE TABLE `playbook_configurations` (
	`pk` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`version` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_deleted` integer DEFAULT 0 NOT NULL,
	`initiator_id` text,
	`is_latest` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `playbook_configurations_id_version` ON `playbook_configurations` (`id`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `playbook_configurations_latest` ON `playbook_configurations` (`id`) WHERE "playbook_configurations"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX `playbook_configurations_live` ON `playbook_configurations` (`is_latest`,`time_deleted`);--> statement-breakpoint
CREATE TABLE `server_locks` (
	`server_id` text PRIMARY KEY NOT NULL,
	`execution_id` text NOT NULL,
	`owner` text NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `server_locks_execution` ON `server_locks` (`execution_id`);--> statement-breakpoint
CREATE INDEX `server_locks_owner` ON `server_locks` (`owner`);--> statement-breakpoint
CREATE TABLE `servers` (
	`pk` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`version` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_deleted` integer DEFAULT 0 NOT NULL,
	`initiator_id` text,
	`is_latest` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `servers_id_version` ON `servers` (`id`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `servers_latest` ON `servers` (`id`) WHERE "servers"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX `servers_live` ON `servers` (`is_latest`,`time_deleted`);