package framework

import (
	"context"
	"errors"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// StartRemoteCluster starts a second API server, a cluster the service reaches only through
// a GitOpsDeploymentManagedEnvironment, and returns it with the kubeconfig of a
// cluster-admin ServiceAccount (bearer token), as a user would hand it over.
func StartRemoteCluster(ctx context.Context) (*testenv.ControlPlane, []byte, error) {
	remote, err := testenv.StartControlPlane(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		return nil, nil, err
	}
	kubeconfig, _, err := remote.ServiceAccountKubeconfig(ctx, "kube-system", "gitops-deployer")
	if err != nil {
		return nil, nil, errors.Join(err, remote.Stop())
	}
	return remote, kubeconfig, nil
}
