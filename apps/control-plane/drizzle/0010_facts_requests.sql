CREATE TABLE `facts_requests` (
	`server_id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`due_ms` integer NOT NULL,
	`runner` text,
	`sent_ms` integer
);
--> statement-breakpoint
CREATE INDEX `facts_requests_due` ON `facts_requests` (`due_ms`);