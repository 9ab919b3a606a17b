CREATE TABLE "runner_sessions" (
	"name" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"replica" text NOT NULL,
	"version" text NOT NULL,
	"labels" text NOT NULL,
	"slots" bigint NOT NULL,
	"connected_at_ms" bigint NOT NULL,
	"last_heartbeat_ms" bigint NOT NULL,
	"peer" text NOT NULL,
	"ssh_public_key" text NOT NULL,
	"draining" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "throttle_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"time_ms" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "runner_sessions_replica" ON "runner_sessions" USING btree ("replica");--> statement-breakpoint
CREATE INDEX "throttle_events_key" ON "throttle_events" USING btree ("scope","key","time_ms");--> statement-breakpoint
CREATE INDEX "throttle_events_time" ON "throttle_events" USING btree ("time_ms");