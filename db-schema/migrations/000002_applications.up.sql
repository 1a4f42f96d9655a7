-- Applications (the desired Argo CD Applications), their observed state, the
-- GitOpsDeployment that each one comes from, and sync operations (SyncRuns).

CREATE TABLE applications (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- The owner. CASCADE: a tenant's rows go with the tenant.
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The Argo CD Application name, gitopsdepl-<GitOpsDeployment UID>.
    name text NOT NULL CONSTRAINT applications_name_check
        CHECK (name ~ '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' AND length(name) <= 253),
    -- RESTRICT: an instance with applications is drained (applications moved) before removal.
    engine_instance_id uuid NOT NULL REFERENCES engine_instances (id) ON DELETE RESTRICT,
    -- NULL: deploy to the engine's own cluster.
    managed_environment_id uuid,
    -- The desired Argo CD ApplicationSpec (argoproj.io/v1alpha1).
    spec jsonb NOT NULL CONSTRAINT applications_spec_check CHECK (jsonb_typeof(spec) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT applications_name_key UNIQUE (name),
    CONSTRAINT applications_tenant_id_id_key UNIQUE (tenant_id, id),
    -- Same tenant only. SET NULL (column list): deleting the environment leaves the
    -- application in place without a target; the backend reports it on the deployment.
    CONSTRAINT applications_managed_environment_fkey FOREIGN KEY (tenant_id, managed_environment_id)
        REFERENCES managed_environments (tenant_id, id) ON DELETE SET NULL (managed_environment_id)
);
CREATE INDEX applications_engine_instance_id_idx ON applications (engine_instance_id);
CREATE INDEX applications_managed_environment_id_idx
    ON applications (managed_environment_id) WHERE managed_environment_id IS NOT NULL;

-- What Argo CD reports about an application, written by the cluster-agent.
CREATE TABLE application_states (
    -- CASCADE: state of a deleted application is meaningless.
    application_id uuid PRIMARY KEY REFERENCES applications (id) ON DELETE CASCADE,
    health_status text NOT NULL DEFAULT 'Unknown' CONSTRAINT application_states_health_status_check
        CHECK (health_status IN ('Healthy', 'Progressing', 'Degraded', 'Suspended', 'Missing', 'Unknown')),
    health_message text NOT NULL DEFAULT '',
    sync_status text NOT NULL DEFAULT 'Unknown' CONSTRAINT application_states_sync_status_check
        CHECK (sync_status IN ('Synced', 'OutOfSync', 'Unknown')),
    sync_revision text NOT NULL DEFAULT '',
    -- []ResourceStatus
    resources jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT application_states_resources_check CHECK (jsonb_typeof(resources) = 'array'),
    -- []ApplicationCondition
    conditions jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT application_states_conditions_check CHECK (jsonb_typeof(conditions) = 'array'),
    -- ComparedTo: the source and destination Argo CD last compared against.
    reconciled_state jsonb
        CONSTRAINT application_states_reconciled_state_check CHECK (jsonb_typeof(reconciled_state) = 'object'),
    -- OperationState of the last sync.
    operation_state jsonb
        CONSTRAINT application_states_operation_state_check CHECK (jsonb_typeof(operation_state) = 'object'),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- GitOpsDeployment (by UID) -> application.
CREATE TABLE deployment_application_mappings (
    deployment_uid text PRIMARY KEY
        CONSTRAINT deployment_application_mappings_deployment_uid_check CHECK (deployment_uid <> ''),
    tenant_id uuid NOT NULL,
    deployment_name text NOT NULL
        CONSTRAINT deployment_application_mappings_deployment_name_check CHECK (deployment_name <> ''),
    deployment_namespace text NOT NULL
        CONSTRAINT deployment_application_mappings_deployment_namespace_check CHECK (deployment_namespace <> ''),
    application_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT deployment_application_mappings_application_id_key UNIQUE (application_id),
    -- Same tenant only. CASCADE: the mapping goes with its application (and so its tenant).
    CONSTRAINT deployment_application_mappings_application_fkey FOREIGN KEY (tenant_id, application_id)
        REFERENCES applications (tenant_id, id) ON DELETE CASCADE
);
-- Deletion reconciles only know the GitOpsDeployment's name.
CREATE INDEX deployment_application_mappings_tenant_name_idx
    ON deployment_application_mappings (tenant_id, deployment_name);

-- A requested sync of an application (GitOpsDeploymentSyncRun).
CREATE TABLE sync_operations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    application_id uuid,
    deployment_name text NOT NULL CONSTRAINT sync_operations_deployment_name_check CHECK (deployment_name <> ''),
    revision text NOT NULL DEFAULT '',
    desired_state text NOT NULL DEFAULT 'Running' CONSTRAINT sync_operations_desired_state_check
        CHECK (desired_state IN ('Running', 'Terminated')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sync_operations_tenant_id_id_key UNIQUE (tenant_id, id),
    -- Same tenant only. SET NULL (column list): the SyncRun outlives its deployment's
    -- application and reports it.
    CONSTRAINT sync_operations_application_fkey FOREIGN KEY (tenant_id, application_id)
        REFERENCES applications (tenant_id, id) ON DELETE SET NULL (application_id)
);
CREATE INDEX sync_operations_application_id_idx
    ON sync_operations (application_id) WHERE application_id IS NOT NULL;
