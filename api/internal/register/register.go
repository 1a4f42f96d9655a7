// Package register adds an API package's types to a runtime.Scheme with apimachinery alone,
// as controller-runtime's scheme.Builder (deprecated) did, so that the API packages stay
// light.
package register

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Builder collects the types of one group version.
type Builder struct {
	GroupVersion schema.GroupVersion
	runtime.SchemeBuilder
}

// Register adds objects to what AddToScheme adds.
func (b *Builder) Register(objects ...runtime.Object) {
	b.SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(b.GroupVersion, objects...)
		metav1.AddToGroupVersion(s, b.GroupVersion)
		return nil
	})
}

// AddToScheme adds every registered type to s.
func (b *Builder) AddToScheme(s *runtime.Scheme) error {
	return b.SchemeBuilder.AddToScheme(s)
}
