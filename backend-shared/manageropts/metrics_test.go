package manageropts_test

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// TestMetricsAreServedOnlyToCallersRBACAllows: with the default --metrics-secure, the
// metrics endpoint speaks HTTPS and answers only a bearer token that the API server
// authenticates and allows to get /metrics; --metrics-secure=false serves anyone.
func TestMetricsAreServedOnlyToCallersRBACAllows(t *testing.T) {
	cp, err := testenv.StartControlPlane(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := context.Background()
	ns := cp.NewNamespace(t, "monitoring-")
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: ns}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns + "-metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}}},
	} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	token := func(name string) string {
		_, tok, err := cp.ServiceAccountTokenKubeconfig(ctx, ns, name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	allowed, refused := token("prometheus"), token("someone-else")

	secure := serve(t, cp, "--metrics-secure=true")
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		// The TokenReview fails, which controller-runtime's filter answers with 500.
		{"a token the API server does not know", "not-a-token", http.StatusInternalServerError},
		{"a token RBAC does not allow /metrics", refused, http.StatusForbidden},
		{"a token RBAC allows", allowed, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := scrape(t, "https://"+secure, tc.token)
			if code != tc.want {
				t.Fatalf("status %d, want %d", code, tc.want)
			}
			if code != http.StatusOK && strings.Contains(body, "go_goroutines") {
				t.Fatalf("status %d, but the metrics were served", code)
			}
		})
	}
	if code, body := scrape(t, "https://"+secure, allowed); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("status %d, body without go_goroutines", code)
	}

	plain := serve(t, cp, "--metrics-secure=false")
	if code, _ := scrape(t, "http://"+plain, ""); code != http.StatusOK {
		t.Fatalf("--metrics-secure=false: status %d without a token, want 200", code)
	}
}

// serve runs a manager with the shared flags and the given ones until the test ends, and
// returns its metrics address once it answers.
func serve(t *testing.T, cp *testenv.ControlPlane, flags ...string) string {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	opts := manageropts.New("test", addr, "0")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	opts.BindFlags(fs)
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cp.Config, opts.ManagerOptions(runtime.NewScheme()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		scheme := "http://"
		if opts.MetricsSecure {
			scheme = "https://"
		}
		if code, _ := scrape(t, scheme+addr, ""); code != 0 {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics endpoint %s never answered", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrape GETs /metrics with token (none when empty); 0 means no answer.
func scrape(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The certificate is self-signed: what is tested is who may read, not who serves.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, ""
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
