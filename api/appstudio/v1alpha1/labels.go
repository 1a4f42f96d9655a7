/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// Labels that the GitOps Service puts on the GitOpsDeployments it generates for a
// SnapshotEnvironmentBinding, so that they can be found by application, component and
// environment.
const (
	// LabelApplication holds the name of the Application.
	LabelApplication = "appstudio.openshift.io/application"
	// LabelComponent holds the name of the Component.
	LabelComponent = "appstudio.openshift.io/component"
	// LabelEnvironment holds the name of the Environment.
	LabelEnvironment = "appstudio.openshift.io/environment"
)

// Informational labels that users may put on a SnapshotEnvironmentBinding (as in the API
// documentation's example); the GitOps Service does not rely on them.
const (
	// LabelBindingApplication holds the name of the binding's Application.
	LabelBindingApplication = "appstudio.application"
	// LabelBindingEnvironment holds the name of the binding's Environment.
	LabelBindingEnvironment = "appstudio.environment"
)
