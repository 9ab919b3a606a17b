CREATE TABLE "encryption_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"check_value" text NOT NULL,
	"time_created" bigint NOT NULL
);
