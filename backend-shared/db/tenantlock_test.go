package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestWithTenantLockSerialisesOneTenantOnly(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant, other := newUID(), newUID()

	// hold takes the lock of a tenant in the background: entered closes once it has it,
	// and it keeps it until release closes.
	hold := func(tenantID string, release <-chan struct{}) (entered chan struct{}, done chan error) {
		entered, done = make(chan struct{}), make(chan error, 1)
		go func() {
			done <- f.store.WithTenantLock(f.ctx, f.db, tenantID, func(context.Context, bun.Tx) error {
				close(entered)
				<-release
				return nil
			})
		}()
		return entered, done
	}
	releaseFirst := make(chan struct{})
	first, firstDone := hold(tenant, releaseFirst)
	g.Eventually(first).Should(BeClosed())

	// Another tenant is not held up; the same tenant is, until the first holder commits.
	released := make(chan struct{})
	close(released)
	otherEntered, otherDone := hold(other, released)
	g.Eventually(otherEntered, 5*time.Second).Should(BeClosed())
	g.Eventually(otherDone).Should(Receive(BeNil()))

	second, secondDone := hold(tenant, released)
	g.Consistently(second, 500*time.Millisecond).ShouldNot(BeClosed())
	close(releaseFirst)
	g.Eventually(firstDone).Should(Receive(BeNil()))
	g.Eventually(second, 5*time.Second).Should(BeClosed())
	g.Eventually(secondDone).Should(Receive(BeNil()))
}

func TestWithTenantLockReturnsTheErrorOfItsWork(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := newUID()
	failed := errors.New("the work failed")
	g.Expect(f.store.WithTenantLock(f.ctx, f.db, tenant, func(context.Context, bun.Tx) error { return failed })).
		To(MatchError(failed))

	// The lock went with the rolled-back transaction.
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	g.Expect(f.store.WithTenantLock(ctx, f.db, tenant, func(context.Context, bun.Tx) error { return nil })).To(Succeed())
}

func TestLockTenantOutsideATransactionWaitsForTheHolderAndKeepsNothing(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := newUID()
	entered, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- f.store.WithTenantLock(f.ctx, f.db, tenant, func(context.Context, bun.Tx) error {
			close(entered)
			<-release
			return nil
		})
	}()
	g.Eventually(entered, 5*time.Second).Should(BeClosed())

	awaited := make(chan error, 1)
	go func() { awaited <- f.store.LockTenant(f.ctx, f.db, tenant) }()
	g.Consistently(awaited, 500*time.Millisecond).ShouldNot(Receive(), "while the holder has it")
	close(release)
	g.Eventually(held, 5*time.Second).Should(Receive(BeNil()))
	g.Eventually(awaited, 5*time.Second).Should(Receive(BeNil()), "once the holder let go")

	// Outside a transaction it kept nothing: the next holder gets the lock at once.
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second)
	defer cancel()
	g.Expect(f.store.WithTenantLock(ctx, f.db, tenant, func(context.Context, bun.Tx) error { return nil })).To(Succeed())
}

func TestLocateApplicationOnceTenantFreeWaitsForTheTenantsHolder(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")
	entered, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- f.store.WithTenantLock(f.ctx, f.db, tenant.ID, func(context.Context, bun.Tx) error {
			close(entered)
			<-release
			return nil
		})
	}()
	g.Eventually(entered, 5*time.Second).Should(BeClosed())

	located := make(chan *db.Application, 1)
	go func() {
		got, err := f.store.LocateApplicationOnceTenantFree(f.ctx, f.db, app.ID)
		if err != nil {
			t.Error(err)
		}
		located <- got
	}()
	g.Consistently(located, 500*time.Millisecond).ShouldNot(Receive(), "while the holder has the tenant's lock")
	// Another tenant's application, and no application, wait for nobody.
	otherTenant := f.newTenant(t)
	other, _ := f.newApp(t, otherTenant.ID, "")
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second)
	defer cancel()
	got, err := f.store.LocateApplicationOnceTenantFree(ctx, f.db, other.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(other.ID))
	_, err = f.store.LocateApplicationOnceTenantFree(ctx, f.db, newUID())
	g.Expect(err).To(MatchError(db.ErrNotFound))

	close(release)
	g.Eventually(held, 5*time.Second).Should(Receive(BeNil()))
	var got2 *db.Application
	g.Eventually(located, 5*time.Second).Should(Receive(&got2), "once the holder let go")
	g.Expect(got2.ID).To(Equal(app.ID))
	g.Expect(got2.TenantID).To(Equal(tenant.ID))
	g.Expect(got2.Spec).To(Equal(app.Spec))

	// It kept nothing: the next holder gets the lock at once.
	g.Expect(f.store.WithTenantLock(ctx, f.db, tenant.ID, func(context.Context, bun.Tx) error { return nil })).To(Succeed())
}
