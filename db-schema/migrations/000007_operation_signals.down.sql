DROP INDEX operations_engine_instance_id_idx;
DROP TABLE operation_signals;
