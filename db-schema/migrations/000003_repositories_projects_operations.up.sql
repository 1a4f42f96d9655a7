-- Repository credentials, the per-tenant AppProject contents, API CR mappings and the
-- operations that signal changes to the cluster-agents.

-- A tenant's Git credentials (GitOpsDeploymentRepositoryCredential), installed as the
-- Argo CD repository Secret repo-cred-<id> in engine_instance_id's namespace. Secret
-- columns hold secretbox values only.
CREATE TABLE repository_credentials (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- RESTRICT: the Secret lives in that instance; move the credential before removing it.
    engine_instance_id uuid NOT NULL REFERENCES engine_instances (id) ON DELETE RESTRICT,
    repository_url text NOT NULL CONSTRAINT repository_credentials_repository_url_check CHECK (repository_url <> ''),
    username_enc text CONSTRAINT repository_credentials_username_sealed
        CHECK (username_enc ~ '^v1:[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+=*$'),
    password_enc text CONSTRAINT repository_credentials_password_sealed
        CHECK (password_enc ~ '^v1:[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+=*$'),
    ssh_private_key_enc text CONSTRAINT repository_credentials_ssh_private_key_sealed
        CHECK (ssh_private_key_enc ~ '^v1:[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+=*$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT repository_credentials_tenant_id_id_key UNIQUE (tenant_id, id)
);
CREATE INDEX repository_credentials_engine_instance_id_idx ON repository_credentials (engine_instance_id);
CREATE INDEX repository_credentials_tenant_url_idx ON repository_credentials (tenant_id, repository_url);

-- The source repositories of a tenant's AppProject (app-project-<tenant id>).
CREATE TABLE appproject_repositories (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    repository_url text NOT NULL CONSTRAINT appproject_repositories_repository_url_check CHECK (repository_url <> ''),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_url)
);

-- The destinations (managed environments) of a tenant's AppProject.
CREATE TABLE appproject_destinations (
    tenant_id uuid NOT NULL,
    managed_environment_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, managed_environment_id),
    -- Same tenant only. CASCADE: a deleted environment is no destination.
    CONSTRAINT appproject_destinations_managed_environment_fkey FOREIGN KEY (tenant_id, managed_environment_id)
        REFERENCES managed_environments (tenant_id, id) ON DELETE CASCADE
);

-- An API CR (by type and UID) -> the row it produced. The CR's namespace UID is the
-- tenant's (tenants.namespace_uid). The target column is the one that api_resource_type
-- names; the composite foreign keys keep it inside the tenant.
CREATE TABLE api_cr_mappings (
    api_resource_type text NOT NULL CONSTRAINT api_cr_mappings_api_resource_type_check
        CHECK (api_resource_type IN ('GitOpsDeploymentSyncRun', 'GitOpsDeploymentManagedEnvironment',
                                     'GitOpsDeploymentRepositoryCredential')),
    api_resource_uid text NOT NULL CONSTRAINT api_cr_mappings_api_resource_uid_check CHECK (api_resource_uid <> ''),
    api_resource_name text NOT NULL CONSTRAINT api_cr_mappings_api_resource_name_check CHECK (api_resource_name <> ''),
    api_resource_namespace text NOT NULL
        CONSTRAINT api_cr_mappings_api_resource_namespace_check CHECK (api_resource_namespace <> ''),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    sync_operation_id uuid,
    managed_environment_id uuid,
    repository_credential_id uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (api_resource_type, api_resource_uid),
    CONSTRAINT api_cr_mappings_target_check CHECK (
        num_nonnulls(sync_operation_id, managed_environment_id, repository_credential_id) = 1
        AND (api_resource_type = 'GitOpsDeploymentSyncRun') = (sync_operation_id IS NOT NULL)
        AND (api_resource_type = 'GitOpsDeploymentManagedEnvironment') = (managed_environment_id IS NOT NULL)
        AND (api_resource_type = 'GitOpsDeploymentRepositoryCredential') = (repository_credential_id IS NOT NULL)),
    -- CASCADE on every target: a mapping of a deleted row is stale.
    CONSTRAINT api_cr_mappings_sync_operation_fkey FOREIGN KEY (tenant_id, sync_operation_id)
        REFERENCES sync_operations (tenant_id, id) ON DELETE CASCADE,
    CONSTRAINT api_cr_mappings_managed_environment_fkey FOREIGN KEY (tenant_id, managed_environment_id)
        REFERENCES managed_environments (tenant_id, id) ON DELETE CASCADE,
    CONSTRAINT api_cr_mappings_repository_credential_fkey FOREIGN KEY (tenant_id, repository_credential_id)
        REFERENCES repository_credentials (tenant_id, id) ON DELETE CASCADE
);
-- One CR per row; also the reverse lookups and the cascades.
CREATE UNIQUE INDEX api_cr_mappings_sync_operation_id_key
    ON api_cr_mappings (sync_operation_id) WHERE sync_operation_id IS NOT NULL;
CREATE UNIQUE INDEX api_cr_mappings_managed_environment_id_key
    ON api_cr_mappings (managed_environment_id) WHERE managed_environment_id IS NOT NULL;
CREATE UNIQUE INDEX api_cr_mappings_repository_credential_id_key
    ON api_cr_mappings (repository_credential_id) WHERE repository_credential_id IS NOT NULL;
-- Deletion reconciles only know the CR's name.
CREATE INDEX api_cr_mappings_tenant_name_idx ON api_cr_mappings (tenant_id, api_resource_type, api_resource_name);

-- A change the cluster-agent of engine_instance_id must apply to Argo CD. resource_id is the
-- id of the row of resource_type (the tenant's id for AppProject); it has no foreign key
-- because the operation must outlive the row to carry its deletion.
CREATE TABLE operations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- CASCADE: nothing is left to act on the operations of a removed instance.
    engine_instance_id uuid NOT NULL REFERENCES engine_instances (id) ON DELETE CASCADE,
    resource_type text NOT NULL CONSTRAINT operations_resource_type_check
        CHECK (resource_type IN ('ManagedEnvironment', 'RepositoryCredential', 'Application',
                                 'SyncOperation', 'AppProject')),
    resource_id uuid NOT NULL,
    -- The tenant on whose behalf. SET NULL: the operation that deletes a tenant's Argo CD
    -- objects outlives the tenant row.
    owner_tenant_id uuid REFERENCES tenants (id) ON DELETE SET NULL,
    state text NOT NULL DEFAULT 'Waiting' CONSTRAINT operations_state_check
        CHECK (state IN ('Waiting', 'In_Progress', 'Completed', 'Failed')),
    human_readable_state text NOT NULL DEFAULT '',
    -- How long a finished operation is kept; 0 keeps it until deleted explicitly.
    gc_expiration_seconds integer NOT NULL DEFAULT 0
        CONSTRAINT operations_gc_expiration_seconds_check CHECK (gc_expiration_seconds >= 0),
    -- Set when the operation finishes (completion time + gc_expiration_seconds).
    gc_expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT operations_gc_expires_at_check CHECK (gc_expires_at IS NULL OR state IN ('Completed', 'Failed'))
);
-- The cluster-agent's work list: operations of an instance not yet Completed/Failed.
CREATE INDEX operations_pending_idx ON operations (engine_instance_id, created_at)
    WHERE state IN ('Waiting', 'In_Progress');
-- Garbage collection by expiry.
CREATE INDEX operations_gc_expires_at_idx ON operations (gc_expires_at) WHERE gc_expires_at IS NOT NULL;
-- "Operations on this resource" (e.g. waiting for one to finish).
CREATE INDEX operations_resource_idx ON operations (resource_type, resource_id);
CREATE INDEX operations_owner_tenant_id_idx ON operations (owner_tenant_id) WHERE owner_tenant_id IS NOT NULL;
