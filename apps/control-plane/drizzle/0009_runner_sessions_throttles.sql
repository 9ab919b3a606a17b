CREATE TABLE `runner_sessions` (
	`name` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`replica` text NOT NULL,
	`version` text NOT NULL,
	`labels` text NOT NULL,
	`slots` integer NOT NULL,
	`connected_at_ms` integer NOT NULL,
	`last_heartbeat_ms` integer NOT NULL,
	`peer` text NOT NULL,
	`ssh_public_key` text NOT NULL,
	`draining` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `runner_sessions_replica` ON `runner_sessions` (`replica`);--> statement-breakpoint
CREATE TABLE `throttle_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`scope` text NOT NULL,
	`key` text NOT NULL,
	`time_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `throttle_events_key` ON `throttle_events` (`scope`,`key`,`time_ms`);--> statement-breakpoint
CREATE INDEX `throttle_events_time` ON `throttle_events` (`time_ms`);