DROP TABLE leftover_resources;
