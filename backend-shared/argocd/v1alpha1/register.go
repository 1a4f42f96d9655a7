package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is Argo CD's API group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// AddToScheme adds Application and AppProject (with their lists) to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Application{}, &ApplicationList{}, &AppProject{}, &AppProjectList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
