CREATE TABLE `execution_artifacts` (
	`execution_id` text NOT NULL,
	`name` text NOT NULL,
	`seq` integer NOT NULL,
	`content` text NOT NULL,
	PRIMARY KEY(`execution_id`, `name`)
);
