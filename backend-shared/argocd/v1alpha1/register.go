package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// SchemeGroupVersion is Argo CD's API group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

var (
	schemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds Application and AppProject (with their lists) to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func init() {
	schemeBuilder.Register(&Application{}, &ApplicationList{}, &AppProject{}, &AppProjectList{})
}
