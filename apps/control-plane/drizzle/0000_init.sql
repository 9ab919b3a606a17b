CREATE TABLE `credentials` (
	`user_id` text PRIMARY KEY NOT NULL,
	`password_hash` text NOT NULL,
	`time_updated` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `password_resets` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`time_created` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
CREATE INDEX `password_resets_user` ON `password_resets` (`user_id`);--> statement-breakpoint
CREATE TABLE `roles` (
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
CREATE UNIQUE INDEX `roles_id_version` ON `roles` (`id`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `roles_latest` ON `roles` (`id`) WHERE "roles"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX `roles_live` ON `roles` (`is_latest`,`time_deleted`);--> statement-breakpoint
CREATE TABLE `secrets` (
	`name` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`time_created` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tokens` (
	`jti` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`time_created` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `tokens_user` ON `tokens` (`user_id`);--> statement-breakpoint
CREATE INDEX `tokens_expires` ON `tokens` (`expires_at`);--> statement-breakpoint
CREATE TABLE `users` (
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
CREATE UNIQUE INDEX `users_id_version` ON `users` (`id`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `users_latest` ON `users` (`id`) WHERE "users"."is_latest" = 1;--> statement-breakpoint
CREATE INDEX `users_live` ON `users` (`is_latest`,`time_deleted`);