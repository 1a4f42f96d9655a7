-- How Argo CD's sync of a sync operation ended (Succeeded, Failed or Error, and its
-- message), written by the cluster-agent when it sees the sync finish, or before its next
-- sync replaces the Application's operation state: the SyncRun's result survives a later
-- sync of the same Application.
ALTER TABLE sync_operations
    ADD COLUMN result_phase text NOT NULL DEFAULT '',
    ADD COLUMN result_message text NOT NULL DEFAULT '';
