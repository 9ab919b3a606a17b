CREATE TABLE "cluster_status_points" (
	"cluster_id" text NOT NULL,
	"at" bigint NOT NULL,
	"health" text NOT NULL,
	"raw_total_bytes" bigint NOT NULL,
	"raw_used_bytes" bigint NOT NULL,
	"osds_up" bigint NOT NULL,
	"osds_in" bigint NOT NULL,
	"osds_total" bigint NOT NULL,
	CONSTRAINT "cluster_status_points_cluster_id_at_pk" PRIMARY KEY("cluster_id","at")
);
--> statement-breakpoint
CREATE TABLE "cluster_statuses" (
	"cluster_id" text PRIMARY KEY NOT NULL,
	"request_id" text NOT NULL,
	"due_ms" bigint NOT NULL,
	"runner" text,
	"sent_ms" bigint,
	"report" text,
	"collected_at" bigint,
	"attempted_at" bigint,
	"unreachable_reason" text,
	"unreachable_since" bigint,
	"collection" text,
	"health" text,
	"notified_health" text,
	"point_at" bigint,
	"osds_up" bigint,
	"osds_in" bigint,
	"osds_total" bigint,
	"raw_total_bytes" bigint,
	"raw_used_bytes" bigint
);
--> statement-breakpoint
CREATE INDEX "cluster_status_points_at" ON "cluster_status_points" USING btree ("at");--> statement-breakpoint
CREATE INDEX "cluster_statuses_due" ON "cluster_statuses" USING btree ("due_ms");