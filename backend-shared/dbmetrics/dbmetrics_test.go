package dbmetrics

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakePool sql.DBStats

func (f fakePool) Stats() sql.DBStats { return sql.DBStats(f) }

func TestCollectorExportsPoolStats(t *testing.T) {
	pool := fakePool{MaxOpenConnections: 10, OpenConnections: 3, InUse: 2, Idle: 1, WaitCount: 4, WaitDuration: 1500 * time.Millisecond}
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, pool); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, pool); err != nil {
		t.Fatalf("a second registration must be ignored: %v", err)
	}
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP gitops_db_connections Open connections of the database pool by state (in_use, idle).
# TYPE gitops_db_connections gauge
gitops_db_connections{state="idle"} 1
gitops_db_connections{state="in_use"} 2
# HELP gitops_db_max_open_connections Maximum number of open connections of the database pool.
# TYPE gitops_db_max_open_connections gauge
gitops_db_max_open_connections 10
# HELP gitops_db_wait_count_total Times a query waited for a free connection of the database pool.
# TYPE gitops_db_wait_count_total counter
gitops_db_wait_count_total 4
# HELP gitops_db_wait_seconds_total Total time queries waited for a free connection of the database pool.
# TYPE gitops_db_wait_seconds_total counter
gitops_db_wait_seconds_total 1.5
`))
	if err != nil {
		t.Fatal(err)
	}
}
