-- Two tables of the first schema that nothing ever read or wrote: cluster access is what
-- appproject_destinations and the applications' engine instance say, and Kubernetes
-- objects are found by their UIDs in api_cr_mappings and deployment_application_mappings.
DROP TABLE kubernetes_resource_mappings;
DROP TABLE cluster_access;
