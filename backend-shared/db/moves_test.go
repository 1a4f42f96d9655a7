package db_test

import (
	"testing"

	. "github.com/onsi/gomega"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

func TestMoveTenant(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	to := f.newInstance(t)
	tenant := f.newTenant(t)
	g.Expect(f.store.SetTenantEngineInstance(f.ctx, f.db, tenant.ID, f.instance.ID)).To(Succeed())
	env, _ := f.newEnv(t, tenant.ID)
	app, _ := f.newApp(t, tenant.ID, "")
	cred := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID,
		RepositoryURL: "https://git.example.com/private", Username: "u", Password: "p"}
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, cred)).To(Succeed())
	// The old instance reported a compared state: that is not an adoption by the new one.
	compared := &db.ApplicationState{ApplicationID: app.ID, EngineInstanceID: f.instance.ID, Health: db.HealthHealthy,
		ReconciledState: &argov1alpha1.ComparedTo{Destination: app.Spec.Destination}}
	_, err := f.store.RecordApplicationState(f.ctx, f.db, compared, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())

	move, err := f.store.MoveTenant(f.ctx, f.db, tenant.ID, to.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(move).To(Equal(&db.TenantMove{TenantID: tenant.ID, From: f.instance.ID, To: to.ID,
		ApplicationIDs: []string{app.ID}, ManagedEnvironmentIDs: []string{env.ID}, RepositoryCredentialIDs: []string{cred.ID}}))

	got, err := f.store.LocateApplicationOnceTenantFree(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.EngineInstanceID).To(Equal(to.ID))
	g.Expect(got.MovingFromEngineInstanceID).To(Equal(f.instance.ID))
	gotCred, err := f.store.GetRepositoryCredential(f.ctx, f.db, tenant.ID, cred.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gotCred.EngineInstanceID).To(Equal(to.ID))
	for _, instance := range []string{f.instance.ID, to.ID} {
		served, err := f.store.TenantServedBy(f.ctx, f.db, tenant.ID, instance)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(served).To(BeTrue(), "both instances serve a tenant while it moves")
	}
	moving, err := f.store.MovingTenantIDs(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(moving).To(Equal(map[string]bool{tenant.ID: true}))
	other := f.newTenant(t)
	served, err := f.store.ServedTenantIDs(f.ctx, f.db, f.instance.ID, []string{tenant.ID, other.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(Equal(map[string]bool{tenant.ID: true}), "the old instance serves the moving tenant, not an unplaced one")

	// No second move until the first is done; moving to where it is is a no-op.
	_, err = f.store.MoveTenant(f.ctx, f.db, tenant.ID, f.instance.ID)
	g.Expect(err).To(MatchError(db.ErrMoveInProgress))
	g.Expect(f.store.MoveTenant(f.ctx, f.db, tenant.ID, to.ID)).To(BeNil())

	adopted, err := f.store.ApplicationAdopted(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adopted).To(BeFalse())
	// The same state reported by the new instance is a change (of reporter), and adopts it.
	compared.EngineInstanceID = to.ID
	changed, err := f.store.RecordApplicationState(f.ctx, f.db, compared, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	adopted, err = f.store.ApplicationAdopted(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adopted).To(BeTrue())

	g.Expect(f.store.FinishApplicationMove(f.ctx, f.db, app.ID, f.instance.ID)).To(Succeed())
	got, err = f.store.LocateApplicationOnceTenantFree(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.MovingFromEngineInstanceID).To(BeEmpty())
	servedHere, err := f.store.TenantServedBy(f.ctx, f.db, tenant.ID, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(servedHere).To(BeFalse())
	served, err = f.store.ServedTenantIDs(f.ctx, f.db, f.instance.ID, []string{tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(BeEmpty())
	moving, err = f.store.MovingTenantIDs(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(moving).To(BeEmpty())
}

func TestUpsertApplicationOnAnotherInstanceMovesIt(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	other := f.newInstance(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	app.EngineInstanceID = other.ID
	changed, err := f.store.UpsertApplication(f.ctx, f.db, app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(app.MovingFromEngineInstanceID).To(Equal(f.instance.ID))

	// Back to where it came from: the move is over, nothing is left to let go.
	app.EngineInstanceID = f.instance.ID
	_, err = f.store.UpsertApplication(f.ctx, f.db, app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(app.MovingFromEngineInstanceID).To(BeEmpty())
}
