-- Resources an Argo CD Application may have left behind: written by the cluster-agent just
-- before it removes the finalizer of a deleted Application that Argo CD did not finish
-- pruning in time. After remove_after the agent deletes, on the destination, those still
-- tracked by that Application alone (unless a resource opts out), then deletes the row.
CREATE TABLE leftover_resources (
    engine_instance_id uuid NOT NULL REFERENCES engine_instances (id) ON DELETE CASCADE,
    -- The deleted Argo CD Application: its name is what the resources' tracking id names.
    application_name text NOT NULL,
    -- The Application's destination: a cluster Secret's name, or a server URL.
    destination_name text NOT NULL DEFAULT '',
    destination_server text NOT NULL DEFAULT '',
    destination_namespace text NOT NULL,
    -- The resources the Application's status last listed (group, version, kind, namespace, name).
    resources jsonb NOT NULL,
    remove_after timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (engine_instance_id, application_name)
);
