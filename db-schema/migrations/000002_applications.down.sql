DROP TABLE sync_operations;
DROP TABLE deployment_application_mappings;
DROP TABLE application_states;
DROP TABLE applications;
