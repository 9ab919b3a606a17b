CREATE TABLE `notification_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`time_ms` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`status` integer,
	`error` text
);
--> statement-breakpoint
CREATE INDEX `notification_attempts_delivery` ON `notification_attempts` (`delivery_id`,`attempt`);--> statement-breakpoint
CREATE TABLE `notification_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`execution_id` text NOT NULL,
	`event` text NOT NULL,
	`url` text NOT NULL,
	`body` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`time_created_ms` integer NOT NULL,
	`next_attempt_ms` integer NOT NULL,
	`time_done_ms` integer,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `notification_deliveries_due` ON `notification_deliveries` (`state`,`next_attempt_ms`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_execution` ON `notification_deliveries` (`execution_id`);