package dbmetrics

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRegisterReturnsOtherErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Another collector already exports a metric of the same name with other labels: that
	// is a real conflict, not a second pool.
	clash := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gitops_db_connections", Help: "x"}, []string{"pool"})
	reg.MustRegister(clash)
	if err := Register(reg, fakePool{}); err == nil {
		t.Fatal("a conflicting metric was ignored")
	}
}

func TestASecondPoolIsNotExported(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, fakePool{MaxOpenConnections: 10}); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, fakePool{MaxOpenConnections: 99}); err != nil {
		t.Fatal(err)
	}
	// The first pool's statistics are exported.
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP gitops_db_max_open_connections Maximum number of open connections of the database pool.
# TYPE gitops_db_max_open_connections gauge
gitops_db_max_open_connections 10
`), "gitops_db_max_open_connections")
	if err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReadsARealPoolOnEveryScrape(t *testing.T) {
	// A real database/sql pool; opening it connects to nothing.
	db, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(7)
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, db); err != nil {
		t.Fatal(err)
	}
	want := func(maxOpen int) string {
		return fmt.Sprintf(`
# HELP gitops_db_connections Open connections of the database pool by state (in_use, idle).
# TYPE gitops_db_connections gauge
gitops_db_connections{state="idle"} 0
gitops_db_connections{state="in_use"} 0
# HELP gitops_db_max_open_connections Maximum number of open connections of the database pool.
# TYPE gitops_db_max_open_connections gauge
gitops_db_max_open_connections %d
`, maxOpen)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(7)), "gitops_db_connections", "gitops_db_max_open_connections"); err != nil {
		t.Fatal(err)
	}
	// No caching: the next scrape sees the pool as it is then.
	db.SetMaxOpenConns(3)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(3)), "gitops_db_connections", "gitops_db_max_open_connections"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(&Collector{DB: db}); n != 5 {
		t.Fatalf("%d metrics, want in_use, idle, max open, wait count and wait seconds", n)
	}
}

func TestDescribeNamesEveryMetric(t *testing.T) {
	ch := make(chan *prometheus.Desc, 10)
	(&Collector{}).Describe(ch)
	close(ch)
	var names []string
	for d := range ch {
		names = append(names, d.String())
	}
	want := []string{"gitops_db_connections", "gitops_db_max_open_connections", "gitops_db_wait_count_total", "gitops_db_wait_seconds_total"}
	if len(names) != len(want) {
		t.Fatalf("descriptions %v", names)
	}
	for i, w := range want {
		if !strings.Contains(names[i], `"`+w+`"`) {
			t.Errorf("description %d is %s, want %s", i, names[i], w)
		}
	}
}
