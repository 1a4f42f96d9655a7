DROP TABLE operations;
DROP TABLE api_cr_mappings;
DROP TABLE appproject_destinations;
DROP TABLE appproject_repositories;
DROP TABLE repository_credentials;
