package manageropts

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UncachedSecrets has the manager's client read Secrets from the API server, not from a
// cache. The backend and the appstudio-controller learn that a credential changed by
// watching the Secrets of every namespace, and watch only their metadata
// (builder.OnlyMetadata): a cache of whole Secrets would hold every Secret of the cluster
// in memory, Helm releases and other controllers' credentials included, and receive every
// byte written to them, for the few the service reads when a credential is checked.
func UncachedSecrets(o *ctrl.Options) {
	if o.Client.Cache == nil {
		o.Client.Cache = &client.CacheOptions{}
	}
	o.Client.Cache.DisableFor = append(o.Client.Cache.DisableFor, &corev1.Secret{})
}
