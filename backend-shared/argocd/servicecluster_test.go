package argocd

import (
	"encoding/json"
	"testing"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func TestAnEngineOnAnotherClusterReachesTheServiceClusterByItsServer(t *testing.T) {
	const remote = "https://service.example.com:6443"
	inCluster := ApplicationSpec(ApplicationInput{RepoURL: "https://git.example.com/org/a", Path: "dev",
		Destination: Destination{Namespace: "team-a"}, Project: "p"})
	onEnv := ApplicationSpec(ApplicationInput{RepoURL: "https://git.example.com/org/a", Path: "dev",
		Destination: Destination{Namespace: "team-a", ManagedEnvironmentID: "env-1"}, Project: "p"})

	if got := OnServiceCluster(inCluster, ServiceServer("")).Destination.Server; got != InClusterServer {
		t.Errorf("on the service's cluster the destination is %q, want %q", got, InClusterServer)
	}
	if got := OnServiceCluster(inCluster, ServiceServer(remote)).Destination.Server; got != remote {
		t.Errorf("on another cluster the destination is %q, want %q", got, remote)
	}
	if inCluster.Destination.Server != InClusterServer {
		t.Errorf("OnServiceCluster changed its argument: %q", inCluster.Destination.Server)
	}
	if got := OnServiceCluster(onEnv, ServiceServer(remote)).Destination; got != onEnv.Destination {
		t.Errorf("a managed environment's destination changed: %+v", got)
	}

	local, _ := AppProjects("argocd", "t", ServiceServer(remote), nil, []ProjectDestination{{Namespace: "team-a"}})
	if want := []argov1alpha1.ApplicationDestination{{Server: remote, Namespace: "team-a"}}; len(local.Spec.Destinations) != 1 || local.Spec.Destinations[0] != want[0] {
		t.Errorf("AppProject destinations %+v, want %+v", local.Spec.Destinations, want)
	}
}

func TestServiceClusterSecretIsAnUnscopedClusterSecretOutsideTheSweeps(t *testing.T) {
	const remote = "https://service.example.com:6443"
	sec, err := ServiceClusterSecret("argocd", remote, argov1alpha1.TLSClientConfig{CAData: []byte("ca")}, "token")
	if err != nil {
		t.Fatal(err)
	}
	if sec.Name != ServiceClusterSecretName || sec.Labels[LabelSecretType] != SecretTypeCluster || sec.Labels[LabelServiceCluster] != "true" {
		t.Errorf("name %q, labels %v", sec.Name, sec.Labels)
	}
	if _, ok := sec.Labels[LabelManagedBy]; ok {
		t.Errorf("the Secret has %s, so the sweeps would delete it as a row-less object", LabelManagedBy)
	}
	if _, ok := sec.Data["project"]; ok {
		t.Error("the Secret is scoped to a project; every tenant's AppProject needs it")
	}
	if string(sec.Data["server"]) != remote {
		t.Errorf("server %q", sec.Data["server"])
	}
	var cfg argov1alpha1.ClusterConfig
	if err := json.Unmarshal(sec.Data["config"], &cfg); err != nil || cfg.BearerToken != "token" || string(cfg.CAData) != "ca" {
		t.Errorf("config %+v (%v)", cfg, err)
	}
	if sec.Annotations[AnnotationDataHash] != DataHash(sec.Data) {
		t.Error("no data hash")
	}
	if _, err := ServiceClusterSecret("argocd", "", argov1alpha1.TLSClientConfig{}, "token"); err == nil {
		t.Error("a Secret without a server was built")
	}
}
