CREATE TABLE `mail_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`recipient` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`time_created_ms` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_ms` integer NOT NULL,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `mail_outbox_next_attempt` ON `mail_outbox` (`next_attempt_ms`);