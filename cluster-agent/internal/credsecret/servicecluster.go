package credsecret

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// DefaultServiceClusterInterval is how often the service cluster Secret is compared with
// the kubeconfig file: a mounted Secret changes in place when its credentials rotate.
const DefaultServiceClusterInterval = time.Minute

// ServiceCluster keeps the cluster Secret by which the Argo CD of an engine instance on
// another cluster reaches the service's cluster (argocd.ServiceClusterSecret), from the
// --service-cluster-kubeconfig file: applied when the agent starts, then again whenever
// the file or the Secret no longer match. A manager Runnable on the leader.
type ServiceCluster struct {
	Client client.Client
	// Reader reads the Secret from the API server: the agent caches no Secrets.
	Reader   client.Reader
	Identity engine.Identity
	// Kubeconfig is the --service-cluster-kubeconfig file.
	Kubeconfig string
	Interval   time.Duration
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *ServiceCluster) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable.
func (s *ServiceCluster) Start(ctx context.Context) error {
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultServiceClusterInterval
	}
	periodic.RunNow(ctx, "service-cluster-secret", interval, s.Apply)
	return nil
}

// Apply writes the Secret when it is missing or differs from the file. Its errors quote
// neither the file nor the Secret.
func (s *ServiceCluster) Apply(ctx context.Context) error {
	cfg, err := engine.LoadServiceCluster(s.Kubeconfig)
	if err != nil {
		return err
	}
	if server := argocd.NormalizeAPIURL(cfg.Host); server != s.Identity.ServiceClusterAPIURL {
		// The Applications already name the old server: they change only with a restart.
		return fmt.Errorf("the server of --service-cluster-kubeconfig changed from %s to %s: restart the cluster-agent",
			s.Identity.ServiceClusterAPIURL, server)
	}
	want, err := argocd.ServiceClusterSecret(s.Identity.Namespace, s.Identity.ServiceClusterAPIURL, argov1alpha1.TLSClientConfig{
		Insecure: cfg.Insecure, ServerName: cfg.ServerName, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData,
	}, cfg.BearerToken)
	if err != nil {
		return err
	}
	have := &corev1.Secret{}
	err = s.Reader.Get(ctx, client.ObjectKeyFromObject(want), have)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading Secret %s failed (%s)", want.Name, reason(err))
	}
	if err == nil && have.Annotations[argocd.AnnotationDataHash] == want.Annotations[argocd.AnnotationDataHash] && !argocd.Drifted(have) {
		return nil
	}
	return applySecret(ctx, s.Client, want)
}
