DROP TRIGGER engine_instances_changed ON engine_instances;
DROP FUNCTION notify_engine_instances_changed();
