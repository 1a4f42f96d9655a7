// Package dbschema holds the PostgreSQL schema of the GitOps Service as versioned
// migrations (NNNNNN_name.up.sql / NNNNNN_name.down.sql, golang-migrate's naming).
//
// It is a module of its own, with no dependencies, so that every binary embeds exactly the
// schema it was built with and the backend's migrate subcommand can apply it.
package dbschema

import "embed"

// Migrations holds every migration file under "migrations/".
//
//go:embed migrations/*.sql
var Migrations embed.FS
