ALTER TABLE sync_operations DROP COLUMN result_message, DROP COLUMN result_phase;
