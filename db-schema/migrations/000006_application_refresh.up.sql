-- The last refresh request of the GitOpsDeployment behind an application (the value of its
-- managed-gitops.redhat.com/refresh annotation, or of a Git push the webhook receiver
-- matched): a new value makes the cluster-agent ask Argo CD to refresh the Application now
-- instead of at its next poll.
ALTER TABLE applications ADD COLUMN refresh text NOT NULL DEFAULT '';
