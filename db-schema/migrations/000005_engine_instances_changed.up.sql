-- A change of the engine instances (registered, re-weighted, drained, deregistered) wakes
-- the backend's rebalancer at once: its interval is only a safety net, so a balanced and
-- quiet installation runs no rebalancing statement in between. One notification per
-- statement; the payload is empty (the rebalancer reads everything it needs).
CREATE FUNCTION notify_engine_instances_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('engine_instances_changed', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER engine_instances_changed
    AFTER INSERT OR UPDATE OR DELETE ON engine_instances
    FOR EACH STATEMENT EXECUTE FUNCTION notify_engine_instances_changed();
