-- The signal of an engine instance: while a row exists, one Operation CR (named after
-- operation_id) stands for every Waiting operation of the instance, and writers of new
-- operations create no CR of their own. The cluster-agent deletes the row once it has
-- taken every Waiting operation into its work queue. Raising and releasing are ordered by a
-- transaction-scoped advisory lock on the instance (shared for writers, exclusive for the
-- release), so an operation is never committed under a signal that is being released
-- without the cluster-agent seeing it.
CREATE TABLE operation_signals (
    engine_instance_id uuid PRIMARY KEY REFERENCES engine_instances (id) ON DELETE CASCADE,
    -- The operation whose transaction raised the signal: its CR is the signal's CR.
    operation_id uuid NOT NULL,
    -- Set once the CR was created, so that a writer retrying after a failure creates it
    -- and the others do not.
    cr_created boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- "Has this instance any operation left?" (the cluster-agent's collector, before it stops
-- reading while the instance is idle).
CREATE INDEX operations_engine_instance_id_idx ON operations (engine_instance_id);
