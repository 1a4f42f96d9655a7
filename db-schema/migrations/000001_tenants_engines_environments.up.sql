-- Tenants, GitOps engines (Argo CD instances) and the clusters they deploy to.
--
-- Conventions for every migration: ids are database-generated UUIDs (lowercase text is a
-- valid Kubernetes name part: managed-env-<id>, repo-cred-<id>); Kubernetes UIDs are text;
-- timestamps are timestamptz; enums are text with a named CHECK; every foreign key states
-- its ON DELETE rule and has an index on the referencing side.

-- Credentials for a cluster: the engine's own cluster or a tenant's managed environment.
-- Secret columns hold secretbox values ("v1:<key id>:<base64>"), never plaintext: the CHECKs
-- refuse anything else, so a code path that forgets to encrypt fails loudly.
CREATE TABLE cluster_credentials (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    host text NOT NULL CONSTRAINT cluster_credentials_host_check CHECK (host <> ''),
    kubeconfig_enc text CONSTRAINT cluster_credentials_kubeconfig_sealed
        CHECK (kubeconfig_enc ~ '^v1:[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+=*$'),
    kubeconfig_context text NOT NULL DEFAULT '',
    bearer_token_enc text CONSTRAINT cluster_credentials_bearer_token_sealed
        CHECK (bearer_token_enc ~ '^v1:[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+=*$'),
    service_account_namespace text NOT NULL DEFAULT '',
    allow_insecure_skip_tls_verify boolean NOT NULL DEFAULT false,
    namespaces text[] NOT NULL DEFAULT '{}',
    cluster_resources boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT cluster_credentials_secret_check
        CHECK (kubeconfig_enc IS NOT NULL OR bearer_token_enc IS NOT NULL)
);

-- A cluster that runs GitOps engine instances. No credentials means the cluster the
-- service itself runs in (in-cluster configuration).
CREATE TABLE engine_clusters (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL CONSTRAINT engine_clusters_name_check CHECK (name <> ''),
    -- RESTRICT: credentials go away with their cluster (trigger below), not underneath it.
    cluster_credentials_id uuid REFERENCES cluster_credentials (id) ON DELETE RESTRICT,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT engine_clusters_name_key UNIQUE (name),
    CONSTRAINT engine_clusters_cluster_credentials_id_key UNIQUE (cluster_credentials_id)
);

-- An Argo CD instance: the namespace it runs in on an engine cluster.
CREATE TABLE engine_instances (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- RESTRICT: removing a cluster that still has instances must be a deliberate two-step.
    engine_cluster_id uuid NOT NULL REFERENCES engine_clusters (id) ON DELETE RESTRICT,
    namespace_name text NOT NULL CONSTRAINT engine_instances_namespace_name_check CHECK (namespace_name <> ''),
    namespace_uid text NOT NULL CONSTRAINT engine_instances_namespace_uid_check CHECK (namespace_uid <> ''),
    -- Relative share of tenants placed here; 0 takes no new tenants.
    capacity_weight integer NOT NULL DEFAULT 100
        CONSTRAINT engine_instances_capacity_weight_check CHECK (capacity_weight >= 0),
    state text NOT NULL DEFAULT 'Active'
        CONSTRAINT engine_instances_state_check CHECK (state IN ('Active', 'Draining')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT engine_instances_namespace_uid_key UNIQUE (namespace_uid)
);
CREATE INDEX engine_instances_engine_cluster_id_idx ON engine_instances (engine_cluster_id);

-- One tenant per tenant namespace, keyed by the namespace UID: a re-created namespace is
-- a new tenant. engine_instance_id is the tenant's placement.
CREATE TABLE tenants (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    namespace_uid text NOT NULL CONSTRAINT tenants_namespace_uid_check CHECK (namespace_uid <> ''),
    namespace_name text NOT NULL CONSTRAINT tenants_namespace_name_check CHECK (namespace_name <> ''),
    -- SET NULL: losing an instance un-places its tenants; the backend places them again.
    engine_instance_id uuid REFERENCES engine_instances (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_namespace_uid_key UNIQUE (namespace_uid)
);
CREATE INDEX tenants_engine_instance_id_idx ON tenants (engine_instance_id);

-- A tenant's target cluster (GitOpsDeploymentManagedEnvironment).
CREATE TABLE managed_environments (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- CASCADE: a tenant's rows go with the tenant.
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name text NOT NULL CONSTRAINT managed_environments_name_check CHECK (name <> ''),
    -- RESTRICT: the credentials are owned by the environment and deleted after it (trigger).
    cluster_credentials_id uuid NOT NULL REFERENCES cluster_credentials (id) ON DELETE RESTRICT,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT managed_environments_cluster_credentials_id_key UNIQUE (cluster_credentials_id),
    -- Target of the composite foreign keys that keep references inside one tenant.
    CONSTRAINT managed_environments_tenant_id_id_key UNIQUE (tenant_id, id)
);

-- Credentials belong to exactly one environment or engine cluster: delete them with it.
CREATE FUNCTION delete_owned_cluster_credentials() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM cluster_credentials WHERE id = OLD.cluster_credentials_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER managed_environments_delete_credentials
    AFTER DELETE ON managed_environments
    FOR EACH ROW EXECUTE FUNCTION delete_owned_cluster_credentials();
CREATE TRIGGER engine_clusters_delete_credentials
    AFTER DELETE ON engine_clusters
    FOR EACH ROW EXECUTE FUNCTION delete_owned_cluster_credentials();

-- Which tenant may deploy to which managed environment through which engine instance.
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
