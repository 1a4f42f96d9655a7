ALTER TABLE application_states DROP COLUMN engine_instance_id;
DROP INDEX applications_moving_from_engine_instance_id_idx;
ALTER TABLE applications DROP CONSTRAINT applications_moving_from_check,
    DROP COLUMN moving_from_engine_instance_id;
