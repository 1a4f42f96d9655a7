package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readObjects decodes every document of a multi-document YAML file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// expectation reads the `# expect: ...` / `# expect-on-update: ...` header of an invalid case.
func expectation(t *testing.T, path string) (message string, onUpdate bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "# expect-on-update:"); ok {
			return strings.TrimSpace(rest), true
		}
		if rest, ok := strings.CutPrefix(line, "# expect:"); ok {
			return strings.TrimSpace(rest), false
		}
	}
	t.Fatalf("%s has no `# expect:` or `# expect-on-update:` line", path)
	return "", false
}

// place puts obj in namespace ns when its kind is namespaced, and schedules the deletion of
// cluster-scoped objects so that cases do not collide.
func place(t *testing.T, obj *unstructured.Unstructured, ns string) {
	t.Helper()
	namespaced, err := cp.Client.IsObjectNamespaced(obj)
	if err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	if namespaced {
		obj.SetNamespace(ns)
		return
	}
	obj.SetNamespace("")
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), obj.DeepCopy()) })
}

// create creates obj without its status, then writes the status through the status
// subresource, so that both the spec and the status shapes are validated. strict refuses
// unknown fields, as kubectl does; otherwise the API server drops them, as it does for
// clients that do not ask for strict field validation.
func create(ctx context.Context, obj *unstructured.Unstructured, strict bool) error {
	var createOpts []client.CreateOption
	var updateOpts []client.SubResourceUpdateOption
	if strict {
		createOpts = append(createOpts, client.FieldValidation(metav1.FieldValidationStrict))
		updateOpts = append(updateOpts, client.FieldValidation(metav1.FieldValidationStrict))
	}
	status, hasStatus := obj.Object["status"]
	delete(obj.Object, "status")
	if err := cp.Client.Create(ctx, obj, createOpts...); err != nil {
		return err
	}
	if !hasStatus {
		return nil
	}
	obj.Object["status"] = status
	return cp.Client.Status().Update(ctx, obj, updateOpts...)
}

// TestAPIExamplesAreAccepted creates every api.md example with strict field validation: a
// field the CRDs do not know fails the test instead of being dropped.
func TestAPIExamplesAreAccepted(t *testing.T) {
	files, _ := filepath.Glob("testdata/api-examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no api examples in testdata/api-examples")
	}
	kinds := map[string]bool{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			for _, obj := range readObjects(t, file) {
				place(t, obj, ns.Name)
				if err := create(ctx, obj, true); err != nil {
					t.Errorf("%s %s rejected: %v", obj.GetKind(), obj.GetName(), err)
				}
				kinds[obj.GetKind()] = true
			}
		})
	}
	for _, kind := range []string{
		"GitOpsDeployment", "GitOpsDeploymentSyncRun", "GitOpsDeploymentManagedEnvironment",
		"GitOpsDeploymentRepositoryCredential", "Operation", "Environment", "Snapshot",
		"SnapshotEnvironmentBinding", "PromotionRun", "DeploymentTarget", "DeploymentTargetClaim",
		"DeploymentTargetClass",
	} {
		if !kinds[kind] {
			t.Errorf("no api example of kind %s", kind)
		}
	}
}

func TestInvalidObjectsAreRejected(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 20 {
		t.Fatalf("want at least 20 invalid cases, have %d", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			want, onUpdate := expectation(t, file)
			ns := newNamespace(t)
			objs := readObjects(t, file)
			for _, obj := range objs {
				place(t, obj, ns.Name)
			}
			if !onUpdate {
				g.Expect(objs).To(HaveLen(1))
				err := create(ctx, objs[0], false)
				g.Expect(err).To(HaveOccurred(), "the API server accepted an invalid object")
				g.Expect(err.Error()).To(ContainSubstring(want))
				return
			}
			g.Expect(objs).To(HaveLen(2), "an update case has the object and its update")
			g.Expect(create(ctx, objs[0], false)).To(Succeed())
			update := objs[1]
			update.SetResourceVersion(objs[0].GetResourceVersion())
			err := cp.Client.Update(ctx, update)
			g.Expect(err).To(HaveOccurred(), "the API server accepted an invalid update")
			g.Expect(err.Error()).To(ContainSubstring(want))
		})
	}
}

// TestPrinterColumns asks for a Table, as `kubectl get` does, and checks the columns users see.
func TestPrinterColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	depl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "managed-gitops.redhat.com/v1alpha1",
		"kind":       "GitOpsDeployment",
		"metadata":   map[string]any{"name": "shown", "namespace": ns.Name},
		"spec": map[string]any{
			"source": map[string]any{"repoURL": "https://github.com/example/repo", "path": "deploy"},
			"type":   "automated",
		},
		"status": map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": "abc"},
			"health": map[string]any{"status": "Healthy"},
		},
	}}
	g.Expect(create(ctx, depl, true)).To(Succeed())

	table := getTable(t, "/apis/managed-gitops.redhat.com/v1alpha1/namespaces/"+ns.Name+"/gitopsdeployments")
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	g.Expect(columns).To(Equal([]string{"Name", "Ready", "Sync Status", "Health Status", "Revision", "Message", "Age"}))
	g.Expect(table.Rows).To(HaveLen(1))
	g.Expect(table.Rows[0].Cells[:5]).To(Equal([]any{"shown", nil, "Synced", "Healthy", "abc"}))
}

// TestEveryKindShowsItsPrinterColumns reads back every api.md example as a Table (what
// kubectl get prints): each kind has its columns, each cell shows the example's value at
// the column's path, and every column but Age and the service's own Ready is filled by some
// example.
func TestEveryKindShowsItsPrinterColumns(t *testing.T) {
	columns := map[string][]string{
		"GitOpsDeployment":                     {"Name", "Ready", "Sync Status", "Health Status", "Revision", "Message", "Age"},
		"GitOpsDeploymentSyncRun":              {"Name", "GitOpsDeployment", "Revision", "Ready", "Sync Status", "Health Status", "Age"},
		"GitOpsDeploymentManagedEnvironment":   {"Name", "Ready", "API URL", "Connected", "Reason", "Age"},
		"GitOpsDeploymentRepositoryCredential": {"Name", "Ready", "Repository", "Secret", "Valid", "Age"},
		"Operation":                            {"Name", "Operation ID", "State", "Age"},
		"Environment":                          {"Name", "Ready", "Display Name", "Strategy", "Parent", "Message", "Age"},
		"Snapshot":                             {"Name", "Application", "Display Name", "Age"},
		"SnapshotEnvironmentBinding":           {"Name", "Ready", "Application", "Environment", "Snapshot", "Deployed", "Message", "Age"},
		"PromotionRun":                         {"Name", "Ready", "Application", "Snapshot", "Target", "State", "Result", "Message", "Age"},
		"DeploymentTarget":                     {"Name", "Ready", "Class", "Claim", "Phase", "Age"},
		"DeploymentTargetClaim":                {"Name", "Ready", "Class", "Target", "Phase", "Age"},
		"DeploymentTargetClass":                {"Name", "Provisioner", "Reclaim Policy", "Age"},
	}
	// api.md shows no Operation status: the shape the cluster-agent writes.
	statusOf := map[string]map[string]any{"Operation": {"state": "Completed", "message": "Application is up to date"}}
	files, _ := filepath.Glob("testdata/api-examples/*.yaml")
	filled := map[string]map[string]bool{}
	for _, file := range files {
		ctx := context.Background()
		ns := newNamespace(t)
		for _, obj := range readObjects(t, file) {
			place(t, obj, ns.Name)
			if status, ok := statusOf[obj.GetKind()]; ok && obj.Object["status"] == nil {
				obj.Object["status"] = status
			}
			if err := create(ctx, obj, true); err != nil {
				t.Fatalf("%s: %s %s rejected: %v", file, obj.GetKind(), obj.GetName(), err)
			}
			kind := obj.GetKind()
			if columns[kind] == nil {
				continue // a Secret the example refers to
			}
			mapping, err := cp.Client.RESTMapper().RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
			if err != nil {
				t.Fatal(err)
			}
			path := "/apis/" + obj.GetAPIVersion()
			if obj.GetNamespace() != "" {
				path += "/namespaces/" + obj.GetNamespace()
			}
			table := getTable(t, path+"/"+mapping.Resource.Resource+"/"+obj.GetName())
			var names []string
			for _, c := range table.ColumnDefinitions {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, columns[kind]) {
				t.Errorf("%s columns: got %q, want %q", kind, names, columns[kind])
				continue
			}
			if len(table.Rows) != 1 {
				t.Fatalf("%s %s: %d rows", kind, obj.GetName(), len(table.Rows))
			}
			if filled[kind] == nil {
				filled[kind] = map[string]bool{}
			}
			for i, def := range table.ColumnDefinitions {
				cell := fmt.Sprint(table.Rows[0].Cells[i])
				if def.Name == "Name" && cell != obj.GetName() {
					t.Errorf("%s %s: Name cell %q", kind, obj.GetName(), cell)
				}
				if cell != "" && cell != "<nil>" {
					filled[kind][def.Name] = true
				}
			}
		}
	}
	for kind, want := range columns {
		for _, name := range want {
			// Ready and its message are only ever written by the service, never by a user.
			if name != "Age" && name != "Ready" && name != "Message" && !filled[kind][name] {
				t.Errorf("%s: no example fills the %q column", kind, name)
			}
		}
	}
}

func getTable(t *testing.T, path string) *metav1.Table {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(cp.Config.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatal(err)
	}
	return table
}

func execSQL(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, sql)
	return err
}
