CREATE TABLE "facts_requests" (
	"server_id" text PRIMARY KEY NOT NULL,
	"request_id" text NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"due_ms" bigint NOT NULL,
	"runner" text,
	"sent_ms" bigint
);
--> statement-breakpoint
CREATE INDEX "facts_requests_due" ON "facts_requests" USING btree ("due_ms");