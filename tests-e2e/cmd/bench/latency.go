package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// statusLatency (P2) writes Application statuses as Argo CD does, one at a time, and times
// each until the owning GitOpsDeployment's status shows the new revision.
func (b *bench) statusLatency(ctx context.Context, size int) (*Latency, error) {
	samples := min(b.cfg.LatencySamples, size)
	latencies := make([]float64, 0, samples)
	for i := range samples {
		name := fmt.Sprintf("app-%d", i*(size/samples))
		ns := b.namespaces[(i*(size/samples))%len(b.namespaces)]
		depl := &v1.GitOpsDeployment{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, depl); err != nil {
			return nil, err
		}
		revision := fmt.Sprintf("rev-%d", i)
		app := &argov1alpha1.Application{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, app); err != nil {
			return nil, err
		}
		// A watch of this deployment alone, opened before the clock starts: a long-lived
		// watch of them all is ended by the API server now and then.
		w, err := b.c.Watch(ctx, &v1.GitOpsDeploymentList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
		if err != nil {
			return nil, err
		}
		patch := client.MergeFrom(app.DeepCopy())
		app.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: revision}
		app.Status.Health.Status = "Healthy"
		start := time.Now()
		if err := b.c.Patch(ctx, app, patch); err != nil {
			w.Stop()
			return nil, err
		}
		err = waitRevision(w, ns, name, revision)
		w.Stop()
		if err != nil {
			return nil, err
		}
		latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
	}
	l := &Latency{SamplesMillis: slices.Clone(latencies)}
	slices.Sort(latencies)
	l.P50, l.P95, l.P99 = stack.Percentile(latencies, 0.50), stack.Percentile(latencies, 0.95), stack.Percentile(latencies, 0.99)
	l.Max = latencies[len(latencies)-1]
	return l, nil
}

func waitRevision(w watch.Interface, namespace, name, revision string) error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed")
			}
			d, isDepl := ev.Object.(*v1.GitOpsDeployment)
			if isDepl && d.Namespace == namespace && d.Name == name && d.Status.Sync.Revision == revision {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("status of %s/%s never showed %s", namespace, name, revision)
		}
	}
}
