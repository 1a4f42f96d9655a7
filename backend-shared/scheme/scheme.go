// Package scheme builds the runtime.Scheme shared by the binaries and tests: Kubernetes'
// built-in types, the service's own API groups and Argo CD's Application API.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// New returns a scheme with every type the service reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1.AddToScheme(s))
	utilruntime.Must(appstudio.AddToScheme(s))
	utilruntime.Must(argov1alpha1.AddToScheme(s))
	return s
}
