-- Expression indexes on the JSON `data` of versioned models. Queries must use the very same
-- expression, json_extract(data, '$.<field>'), for SQLite to use them.
CREATE UNIQUE INDEX `users_login_live` ON `users` (json_extract(data, '$.login')) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_live` ON `users` (json_extract(data, '$.email')) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE INDEX `users_full_name_live` ON `users` (json_extract(data, '$.full_name')) WHERE is_latest = 1 AND time_deleted = 0;
--> statement-breakpoint
CREATE UNIQUE INDEX `roles_name_live` ON `roles` (json_extract(data, '$.name')) WHERE is_latest = 1 AND time_deleted = 0;
