CREATE TABLE `runners` (
	`name` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`labels` text NOT NULL,
	`time_created` integer NOT NULL,
	`created_by` text,
	`revoked_at` integer
);
