module github.com/gitops-service/gitops-service/db-schema

go 1.26.0
