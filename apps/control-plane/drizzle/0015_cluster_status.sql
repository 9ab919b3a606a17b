CREATE TABLE `cluster_status_points` (
	`cluster_id` text NOT NULL,
	`at` integer NOT NULL,
	`health` text NOT NULL,
	`raw_total_bytes` integer NOT NULL,
	`raw_used_bytes` integer NOT NULL,
	`osds_up` integer NOT NULL,
	`osds_in` integer NOT NULL,
	`osds_total` integer NOT NULL,
	PRIMARY KEY(`cluster_id`, `at`)
);
--> statement-breakpoint
CREATE INDEX `cluster_status_points_at` ON `cluster_status_points` (`at`);--> statement-breakpoint
CREATE TABLE `cluster_statuses` (
	`cluster_id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`due_ms` integer NOT NULL,
	`runner` text,
	`sent_ms` integer,
	`report` text,
	`collected_at` integer,
	`attempted_at` integer,
	`unreachable_reason` text,
	`unreachable_since` integer,
	`collection` text,
	`health` text,
	`notified_health` text,
	`point_at` integer,
	`osds_up` integer,
	`osds_in` integer,
	`osds_total` integer,
	`raw_total_bytes` integer,
	`raw_used_bytes` integer
);
--> statement-breakpoint
CREATE INDEX `cluster_statuses_due` ON `cluster_statuses` (`due_ms`);