// Package manifests checks the install manifests (manifests/): every kustomization builds,
// every object it produces is accepted by a real kube-apiserver (server-side apply, dry
// run, strict field validation), the Deployments are the expected ones, and every flag a
// container passes exists in its binary's flag set and parses.
package manifests

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	appstudioapp "github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	backendapp "github.com/gitops-service/gitops-service/backend/app"
	agentapp "github.com/gitops-service/gitops-service/cluster-agent/app"
)

// manifestsDir is the repository's manifests/ directory, seen from this package.
const manifestsDir = "../../manifests"

const fieldOwner = "gitops-service-manifests-test"

// build is one kustomization and what it must produce.
type build struct {
	dir string // relative to manifests/ (testdata kustomizations compose components)
	// deployments maps each Deployment (all of them: no more, no fewer) to its replicas.
	deployments map[string]int32
	// preexisting are namespaces the kustomization expects to exist without creating them;
	// the test creates them as fixtures. Any other namespace used must be created by the build.
	preexisting []string
	// check runs further assertions on the built objects.
	check func(t *testing.T, objs []*unstructured.Unstructured)
}

var builds = []build{
	{
		dir: "base",
		deployments: map[string]int32{
			"gitops-service-backend": 1, "gitops-service-cluster-agent": 1, "gitops-service-appstudio-controller": 1,
		},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkWebhookWiring(t, objs, false)
			requireNoKind(t, objs, "cert-manager.io", "Certificate")
			checkAppStudioCRDs(t, objs, false)
		},
	},
	{
		dir: "overlays/local",
		deployments: map[string]int32{
			"gitops-service-backend": 1, "gitops-service-cluster-agent": 1, "gitops-service-appstudio-controller": 1,
		},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkWebhookWiring(t, objs, false)
			checkAppStudioCRDs(t, objs, true)
			secret := find(objs, "", "Secret", "gitops-service", "gitops-service-database")
			if secret == nil {
				t.Fatalf("the local overlay has no Secret gitops-service/gitops-service-database")
			}
			if _, ok, _ := unstructured.NestedString(secret.Object, "data", "url"); !ok {
				t.Errorf("Secret gitops-service-database has no key url")
			}
			requireNoKind(t, objs, "apps", "StatefulSet") // no in-cluster PostgreSQL
		},
	},
	{
		dir: "overlays/production",
		deployments: map[string]int32{
			"gitops-service-backend": 2, "gitops-service-cluster-agent": 2, "gitops-service-appstudio-controller": 2,
		},
		preexisting: []string{"gitops-service-argocd"}, // Argo CD's, installed beforehand
		check:       func(t *testing.T, objs []*unstructured.Unstructured) { checkProduction(t, objs, false) },
	},
	{
		dir: "overlays/production-cert-manager",
		deployments: map[string]int32{
			"gitops-service-backend": 2, "gitops-service-cluster-agent": 2, "gitops-service-appstudio-controller": 2,
		},
		preexisting: []string{"gitops-service-argocd"},
		check:       func(t *testing.T, objs []*unstructured.Unstructured) { checkProduction(t, objs, true) },
	},
	{
		dir: "../tests-e2e/manifests/testdata/production-operated",
		deployments: map[string]int32{
			"gitops-service-backend": 2, "gitops-service-cluster-agent": 2, "gitops-service-appstudio-controller": 2,
		},
		preexisting: []string{"gitops-service-argocd"},
		check:       checkOperated,
	},
	{
		dir:         "overlays/remote-engine",
		deployments: map[string]int32{"gitops-service-cluster-agent": 1},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			d := deploymentsOf(t, objs)[0]
			c := d.Spec.Template.Spec.Containers[0]
			if env := envOf(c, "ENGINE_CLUSTER"); env == nil || env.Value != "east" {
				t.Errorf("the remote engine's agent serves engine cluster %+v, want east", env)
			}
			const flag = "--service-cluster-kubeconfig=/etc/gitops-service/service-cluster/kubeconfig"
			if !slices.Contains(c.Args, flag) {
				t.Errorf("the remote engine's agent lacks %s: %v", flag, c.Args)
			}
			mounted := false
			for _, m := range c.VolumeMounts {
				mounted = mounted || (m.Name == "service-cluster" && m.MountPath == "/etc/gitops-service/service-cluster")
			}
			found := false
			for _, v := range d.Spec.Template.Spec.Volumes {
				found = found || (v.Name == "service-cluster" && v.Secret != nil && v.Secret.SecretName == "gitops-service-service-cluster")
			}
			if !mounted || !found {
				t.Errorf("the service cluster kubeconfig Secret is not mounted (mount %v, volume %v)", mounted, found)
			}
			if env := envOf(c, "ENGINE_NAMESPACE"); env == nil || env.ValueFrom == nil {
				t.Errorf("the remote engine's agent must serve its own namespace")
			}
		},
	},
	{
		dir:         "overlays/engine",
		deployments: map[string]int32{"gitops-service-cluster-agent": 1},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				switch o.GetKind() {
				case "CustomResourceDefinition", "ValidatingWebhookConfiguration":
					t.Errorf("the engine overlay must hold only a cluster-agent and its RBAC, found %s %s", o.GetKind(), o.GetName())
				}
			}
			d := deploymentsOf(t, objs)[0]
			if d.Namespace == "gitops-service" {
				t.Errorf("the engine overlay's agent runs in gitops-service, want the extra engine's namespace")
			}
			if find(objs, "", "Namespace", "", d.Namespace) == nil {
				t.Errorf("the engine overlay does not create its namespace %s", d.Namespace)
			}
			env := envOf(d.Spec.Template.Spec.Containers[0], "ENGINE_NAMESPACE")
			if env == nil || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("the engine overlay's agent must serve its own namespace (ENGINE_NAMESPACE from metadata.namespace), got %+v", env)
			}
		},
	},
}

func TestManifests(t *testing.T) {
	built := map[string][]*unstructured.Unstructured{}
	for _, b := range builds {
		objs, err := kustomizeBuild(filepath.Join(manifestsDir, b.dir))
		if err != nil {
			t.Fatalf("kustomize build %s: %v", b.dir, err)
		}
		built[b.dir] = objs
	}

	// Checks that need no API server first: they fail fast.
	for _, b := range builds {
		t.Run("content/"+b.dir, func(t *testing.T) {
			checkDeployments(t, built[b.dir], b.deployments)
			if b.check != nil {
				b.check(t, built[b.dir])
			}
		})
	}
	if t.Failed() {
		return
	}

	cp, err := testenv.StartControlPlane(testenv.Options{})
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := installFixtureCRDs(ctx, cp.Client, "testdata/cert-manager-crds.yaml"); err != nil {
		t.Fatalf("installing the cert-manager CRD fixture: %v", err)
	}
	if err := installOperatorCRDs(ctx, cp.Client); err != nil {
		t.Fatalf("installing the Prometheus Operator's and CloudNativePG's CRDs: %v", err)
	}

	t.Run("dry-run rejects an invalid object", func(t *testing.T) {
		// The check below is only worth something if the API server really validates.
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "invalid", "namespace": "default"},
			"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}, "selectr": map[string]any{}},
		}}
		if err := dryRunApply(ctx, cp.Client, bad); err == nil {
			t.Fatalf("the API server accepted a Service with an unknown field")
		}
	})

	for _, b := range builds {
		t.Run("apiserver/"+b.dir, func(t *testing.T) {
			objs := built[b.dir]
			if err := ensureNamespaces(ctx, cp.Client, objs, b.preexisting); err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if err := dryRunApply(ctx, cp.Client, o); err != nil {
					t.Errorf("%s %s: %v", o.GetObjectKind().GroupVersionKind(), key(o), err)
				}
			}
		})
	}
}

// kustomizeBuild runs `kustomize build dir` with the kustomize library.
func kustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		// Through JSON, so that numbers are int64 as everywhere in unstructured objects.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// dryRunApply applies obj with server-side apply in dry-run mode, rejecting unknown fields.
func dryRunApply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	return testenv.StrictApply(ctx, c, obj, fieldOwner, client.DryRunAll)
}

// ensureNamespaces creates, for real, the Namespaces the build creates (a dry run cannot
// create objects in a namespace that does not exist) and the ones it expects to exist, and
// fails when a namespaced object lives in a namespace that is neither.
func ensureNamespaces(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, preexisting []string) error {
	known := map[string]bool{}
	for _, ns := range preexisting {
		known[ns] = true
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
			known[o.GetName()] = true
		}
	}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && !known[ns] {
			return fmt.Errorf("%s %s is in namespace %s, which the build neither creates nor declares as pre-existing", o.GetKind(), key(o), ns)
		}
	}
	for ns := range known {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// installFixtureCRDs creates the CRDs of file and waits until they are established.
func installFixtureCRDs(ctx context.Context, c client.Client, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var names []string
	for {
		crd := &unstructured.Unstructured{}
		if err := dec.Decode(&crd.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if crd.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		names = append(names, crd.GetName())
	}
	for _, name := range names {
		for {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// checkDeployments requires exactly the wanted Deployments with their replica counts, and
// checks each container against its binary: flags, probes, ports, security context.
func checkDeployments(t *testing.T, objs []*unstructured.Unstructured, want map[string]int32) {
	t.Helper()
	got := map[string]int32{}
	for _, d := range deploymentsOf(t, objs) {
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		got[d.Name] = replicas
		checkPodSpec(t, d, objs)
	}
	for name, n := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("Deployment %s is missing", name)
		} else if g != n {
			t.Errorf("Deployment %s has %d replicas, want %d", name, g, n)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected Deployment %s", name)
		}
	}
}

// envRef matches the $(VAR) references the kubelet expands in container args.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func checkPodSpec(t *testing.T, d *appsv1.Deployment, objs []*unstructured.Unstructured) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Errorf("Deployment %s: want one container, got %d", d.Name, len(spec.Containers))
		return
	}
	c := spec.Containers[0]
	binary := c.Name
	if want := "gitops-service/" + binary; c.Image != want && !strings.HasPrefix(c.Image, want+":") && !strings.HasPrefix(c.Image, want+"@") {
		t.Errorf("Deployment %s: container %s runs image %q, want %s[:tag]", d.Name, binary, c.Image, want)
	}
	if d.Spec.Selector == nil || !matches(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("Deployment %s: the selector does not match the pod template's labels", d.Name)
	}

	// Every flag must exist in the binary's flag set and parse, after the kubelet's $(VAR)
	// expansion with the container's env.
	fs, err := flagSet(binary)
	if err != nil {
		t.Errorf("Deployment %s: %v", d.Name, err)
		return
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		if !strings.HasPrefix(a, "--") {
			t.Errorf("Deployment %s: argument %q is not a --flag", d.Name, a)
		}
		args[i] = envRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			e := envOf(c, name)
			switch {
			case e == nil:
				t.Errorf("Deployment %s: argument %q refers to $%s, which the container does not define", d.Name, a, name)
				return ref
			case e.ValueFrom != nil:
				return "from-" + strings.ToLower(name)
			default:
				return e.Value
			}
		})
	}
	if err := fs.Parse(args); err != nil {
		t.Errorf("Deployment %s: the %s binary rejects its arguments %q: %v", d.Name, binary, args, err)
		return
	}
	if fs.NArg() != 0 {
		t.Errorf("Deployment %s: positional arguments %q", d.Name, fs.Args())
	}
	if len(c.Command) != 0 {
		t.Errorf("Deployment %s: command %q overrides the image's entrypoint", d.Name, c.Command)
	}

	// Probes and ports agree with the bind-address flags.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	portOf := func(flagName string) int32 {
		_, p, err := net.SplitHostPort(fs.Lookup(flagName).Value.String())
		if err != nil {
			t.Errorf("Deployment %s: --%s: %v", d.Name, flagName, err)
			return 0
		}
		var n int32
		_, _ = fmt.Sscan(p, &n)
		return n
	}
	probePort, metricsPort := portOf("health-probe-bind-address"), portOf("metrics-bind-address")
	if ports["metrics"] != metricsPort {
		t.Errorf("Deployment %s: container port metrics is %d, --metrics-bind-address says %d", d.Name, ports["metrics"], metricsPort)
	}
	for probe, wantPath := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("Deployment %s: missing an HTTP probe on %s", d.Name, wantPath)
			continue
		}
		port := probe.HTTPGet.Port.IntVal
		if probe.HTTPGet.Port.StrVal != "" {
			port = ports[probe.HTTPGet.Port.StrVal]
		}
		if probe.HTTPGet.Path != wantPath || port != probePort {
			t.Errorf("Deployment %s: probe %s on port %d, want %s on %d (--health-probe-bind-address)", d.Name, probe.HTTPGet.Path, port, wantPath, probePort)
		}
	}

	// Security context.
	sc, psc := c.SecurityContext, spec.SecurityContext
	if sc == nil || psc == nil {
		t.Errorf("Deployment %s: missing pod or container securityContext", d.Name)
		return
	}
	if !isTrue(sc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
		t.Errorf("Deployment %s: runAsNonRoot is not set", d.Name)
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Errorf("Deployment %s: readOnlyRootFilesystem is not set", d.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("Deployment %s: allowPrivilegeEscalation is not false", d.Name)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 {
		t.Errorf("Deployment %s: capabilities must drop ALL and add none", d.Name)
	}
	seccomp := psc.SeccompProfile
	if sc.SeccompProfile != nil {
		seccomp = sc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("Deployment %s: seccompProfile is not RuntimeDefault", d.Name)
	}
	if spec.ServiceAccountName == "" || find(objs, "", "ServiceAccount", d.Namespace, spec.ServiceAccountName) == nil {
		t.Errorf("Deployment %s: ServiceAccount %q is not part of the build", d.Name, spec.ServiceAccountName)
	}

	// Files named by flags are mounted from Secrets; the database URL comes from a Secret.
	if f := fs.Lookup("credentials-keys-file"); f != nil {
		if v := f.Value.String(); v == "" || secretMountFor(spec, c, path.Dir(v)) == "" {
			t.Errorf("Deployment %s: --credentials-keys-file=%q is not in a mounted Secret", d.Name, v)
		}
	}
	if fs.Lookup("database-url") != nil {
		e := envOf(c, "GITOPS_DATABASE_URL")
		if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("Deployment %s: GITOPS_DATABASE_URL must come from a Secret", d.Name)
		}
		if fs.Lookup("database-url").Value.String() != "" && !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--database-url") }) {
			// Set from the environment of this test process: harmless, but say so.
			t.Logf("note: $GITOPS_DATABASE_URL is set in the test's environment")
		}
	}
	if f := fs.Lookup("enable-webhooks"); f != nil && f.Value.String() == "true" {
		if secretMountFor(spec, c, "/tmp/k8s-webhook-server/serving-certs") == "" {
			t.Errorf("Deployment %s: serves webhooks without a certificate Secret in /tmp/k8s-webhook-server/serving-certs", d.Name)
		}
		if ports["webhook"] != 9443 {
			t.Errorf("Deployment %s: serves webhooks without container port webhook=9443", d.Name)
		}
	}
}

// checkWebhookWiring requires every webhook to call a Service of the build that selects the
// pods of one of the build's Deployments (the backend's, the appstudio-controller's) on the
// webhook port, and, with cert-manager, a CA injected from the Certificate whose Secret that
// Deployment mounts.
func checkWebhookWiring(t *testing.T, objs []*unstructured.Unstructured, certManager bool) {
	t.Helper()
	var webhooks []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ValidatingWebhookConfiguration" || o.GetKind() == "MutatingWebhookConfiguration" {
			webhooks = append(webhooks, o)
		}
	}
	if len(webhooks) == 0 {
		t.Fatalf("no webhook configuration")
	}
	deployments := deploymentsOf(t, objs)
	for _, w := range webhooks {
		// The Deployments that serve this configuration's webhooks.
		var servers []*appsv1.Deployment
		hooks, _, _ := unstructured.NestedSlice(w.Object, "webhooks")
		for _, h := range hooks {
			svcRef, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service")
			ns, _ := svcRef["namespace"].(string)
			name, _ := svcRef["name"].(string)
			svcObj := find(objs, "", "Service", ns, name)
			if svcObj == nil {
				t.Errorf("webhook configuration %s calls Service %s/%s, which is not in the build", w.GetName(), ns, name)
				continue
			}
			var svc corev1.Service
			mustConvert(t, svcObj, &svc)
			var d *appsv1.Deployment
			for _, candidate := range deployments {
				if candidate.Namespace == svc.Namespace && matches(svc.Spec.Selector, candidate.Spec.Template.Labels) {
					d = candidate
				}
			}
			if d == nil {
				t.Errorf("Service %s does not select the pods of any Deployment of the build", name)
				continue
			}
			servers = append(servers, d)
			port := int64(443)
			if p, ok := svcRef["port"].(int64); ok {
				port = p
			}
			found := false
			for _, p := range svc.Spec.Ports {
				if int64(p.Port) == port && (p.TargetPort.StrVal == "webhook" || p.TargetPort.IntVal == 9443) {
					found = true
				}
			}
			if !found {
				t.Errorf("Service %s has no port %d to the webhook port of Deployment %s", name, port, d.Name)
			}
		}
		inject := w.GetAnnotations()["cert-manager.io/inject-ca-from"]
		if !certManager {
			if inject != "" {
				t.Errorf("webhook configuration %s has a cert-manager annotation without the component", w.GetName())
			}
			continue
		}
		ns, name, _ := strings.Cut(inject, "/")
		cert := find(objs, "cert-manager.io", "Certificate", ns, name)
		if cert == nil {
			t.Errorf("webhook configuration %s injects the CA of Certificate %q, which is not in the build", w.GetName(), inject)
			continue
		}
		secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		for _, d := range servers {
			if secretMountFor(d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0], "/tmp/k8s-webhook-server/serving-certs") != secretName {
				t.Errorf("Deployment %s does not mount the Certificate's Secret %s as its webhook certificate", d.Name, secretName)
			}
		}
		issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
		if find(objs, "cert-manager.io", "Issuer", ns, issuer) == nil {
			t.Errorf("Certificate %s names Issuer %s, which is not in the build", name, issuer)
		}
	}
}

// flagSet is the flag set the binary parses: the shared manager flags plus its own.
func flagSet(binary string) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet(binary, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	manageropts.New(binary, ":8080", ":8081").BindFlags(fs)
	switch binary {
	case "backend":
		(&backendapp.Options{}).BindFlags(fs)
	case "cluster-agent":
		(&agentapp.Options{}).BindFlags(fs)
	case "appstudio-controller":
		(&appstudioapp.Options{}).BindFlags(fs)
	default:
		return nil, fmt.Errorf("container %q is none of the service's binaries", binary)
	}
	return fs, nil
}

// secretMountFor returns the Secret mounted at dir in c, or "".
func secretMountFor(spec corev1.PodSpec, c corev1.Container, dir string) string {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	return ""
}

func deploymentsOf(t *testing.T, objs []*unstructured.Unstructured) []*appsv1.Deployment {
	t.Helper()
	var out []*appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetAPIVersion() == "apps/v1" {
			d := &appsv1.Deployment{}
			mustConvert(t, o, d)
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Deployments in the build")
	}
	return out
}

// appStudioKinds are the kinds of the AppStudio CRDs (components/appstudio-crds).
var appStudioKinds = []string{"DeploymentTarget", "DeploymentTargetClaim", "DeploymentTargetClass", "Environment",
	"PromotionRun", "Snapshot", "SnapshotEnvironmentBinding"}

// checkAppStudioCRDs checks that objs hold every AppStudio CRD, or none, and the service's
// own CRDs in either case.
func checkAppStudioCRDs(t *testing.T, objs []*unstructured.Unstructured, want bool) {
	t.Helper()
	var appstudio, own []string
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		switch group {
		case "appstudio.redhat.com":
			appstudio = append(appstudio, kind)
		case "managed-gitops.redhat.com":
			own = append(own, kind)
		}
	}
	slices.Sort(appstudio)
	if want && !slices.Equal(appstudio, appStudioKinds) {
		t.Errorf("AppStudio CRDs %v, want %v", appstudio, appStudioKinds)
	}
	if !want && len(appstudio) > 0 {
		t.Errorf("AppStudio CRDs %v: a cluster with the upstream application-api's would have them replaced", appstudio)
	}
	if len(own) != 5 {
		t.Errorf("the service's own CRDs are %v, want all 5", own)
	}
}

func requireNoKind(t *testing.T, objs []*unstructured.Unstructured, group, kind string) {
	t.Helper()
	for _, o := range objs {
		if o.GroupVersionKind().Group == group && o.GetKind() == kind {
			t.Errorf("unexpected %s %s", kind, key(o))
		}
	}
}

func find(objs []*unstructured.Unstructured, group, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GroupVersionKind().Group == group && o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

func envOf(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func mustConvert(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), key(u), err)
	}
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }

func key(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// checkProduction checks a production overlay: leader election with its replicas, requests
// and limits, Argo CD's namespace left alone, and the webhook wiring with or without
// cert-manager.
func checkProduction(t *testing.T, objs []*unstructured.Unstructured, withCertManager bool) {
	t.Helper()
	checkWebhookWiring(t, objs, withCertManager)
	checkAppStudioCRDs(t, objs, false) // dist/appstudio-crds.yaml carries them
	for _, d := range deploymentsOf(t, objs) {
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--leader-elect=true") {
			t.Errorf("production Deployment %s runs %d replicas without --leader-elect=true", d.Name, *d.Spec.Replicas)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() ||
			c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("production Deployment %s lacks CPU/memory requests or limits", d.Name)
		}
	}
	if find(objs, "", "Namespace", "", "gitops-service-argocd") != nil {
		t.Errorf("the production overlay must not own Argo CD's namespace gitops-service-argocd")
	}
}
