// Package schema applies the service's versioned SQL migrations and decides whether a binary
// may run against the schema a database has.
//
// Each migration runs in one transaction together with the version mark, so a migration
// that fails (a deadlock, a cancelled connection, a killed process) leaves the previous
// version in place, clean: PostgreSQL's DDL is transactional. The version lives in the
// table golang-migrate kept (schema_migrations: version, dirty), so installations that it
// migrated carry on; the migrator takes golang-migrate's advisory lock, so an older replica
// still running it and a newer one never migrate at once. A dirty mark can only come from
// golang-migrate (which marked a version dirty before running it) or from a hand edit:
// `backend migrate force` clears it.
//
// The ordering rule between binaries and the schema: only the backend migrates. Every other
// binary, and a backend started with --migrate=false, waits (not ready) until the schema
// is at least the version it was built with and not dirty, and refuses to start against a
// schema whose CompatibleFrom is newer than its own version (see Judge).
package schema

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned change of the schema.
type Migration struct {
	Version uint
	Name    string
	Up      string
	Down    string
	// CompatibleFrom is the oldest schema version a binary may be built with and still run
	// against this version of the schema: a migration that removes or changes what older
	// binaries use says so with a line "-- compatible-from: N" in its up file. Zero (the
	// default) means every older binary keeps working: the migration only adds.
	CompatibleFrom uint
}

var (
	fileName       = regexp.MustCompile(`^([0-9]+)_([a-z0-9_]+)\.(up|down)\.sql$`)
	compatibleFrom = regexp.MustCompile(`^--\s*compatible-from:\s*([0-9]+)\s*$`)
)

// Load reads the migrations of dir in fsys (NNNNNN_name.up.sql and .down.sql, golang-migrate's
// naming), ordered by version. Every version needs both files, versions are unique, and a
// compatible-from directive names a version no newer than its own migration.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading the migrations: %w", err)
	}
	byVersion := map[uint]*Migration{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s is not named NNNNNN_name.up.sql or NNNNNN_name.down.sql", e.Name())
		}
		v, err := strconv.ParseUint(m[1], 10, 32)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("migration file %s: the version must be a number from 1", e.Name())
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		mig := byVersion[uint(v)]
		if mig == nil {
			mig = &Migration{Version: uint(v), Name: m[2]}
			byVersion[uint(v)] = mig
		}
		if mig.Name != m[2] {
			return nil, fmt.Errorf("migration %d has two names: %s and %s", v, mig.Name, m[2])
		}
		if m[3] == "up" {
			mig.Up = string(data)
			if mig.CompatibleFrom, err = directive(mig.Up); err != nil {
				return nil, fmt.Errorf("migration file %s: %w", e.Name(), err)
			}
		} else {
			mig.Down = string(data)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, mig := range byVersion {
		if mig.Up == "" || mig.Down == "" {
			return nil, fmt.Errorf("migration %d (%s) needs both an up and a down file", mig.Version, mig.Name)
		}
		if mig.CompatibleFrom > mig.Version {
			return nil, fmt.Errorf("migration %d (%s): compatible-from %d is newer than the migration", mig.Version, mig.Name, mig.CompatibleFrom)
		}
		out = append(out, *mig)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// directive finds the compatible-from line of an up file (0 when there is none).
func directive(up string) (uint, error) {
	var found uint
	seen := false
	sc := bufio.NewScanner(strings.NewReader(up))
	for sc.Scan() {
		m := compatibleFrom.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		if seen {
			return 0, fmt.Errorf("more than one compatible-from line")
		}
		v, err := strconv.ParseUint(m[1], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("compatible-from %q: %w", m[1], err)
		}
		found, seen = uint(v), true
	}
	return found, sc.Err()
}

// Latest is the newest version of migrations (0 when there are none).
func Latest(migrations []Migration) uint {
	if len(migrations) == 0 {
		return 0
	}
	return migrations[len(migrations)-1].Version
}

// CompatibleFrom is the oldest binary version that may run against the schema at version:
// the largest compatible-from among the migrations up to it.
func CompatibleFrom(migrations []Migration, version uint) uint {
	var from uint
	for _, m := range migrations {
		if m.Version <= version {
			from = max(from, m.CompatibleFrom)
		}
	}
	return from
}

// find returns the migration of version.
func find(migrations []Migration, version uint) (Migration, bool) {
	for _, m := range migrations {
		if m.Version == version {
			return m, true
		}
	}
	return Migration{}, false
}
