// Package v1alpha1 is the service's own copy of the part of Argo CD's API
// (argoproj.io/v1alpha1) it writes and reads: the Application's spec, status and operation,
// and the AppProject's spec. Owning it keeps Argo CD's Go module, and the Kubernetes
// versions it pins, out of the service's binaries.
//
// The field names and JSON shapes are Argo CD's: a conformance test applies every object
// the service builds to Argo CD's own CRDs with strict field validation, and the end-to-end
// tests decode what the real Argo CD writes without losing what the service reads. Fields
// the service neither writes nor reads are left out; an object decoded into these types and
// written back with an update would lose them, so the service writes Applications with
// server-side apply or patches, never a full update.
//
// +kubebuilder:object:generate=true
// +groupName=argoproj.io
package v1alpha1
