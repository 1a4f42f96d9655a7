package argocd

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func TestNamesOfTheObjectsTheServiceCreates(t *testing.T) {
	// The names are part of the contract (NOTES.md): users and operators look for them.
	tests := []struct {
		name, got, want string
	}{
		{"Application", ApplicationName("6f1c2a90-334b"), "gitopsdepl-6f1c2a90-334b"},
		{"in-cluster AppProject", AppProjectName("t1"), "app-project-t1"},
		{"remote AppProject", RemoteAppProjectName("t1"), "app-project-t1-remote"},
		{"cluster Secret", ClusterSecretName("e1"), "managed-env-e1"},
		{"repository Secret", RepositorySecretName("c1"), "repo-cred-c1"},
		{"remote repository Secret", RemoteRepositorySecretName("c1"), "repo-cred-c1-remote"},
		{"cluster server", ClusterServerURL("https://api.example.com:6443", "e1"), "https://api.example.com:6443?managedEnvironment=e1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestProjectNameByDestination(t *testing.T) {
	tests := []struct {
		name string
		d    Destination
		want string
	}{
		{"in-cluster", Destination{Namespace: "team-a"}, "app-project-t"},
		{"in-cluster without a namespace", Destination{}, "app-project-t"},
		{"managed environment", Destination{ManagedEnvironmentID: "e", Namespace: "team-a"}, "app-project-t-remote"},
		// The AppProject follows the cluster, not the namespace.
		{"managed environment, any namespace", Destination{ManagedEnvironmentID: "e", Namespace: "*"}, "app-project-t-remote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProjectName("t", tt.d); got != tt.want {
				t.Errorf("ProjectName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClusterSecretPerCredentialKind(t *testing.T) {
	base := Cluster{ManagedEnvironmentID: "e1", TenantID: "t1", APIURL: "https://api.example.com:6443", CAData: []byte("ca")}
	withToken := base
	withToken.BearerToken = "tok"
	withCert := base
	withCert.CertData, withCert.KeyData = []byte("cert"), []byte("key")
	withBasic := base
	withBasic.Username, withBasic.Password = "u", "p"
	insecure := withToken
	insecure.Insecure, insecure.CAData = true, nil
	scoped := withToken
	scoped.Namespaces, scoped.ClusterResources = []string{"team-a", "team-b"}, true
	scopedNoClusterResources := withToken
	scopedNoClusterResources.Namespaces = []string{"team-a"}

	tests := []struct {
		name       string
		in         Cluster
		wantConfig argov1alpha1.ClusterConfig
		// wantScope is the namespaces and clusterResources data, absent when "".
		wantNamespaces, wantClusterResources string
	}{
		{"bearer token", withToken, argov1alpha1.ClusterConfig{BearerToken: "tok", TLSClientConfig: argov1alpha1.TLSClientConfig{CAData: []byte("ca")}}, "", ""},
		{"client certificate", withCert, argov1alpha1.ClusterConfig{TLSClientConfig: argov1alpha1.TLSClientConfig{
			CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}}, "", ""},
		{"basic auth", withBasic, argov1alpha1.ClusterConfig{Username: "u", Password: "p", TLSClientConfig: argov1alpha1.TLSClientConfig{CAData: []byte("ca")}}, "", ""},
		{"insecure", insecure, argov1alpha1.ClusterConfig{BearerToken: "tok", TLSClientConfig: argov1alpha1.TLSClientConfig{Insecure: true}}, "", ""},
		// Namespaces limit Argo CD; clusterResources is only meaningful beside them.
		{"namespaces with cluster resources", scoped, argov1alpha1.ClusterConfig{BearerToken: "tok", TLSClientConfig: argov1alpha1.TLSClientConfig{CAData: []byte("ca")}},
			"team-a,team-b", "true"},
		{"namespaces without cluster resources", scopedNoClusterResources, argov1alpha1.ClusterConfig{BearerToken: "tok",
			TLSClientConfig: argov1alpha1.TLSClientConfig{CAData: []byte("ca")}}, "team-a", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec, err := ClusterSecret("argocd", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if sec.Name != "managed-env-e1" || sec.Namespace != "argocd" || sec.Type != corev1.SecretTypeOpaque {
				t.Errorf("Secret %s/%s of type %s", sec.Namespace, sec.Name, sec.Type)
			}
			wantLabels := map[string]string{
				LabelSecretType: SecretTypeCluster, LabelManagedBy: ManagedByValue, LabelTenantID: "t1", LabelManagedEnvironmentID: "e1",
			}
			if !reflect.DeepEqual(sec.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", sec.Labels, wantLabels)
			}
			// Scoped to the tenant's remote project, so that no other tenant's Application may use it.
			if got := string(sec.Data["project"]); got != "app-project-t1-remote" {
				t.Errorf("project %q", got)
			}
			if got := string(sec.Data["name"]); got != "managed-env-e1" {
				t.Errorf("name %q", got)
			}
			if got := string(sec.Data["server"]); got != "https://api.example.com:6443?managedEnvironment=e1" {
				t.Errorf("server %q", got)
			}
			var cfg argov1alpha1.ClusterConfig
			if err := json.Unmarshal(sec.Data["config"], &cfg); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg, tt.wantConfig) {
				t.Errorf("config %+v, want %+v", cfg, tt.wantConfig)
			}
			ns, hasNS := sec.Data["namespaces"]
			cr, hasCR := sec.Data["clusterResources"]
			if tt.wantNamespaces == "" {
				if hasNS || hasCR {
					t.Errorf("a cluster-wide environment has namespaces %q and clusterResources %q", ns, cr)
				}
			} else if string(ns) != tt.wantNamespaces || string(cr) != tt.wantClusterResources {
				t.Errorf("namespaces %q clusterResources %q, want %q %q", ns, cr, tt.wantNamespaces, tt.wantClusterResources)
			}
			if sec.Annotations[AnnotationDataHash] != DataHash(sec.Data) || Drifted(sec) {
				t.Errorf("the data hash %q does not match the data", sec.Annotations[AnnotationDataHash])
			}
		})
	}
}

func TestClusterSecretHashChangesWithTheCredentials(t *testing.T) {
	a, _ := ClusterSecret("argocd", Cluster{ManagedEnvironmentID: "e", TenantID: "t", APIURL: "https://x", BearerToken: "one"})
	b, _ := ClusterSecret("argocd", Cluster{ManagedEnvironmentID: "e", TenantID: "t", APIURL: "https://x", BearerToken: "two"})
	again, _ := ClusterSecret("argocd", Cluster{ManagedEnvironmentID: "e", TenantID: "t", APIURL: "https://x", BearerToken: "one"})
	if a.Annotations[AnnotationDataHash] == b.Annotations[AnnotationDataHash] {
		t.Error("a rotated token gives the same hash: the sweep would not rewrite the Secret")
	}
	if a.Annotations[AnnotationDataHash] != again.Annotations[AnnotationDataHash] {
		t.Error("the same credentials give different hashes")
	}
}

func TestDataHash(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string][]byte
		same bool
	}{
		{"key order does not matter", map[string][]byte{"a": []byte("1"), "b": []byte("2")}, map[string][]byte{"b": []byte("2"), "a": []byte("1")}, true},
		{"nil and empty maps", nil, map[string][]byte{}, true},
		{"a changed value", map[string][]byte{"a": []byte("1")}, map[string][]byte{"a": []byte("2")}, false},
		{"a renamed key", map[string][]byte{"a": []byte("1")}, map[string][]byte{"b": []byte("1")}, false},
		// Length prefixes keep concatenations apart.
		{"bytes moved between key and value", map[string][]byte{"ab": []byte("c")}, map[string][]byte{"a": []byte("bc")}, false},
		{"bytes moved between entries", map[string][]byte{"a": []byte("1b"), "c": []byte("2")}, map[string][]byte{"a": []byte("1"), "bc": []byte("2")}, false},
		{"an empty value is not an absent key", map[string][]byte{"a": {}}, map[string][]byte{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := DataHash(tt.a), DataHash(tt.b)
			if (ha == hb) != tt.same {
				t.Errorf("DataHash equal = %v, want %v (%s, %s)", ha == hb, tt.same, ha, hb)
			}
			if len(ha) != 64 {
				t.Errorf("hash %q is not hex SHA-256", ha)
			}
		})
	}
}

func TestDrifted(t *testing.T) {
	data := map[string][]byte{"url": []byte("https://x"), "password": []byte("p")}
	tests := []struct {
		name        string
		annotations map[string]string
		data        map[string][]byte
		want        bool
	}{
		{"as written", map[string]string{AnnotationDataHash: DataHash(data)}, data, false},
		{"a value edited by hand", map[string]string{AnnotationDataHash: DataHash(data)},
			map[string][]byte{"url": []byte("https://x"), "password": []byte("changed")}, true},
		{"a key added by hand", map[string]string{AnnotationDataHash: DataHash(data)},
			map[string][]byte{"url": []byte("https://x"), "password": []byte("p"), "extra": []byte("1")}, true},
		{"a key removed by hand", map[string]string{AnnotationDataHash: DataHash(data)}, map[string][]byte{"url": []byte("https://x")}, true},
		{"the hash edited by hand", map[string]string{AnnotationDataHash: "0000"}, data, true},
		// A Secret without the hash was not written by the service: nothing to compare.
		{"no hash", nil, data, false},
		{"an empty hash is a hash", map[string]string{AnnotationDataHash: ""}, data, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec := &corev1.Secret{Data: tt.data}
			sec.Annotations = tt.annotations
			if got := Drifted(sec); got != tt.want {
				t.Errorf("Drifted = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNormalizeAPIURLAndSameAPIURL(t *testing.T) {
	tests := []struct {
		a, b     string
		wantNorm string // of a
		same     bool
	}{
		{"https://api.example.com:6443", "https://api.example.com:6443", "https://api.example.com:6443", true},
		{"https://api.example.com:6443/", "https://api.example.com:6443", "https://api.example.com:6443", true},
		{"https://api.example.com:6443///", "https://api.example.com:6443/", "https://api.example.com:6443", true},
		{"https://host/k8s/clusters/c-1/", "https://host/k8s/clusters/c-1", "https://host/k8s/clusters/c-1", true},
		// Only trailing slashes are ignored: a port, a path, a scheme or a case name another server.
		{"https://api.example.com", "https://api.example.com:443", "https://api.example.com", false},
		{"https://host/a", "https://host/b", "https://host/a", false},
		{"https://host", "http://host", "https://host", false},
		{"https://Host", "https://host", "https://Host", false},
		{"", "/", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.a+" "+tt.b, func(t *testing.T) {
			if got := NormalizeAPIURL(tt.a); got != tt.wantNorm {
				t.Errorf("NormalizeAPIURL(%q) = %q, want %q", tt.a, got, tt.wantNorm)
			}
			if got := SameAPIURL(tt.a, tt.b); got != tt.same {
				t.Errorf("SameAPIURL = %v, want %v", got, tt.same)
			}
			if SameAPIURL(tt.a, tt.b) != SameAPIURL(tt.b, tt.a) {
				t.Error("SameAPIURL is not symmetric")
			}
		})
	}
}

func TestRepositoryKeyVariants(t *testing.T) {
	tests := []struct {
		url, want string
	}{
		{"https://github.com/org/repo", "https://github.com/org/repo"},
		{"https://GitHub.com/Org/Repo", "https://github.com/org/repo"},
		{"https://github.com/org/repo.git", "https://github.com/org/repo"},
		{"https://github.com/org/repo/", "https://github.com/org/repo"},
		{"https://github.com/org/repo.git/", "https://github.com/org/repo"},
		{"  https://github.com/org/repo \n", "https://github.com/org/repo"},
		{"git@github.com:org/repo.git", "ssh://git@github.com/org/repo"},
		{"GIT@GitHub.com:Org/Repo", "ssh://git@github.com/org/repo"},
		// Only the first colon of an scp-like address separates host and path.
		{"git@host:org/a:b.git", "ssh://git@host/org/a:b"},
		{"ssh://git@github.com:22/org/repo.git", "ssh://git@github.com:22/org/repo"},
		// A URL with a scheme is never read as scp-like, even with credentials in it.
		{"https://user@host:8443/repo", "https://user@host:8443/repo"},
		{"https://github.com/org/repo.github", "https://github.com/org/repo.github"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := RepositoryKey(tt.url); got != tt.want {
				t.Errorf("RepositoryKey(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}

func TestApplicationCarriesTheLabelsTheSweepsNeed(t *testing.T) {
	spec := ApplicationSpec(ApplicationInput{RepoURL: "https://x", Path: "p", Destination: Destination{Namespace: "n"}, Project: "app-project-t"})
	app := Application("argocd", "gitopsdepl-u", "app-1", "t", spec)
	if app.Name != "gitopsdepl-u" || app.Namespace != "argocd" || app.Kind != "Application" || app.APIVersion != "argoproj.io/v1alpha1" {
		t.Errorf("object %s %s %s/%s", app.APIVersion, app.Kind, app.Namespace, app.Name)
	}
	want := map[string]string{LabelManagedBy: ManagedByValue, LabelApplicationID: "app-1", LabelTenantID: "t"}
	if !reflect.DeepEqual(app.Labels, want) {
		t.Errorf("labels %v, want %v", app.Labels, want)
	}
	// Deleting the Application must prune what it deployed, in the background.
	if !slices.Equal(app.Finalizers, []string{argov1alpha1.BackgroundPropagationPolicyFinalizer}) {
		t.Errorf("finalizers %v", app.Finalizers)
	}
	if !reflect.DeepEqual(app.Spec, spec) {
		t.Error("the spec was changed")
	}
}

func TestApplicationSpecSyncOptions(t *testing.T) {
	tests := []struct {
		name string
		user []string
		want []string
	}{
		{"none", nil, []string{SyncOptionPrunePropagationBackground}},
		{"one", []string{"CreateNamespace=true"}, []string{SyncOptionPrunePropagationBackground, "CreateNamespace=true"}},
		{"repeated", []string{"CreateNamespace=true", "CreateNamespace=true"}, []string{SyncOptionPrunePropagationBackground, "CreateNamespace=true"}},
		// The service's own option is not repeated when a user names it.
		{"the service's own", []string{SyncOptionPrunePropagationBackground, "CreateNamespace=false"},
			[]string{SyncOptionPrunePropagationBackground, "CreateNamespace=false"}},
		{"sorted", []string{"CreateNamespace=true", "CreateNamespace=false"},
			[]string{SyncOptionPrunePropagationBackground, "CreateNamespace=false", "CreateNamespace=true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := ApplicationSpec(ApplicationInput{SyncOptions: tt.user})
			if got := []string(spec.SyncPolicy.SyncOptions); !slices.Equal(got, tt.want) {
				t.Errorf("sync options %q, want %q", got, tt.want)
			}
		})
	}
}

func TestApplicationSpecAutomatedOnlyWhenAsked(t *testing.T) {
	manual := ApplicationSpec(ApplicationInput{Destination: Destination{Namespace: "n"}})
	if manual.SyncPolicy.Automated != nil {
		t.Errorf("a manual deployment is automated: %+v", manual.SyncPolicy.Automated)
	}
	automated := ApplicationSpec(ApplicationInput{Destination: Destination{Namespace: "n"}, Automated: true})
	if a := automated.SyncPolicy.Automated; a == nil || !a.Prune || !a.SelfHeal || !a.AllowEmpty {
		t.Errorf("automated policy %+v, want prune, selfHeal and allowEmpty", a)
	}
}

func TestSyncOperation(t *testing.T) {
	spec := ApplicationSpec(ApplicationInput{RepoURL: "https://x", TargetRevision: "main", SyncOptions: []string{"CreateNamespace=true"}})
	tests := []struct {
		name         string
		spec         argov1alpha1.ApplicationSpec
		revision     string
		wantRevision string
		wantOptions  []string
		wantRetry    bool
	}{
		{"a SyncRun's revision", spec, "v1.2.0", "v1.2.0", []string{SyncOptionPrunePropagationBackground, "CreateNamespace=true"}, true},
		{"the spec's target revision without one", spec, "", "main", []string{SyncOptionPrunePropagationBackground, "CreateNamespace=true"}, true},
		{"no sync policy, no source", argov1alpha1.ApplicationSpec{}, "", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := SyncOperation(tt.spec, tt.revision, "gitops-service")
			if op.InitiatedBy.Username != "gitops-service" {
				t.Errorf("initiated by %q", op.InitiatedBy.Username)
			}
			if op.Sync == nil || op.Sync.Revision != tt.wantRevision {
				t.Fatalf("sync %+v, want revision %q", op.Sync, tt.wantRevision)
			}
			// A manual sync does not prune, as `argocd app sync` without --prune.
			if op.Sync.Prune {
				t.Error("a manual sync prunes")
			}
			if got := []string(op.Sync.SyncOptions); !slices.Equal(got, tt.wantOptions) {
				t.Errorf("sync options %q, want %q", got, tt.wantOptions)
			}
			if tt.wantRetry && (op.Retry.Limit != -1 || op.Retry.Backoff == nil) {
				t.Errorf("retry %+v, want the spec's", op.Retry)
			}
		})
	}
	// The operation is a copy: changing it leaves the spec alone.
	op := SyncOperation(spec, "", "x")
	op.Sync.SyncOptions[0] = "changed"
	*op.Retry.Backoff.Factor = 9
	if spec.SyncPolicy.SyncOptions[0] != SyncOptionPrunePropagationBackground || *spec.SyncPolicy.Retry.Backoff.Factor != 2 {
		t.Error("SyncOperation shares the spec's options or retry")
	}
}

func TestSyncOperationID(t *testing.T) {
	tests := []struct {
		name string
		op   *argov1alpha1.Operation
		want string
	}{
		{"no operation", nil, ""},
		{"no info", &argov1alpha1.Operation{}, ""},
		{"another component's info", &argov1alpha1.Operation{Info: []*argov1alpha1.Info{{Name: "reason", Value: "x"}}}, ""},
		{"the SyncRun's", &argov1alpha1.Operation{Info: []*argov1alpha1.Info{nil, {Name: "reason", Value: "x"}, {Name: InfoSyncOperationID, Value: "run-1"}}}, "run-1"},
		{"the first of two", &argov1alpha1.Operation{Info: []*argov1alpha1.Info{{Name: InfoSyncOperationID, Value: "a"}, {Name: InfoSyncOperationID, Value: "b"}}}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SyncOperationID(tt.op); got != tt.want {
				t.Errorf("SyncOperationID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRepositorySecretsPerCredentialKind(t *testing.T) {
	tests := []struct {
		name       string
		in         Repository
		wantData   map[string]string
		wantAbsent []string
	}{
		{"username and password", Repository{RepositoryCredentialID: "c", TenantID: "t", URL: "https://x/r", Username: "u", Password: "p"},
			map[string]string{"type": "git", "url": "https://x/r", "username": "u", "password": "p"}, []string{"sshPrivateKey"}},
		// An SSH key wins: Argo CD would otherwise try the empty username first.
		{"SSH key", Repository{RepositoryCredentialID: "c", TenantID: "t", URL: "ssh://git@x/r", Username: "u", SSHPrivateKey: "KEY"},
			map[string]string{"type": "git", "url": "ssh://git@x/r", "sshPrivateKey": "KEY"}, []string{"username", "password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := RepositorySecrets("argocd", tt.in)
			if len(secrets) != 2 || secrets[0].Name != "repo-cred-c" || secrets[1].Name != "repo-cred-c-remote" {
				t.Fatalf("Secrets %v", secrets)
			}
			for i, s := range secrets {
				wantProject := []string{"app-project-t", "app-project-t-remote"}[i]
				if got := string(s.Data["project"]); got != wantProject {
					t.Errorf("%s: project %q, want %q", s.Name, got, wantProject)
				}
				for k, v := range tt.wantData {
					if string(s.Data[k]) != v {
						t.Errorf("%s: %s = %q, want %q", s.Name, k, s.Data[k], v)
					}
				}
				for _, k := range tt.wantAbsent {
					if _, ok := s.Data[k]; ok {
						t.Errorf("%s: has %s", s.Name, k)
					}
				}
				wantLabels := map[string]string{LabelSecretType: SecretTypeRepository, LabelManagedBy: ManagedByValue,
					LabelTenantID: "t", LabelRepositoryCredID: "c"}
				if !reflect.DeepEqual(s.Labels, wantLabels) {
					t.Errorf("%s: labels %v", s.Name, s.Labels)
				}
				if s.Namespace != "argocd" || Drifted(s) || s.Annotations[AnnotationDataHash] == "" {
					t.Errorf("%s: namespace %q, hash %q", s.Name, s.Namespace, s.Annotations[AnnotationDataHash])
				}
			}
		})
	}
}

func TestAppProjectsCarryTheHashOfTheirSpec(t *testing.T) {
	local, remote := AppProjects("argocd", "t", InClusterServer, []string{"https://x/r"},
		[]ProjectDestination{{Namespace: "a"}, {ManagedEnvironmentID: "e1", Namespace: "*"}, {ManagedEnvironmentID: "e1", Namespace: "*"}})
	for _, p := range []*argov1alpha1.AppProject{local, remote} {
		if p.Annotations[AnnotationDataHash] != ProjectSpecHash(p.Spec) {
			t.Errorf("%s: hash %q does not match its spec", p.Name, p.Annotations[AnnotationDataHash])
		}
	}
	if local.Annotations[AnnotationDataHash] == remote.Annotations[AnnotationDataHash] {
		t.Error("two different projects have the same hash")
	}
	// A destination listed twice is one destination.
	if len(remote.Spec.Destinations) != 1 {
		t.Errorf("remote destinations %+v", remote.Spec.Destinations)
	}
	edited := local.Spec.DeepCopy()
	edited.SourceRepos = append(edited.SourceRepos, "*")
	if ProjectSpecHash(*edited) == ProjectSpecHash(local.Spec) {
		t.Error("a project opened to every repository by hand keeps its hash")
	}
}

func TestAppProjectsWithoutDestinationsAllowNone(t *testing.T) {
	local, remote := AppProjects("argocd", "t", InClusterServer, nil, nil)
	if len(local.Spec.Destinations) != 0 || len(remote.Spec.Destinations) != 0 || len(local.Spec.SourceRepos) != 0 {
		t.Errorf("a tenant with nothing got destinations %+v / %+v and repos %v", local.Spec.Destinations, remote.Spec.Destinations, local.Spec.SourceRepos)
	}
}

func TestClusterRESTConfigDropsTheEnvironmentQuery(t *testing.T) {
	tests := []struct {
		server, want string
	}{
		{"https://api.example.com:6443?managedEnvironment=e1", "https://api.example.com:6443"},
		{"https://host/k8s/clusters/c-1?managedEnvironment=e1", "https://host/k8s/clusters/c-1"},
		{"https://service.example.com", "https://service.example.com"},
	}
	for _, tt := range tests {
		sec := &corev1.Secret{Data: map[string][]byte{"server": []byte(tt.server), "config": []byte(`{"tlsClientConfig":{"serverName":"sni"}}`)}}
		cfg, err := ClusterRESTConfig(sec)
		if err != nil {
			t.Fatalf("%s: %v", tt.server, err)
		}
		if cfg.Host != tt.want || cfg.ServerName != "sni" {
			t.Errorf("%s: host %q server name %q, want %q", tt.server, cfg.Host, cfg.ServerName, tt.want)
		}
	}
}

func TestServiceServer(t *testing.T) {
	if got := ServiceServer(""); got != InClusterServer {
		t.Errorf("ServiceServer(\"\") = %q", got)
	}
	if got := ServiceServer("https://svc:6443"); got != "https://svc:6443" {
		t.Errorf("ServiceServer = %q", got)
	}
}
