-- A step write that names a history record in `steps.record` appends that record too, in the
-- same statement (DrizzleInstanceStore.writeStepWithRecord): the hot path of a step is two
-- storage calls instead of four. The record is derived exactly as the engine would write it.
-- The trigger clears `record` again, so the column is null at rest: a later write that does not
-- set it (the previous release's upsert, after a rollback of a deploy) appends nothing.
CREATE TRIGGER `steps_record_insert` AFTER INSERT ON `steps` WHEN NEW.`record` IS NOT NULL BEGIN
	INSERT INTO `history` (`generation`, `at`, `kind`, `step`, `attempt`, `value`, `detail`)
	VALUES ((SELECT `generation` FROM `instance` LIMIT 1), CASE NEW.`record` WHEN 'step.started' THEN NEW.`started_at` ELSE NEW.`finished_at` END, NEW.`record`, NEW.`name`, NEW.`attempts`, CASE NEW.`record` WHEN 'step.completed' THEN NEW.`result` END, NULL);
	UPDATE `steps` SET `record` = NULL WHERE `key` = NEW.`key`;
END;
--> statement-breakpoint
CREATE TRIGGER `steps_record_update` AFTER UPDATE ON `steps` WHEN NEW.`record` IS NOT NULL BEGIN
	INSERT INTO `history` (`generation`, `at`, `kind`, `step`, `attempt`, `value`, `detail`)
	VALUES ((SELECT `generation` FROM `instance` LIMIT 1), CASE NEW.`record` WHEN 'step.started' THEN NEW.`started_at` ELSE NEW.`finished_at` END, NEW.`record`, NEW.`name`, NEW.`attempts`, CASE NEW.`record` WHEN 'step.completed' THEN NEW.`result` END, NULL);
	UPDATE `steps` SET `record` = NULL WHERE `key` = NEW.`key`;
END;
