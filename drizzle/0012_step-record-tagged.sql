-- The `steps_record_*` triggers of drizzle/0007 without their second statement: they no longer
-- clear `steps.record` with an UPDATE after appending the record. That UPDATE was a third
-- statement and a third row written on each of a step's two writes (8 rows per step, 6 without
-- it; docs/cost.md). The store now writes `record` as '<kind>:<attempt>' and the update trigger
-- fires only when the value changes: every write that names a record names a new one (a step's
-- started and completed records differ in kind, two attempts in number), while an upsert that
-- does not set the column (a release from before drizzle/0007, after a rollback of a deploy)
-- leaves it as it was and appends nothing. A bare '<kind>' (the release of drizzle/0007) still
-- appends its kind.
DROP TRIGGER IF EXISTS `steps_record_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `steps_record_update`;
--> statement-breakpoint
CREATE TRIGGER `steps_record_insert` AFTER INSERT ON `steps` WHEN NEW.`record` IS NOT NULL BEGIN
	INSERT INTO `history` (`generation`, `at`, `kind`, `step`, `attempt`, `value`, `detail`)
	VALUES ((SELECT `generation` FROM `instance` LIMIT 1), CASE WHEN substr(NEW.`record`, 1, 12) = 'step.started' THEN NEW.`started_at` ELSE NEW.`finished_at` END,
		CASE WHEN instr(NEW.`record`, ':') > 0 THEN substr(NEW.`record`, 1, instr(NEW.`record`, ':') - 1) ELSE NEW.`record` END,
		NEW.`name`, NEW.`attempts`, CASE WHEN substr(NEW.`record`, 1, 14) = 'step.completed' THEN NEW.`result` END, NULL);
END;
--> statement-breakpoint
CREATE TRIGGER `steps_record_update` AFTER UPDATE ON `steps` WHEN NEW.`record` IS NOT NULL AND NEW.`record` IS NOT OLD.`record` BEGIN
	INSERT INTO `history` (`generation`, `at`, `kind`, `step`, `attempt`, `value`, `detail`)
	VALUES ((SELECT `generation` FROM `instance` LIMIT 1), CASE WHEN substr(NEW.`record`, 1, 12) = 'step.started' THEN NEW.`started_at` ELSE NEW.`finished_at` END,
		CASE WHEN instr(NEW.`record`, ':') > 0 THEN substr(NEW.`record`, 1, instr(NEW.`record`, ':') - 1) ELSE NEW.`record` END,
		NEW.`name`, NEW.`attempts`, CASE WHEN substr(NEW.`record`, 1, 14) = 'step.completed' THEN NEW.`result` END, NULL);
END;
