-- Moving a tenant to another engine instance. Its applications point at the new instance
-- at once and remember the old one until the old instance has let their Argo CD
-- Applications go (without pruning), which it does only once the new instance has
-- adopted them: reported a state in which Argo CD compared the Application.

-- RESTRICT: an instance is not removed while it still holds Applications being moved away.
ALTER TABLE applications
    ADD COLUMN moving_from_engine_instance_id uuid REFERENCES engine_instances (id) ON DELETE RESTRICT,
    ADD CONSTRAINT applications_moving_from_check CHECK (moving_from_engine_instance_id <> engine_instance_id);
CREATE INDEX applications_moving_from_engine_instance_id_idx
    ON applications (moving_from_engine_instance_id) WHERE moving_from_engine_instance_id IS NOT NULL;

-- The engine instance whose cluster-agent wrote the state. SET NULL: the state stays
-- meaningful for the deployment's status when its reporter is removed.
ALTER TABLE application_states
    ADD COLUMN engine_instance_id uuid REFERENCES engine_instances (id) ON DELETE SET NULL;
