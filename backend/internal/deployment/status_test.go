package deployment

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func TestReconciledState(t *testing.T) {
	const idA, idB = "6f1c2a1e-0000-4000-8000-00000000000a", "6f1c2a1e-0000-4000-8000-00000000000b"
	// The tenant's GitOpsDeploymentManagedEnvironments by the id they map to; B's CR is gone.
	names := map[string]string{idA: "env-a"}
	source := argov1alpha1.ApplicationSource{RepoURL: "https://git.example/r", Path: "dev", TargetRevision: "main"}
	compared := func(dest argov1alpha1.ApplicationDestination) *argov1alpha1.ComparedTo {
		return &argov1alpha1.ComparedTo{Source: source, Destination: dest}
	}
	wantSource := v1.GitOpsDeploymentSource{RepoURL: "https://git.example/r", Path: "dev", Branch: "main"}
	failure := errors.New("database down")
	for name, tc := range map[string]struct {
		compared    *argov1alpha1.ComparedTo
		lookupFails bool
		want        v1.ReconciledState
		lookedUp    []string
		err         error
	}{
		"nothing compared yet": {},
		"the local cluster": {
			compared: compared(argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "t"}),
			want:     v1.ReconciledState{Source: wantSource, Destination: v1.GitOpsDeploymentDestination{Namespace: "t"}},
		},
		"a managed environment is named by its CR": {
			compared: compared(argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(idA), Namespace: "default"}),
			want:     v1.ReconciledState{Source: wantSource, Destination: v1.GitOpsDeploymentDestination{Name: "env-a", Namespace: "default"}},
			lookedUp: []string{idA},
		},
		"a managed environment without a CR any more has no name": {
			compared: compared(argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(idB), Namespace: "default"}),
			want:     v1.ReconciledState{Source: wantSource, Destination: v1.GitOpsDeploymentDestination{Namespace: "default"}},
			lookedUp: []string{idB},
		},
		"another cluster name is no managed environment": {
			compared: compared(argov1alpha1.ApplicationDestination{Name: "in-cluster", Namespace: "t"}),
			want:     v1.ReconciledState{Source: wantSource, Destination: v1.GitOpsDeploymentDestination{Namespace: "t"}},
		},
		"a cluster Secret name without an id": {
			compared: compared(argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(""), Namespace: "t"}),
			want:     v1.ReconciledState{Source: wantSource, Destination: v1.GitOpsDeploymentDestination{Namespace: "t"}},
		},
		"no source compared": {
			compared: &argov1alpha1.ComparedTo{Destination: argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(idA), Namespace: "default"}},
			want:     v1.ReconciledState{Destination: v1.GitOpsDeploymentDestination{Name: "env-a", Namespace: "default"}},
			lookedUp: []string{idA},
		},
		"a failed lookup is an error": {
			compared:    compared(argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(idA), Namespace: "default"}),
			lookupFails: true,
			lookedUp:    []string{idA},
			err:         failure,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var lookedUp []string
			got, err := reconciledState(tc.compared, func(id string) (string, error) {
				lookedUp = append(lookedUp, id)
				if tc.lookupFails {
					return "", failure
				}
				return names[id], nil
			})
			g.Expect(lookedUp).To(Equal(tc.lookedUp), "looked up only when a managed environment was compared")
			if tc.err != nil {
				g.Expect(err).To(MatchError(tc.err))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
