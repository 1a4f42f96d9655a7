-- The tables as migration 1 created them (empty: nothing wrote them).
CREATE TABLE cluster_access (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    managed_environment_id uuid NOT NULL,
    -- CASCADE: access through a removed instance means nothing.
    engine_instance_id uuid NOT NULL REFERENCES engine_instances (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, managed_environment_id, engine_instance_id),
    CONSTRAINT cluster_access_managed_environment_fkey FOREIGN KEY (tenant_id, managed_environment_id)
        REFERENCES managed_environments (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX cluster_access_engine_instance_id_idx ON cluster_access (engine_instance_id);

-- A Kubernetes object (by UID) that stands for a row, e.g. a cluster's kube-system
-- Namespace for its engine cluster. Exactly one target column is set.
CREATE TABLE kubernetes_resource_mappings (
    kubernetes_resource_type text NOT NULL
        CONSTRAINT kubernetes_resource_mappings_type_check CHECK (kubernetes_resource_type <> ''),
    kubernetes_resource_uid text NOT NULL
        CONSTRAINT kubernetes_resource_mappings_uid_check CHECK (kubernetes_resource_uid <> ''),
    -- CASCADE on every target: a mapping of a deleted row is stale.
    engine_cluster_id uuid REFERENCES engine_clusters (id) ON DELETE CASCADE,
    engine_instance_id uuid REFERENCES engine_instances (id) ON DELETE CASCADE,
    managed_environment_id uuid REFERENCES managed_environments (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kubernetes_resource_type, kubernetes_resource_uid),
    CONSTRAINT kubernetes_resource_mappings_one_target_check
        CHECK (num_nonnulls(engine_cluster_id, engine_instance_id, managed_environment_id) = 1)
);
CREATE INDEX kubernetes_resource_mappings_engine_cluster_id_idx
    ON kubernetes_resource_mappings (engine_cluster_id) WHERE engine_cluster_id IS NOT NULL;
CREATE INDEX kubernetes_resource_mappings_engine_instance_id_idx
    ON kubernetes_resource_mappings (engine_instance_id) WHERE engine_instance_id IS NOT NULL;
CREATE INDEX kubernetes_resource_mappings_managed_environment_id_idx
    ON kubernetes_resource_mappings (managed_environment_id) WHERE managed_environment_id IS NOT NULL;
