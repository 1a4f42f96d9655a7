package db_test

import (
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
)

func TestReadyCheckFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	cfg := dbtest.NewConfig(t)
	bdb, err := db.Open(t.Context(), cfg)
	g.Expect(err).NotTo(HaveOccurred())
	check := db.ReadyCheck(bdb)
	g.Expect(check(httptest.NewRequest("GET", "/readyz", nil))).To(Succeed())

	g.Expect(bdb.Close()).To(Succeed())
	err = check(httptest.NewRequest("GET", "/readyz", nil))
	g.Expect(err).To(MatchError(ContainSubstring("database unreachable")))
	g.Expect(err.Error()).NotTo(ContainSubstring(cfg.URL), "the check must not show the connection string")
}
