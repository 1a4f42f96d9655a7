package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// firstOnly keeps only the first element of what it decodes: a copy that loses items.
type firstOnly []string

func (f *firstOnly) UnmarshalJSON(b []byte) error {
	var all []string
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	if len(all) > 0 {
		*f = all[:1]
	}
	return nil
}

type inner struct {
	Color lowercase `json:"color,omitempty"`
}

type Pointed struct {
	Shade lowercase `json:"shade,omitempty"`
}

type lossy struct {
	*Pointed `json:",inline"`
	Spec     inner                `json:"spec"`
	Tags     firstOnly            `json:"tags,omitempty"`
	Labels   map[string]lowercase `json:"labels,omitempty"`
	Enabled  bool                 `json:"enabled,omitempty"`
	Upper    lowercase
	Ignored  lowercase `json:"-"`
	hidden   lowercase //nolint:unused // an unexported field is never compared
}

func TestDecodeLossFindsEachLostValue(t *testing.T) {
	tests := []struct {
		name     string
		obj      map[string]any
		wantLost []string
	}{
		{"nothing lost", map[string]any{"spec": map[string]any{"color": "red"}, "tags": []any{"a"}, "Upper": "abc"}, nil},
		{"a nested value", map[string]any{"spec": map[string]any{"color": "Red"}}, []string{".spec.color"}},
		// A shorter list is one loss at the list, not one per element.
		{"items dropped from a list", map[string]any{"tags": []any{"a", "b", "c"}}, []string{".tags"}},
		{"a map value", map[string]any{"labels": map[string]any{"x": "y", "z": "Z"}}, []string{".labels.z"}},
		// A field without a JSON name is matched by its Go name.
		{"a field named by Go", map[string]any{"Upper": "ABC"}, []string{".Upper"}},
		{"a field of an inline embedded pointer", map[string]any{"shade": "Dark"}, []string{".shade"}},
		// A false that omitempty leaves out is not a loss.
		{"a zero value omitted", map[string]any{"enabled": false}, nil},
		{"a true kept", map[string]any{"enabled": true}, nil},
		// Fields the copy does not have, or never encodes, are not compared.
		{"a field tagged -", map[string]any{"Ignored": "ABC", "-": "ABC"}, nil},
		{"an unexported field", map[string]any{"hidden": "ABC"}, nil},
		{"several, sorted", map[string]any{"Upper": "A", "spec": map[string]any{"color": "B"}, "labels": map[string]any{"a": "C"}},
			[]string{".Upper", ".labels.a", ".spec.color"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lost, err := DecodeLoss(tt.obj, &lossy{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lost, tt.wantLost) {
				t.Errorf("lost %v, want %v", lost, tt.wantLost)
			}
		})
	}
}

func TestDecodeLossOfAnObjectThatIsNotJSON(t *testing.T) {
	if _, err := DecodeLoss(map[string]any{"x": make(chan int)}, &lossy{}); err == nil {
		t.Error("no error for an object JSON cannot encode")
	}
	if _, err := DecodeLoss(map[string]any{"spec": "not an object"}, &lossy{}); err == nil || !strings.Contains(err.Error(), "decoding into *testenv.lossy") {
		t.Errorf("error %v, want one naming the type", err)
	}
}

func TestZeroJSON(t *testing.T) {
	tests := []struct {
		v    any
		want bool
	}{
		{nil, true}, {false, true}, {true, false}, {0.0, true}, {1.5, false}, {"", true}, {"x", false},
		{[]any{}, true}, {[]any{nil}, false}, {map[string]any{}, true}, {map[string]any{"a": 1}, false},
	}
	for _, tt := range tests {
		if got := zeroJSON(tt.v); got != tt.want {
			t.Errorf("zeroJSON(%#v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestFieldType(t *testing.T) {
	typ := reflect.TypeFor[lossy]()
	tests := []struct {
		name   string
		want   reflect.Type
		wantOK bool
	}{
		{"spec", reflect.TypeFor[inner](), true},
		{"shade", reflect.TypeFor[lowercase](), true}, // through the embedded pointer
		{"Upper", reflect.TypeFor[lowercase](), true},
		{"Ignored", nil, false},
		{"-", nil, false},
		{"hidden", nil, false},
		{"Spec", nil, false}, // a field with a JSON name is not matched by its Go name
	}
	for _, tt := range tests {
		got, ok := fieldType(typ, tt.name)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("fieldType(%q) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestArgoCDRequireFindsTheVersion(t *testing.T) {
	tests := []struct {
		name, gomod, want string
	}{
		{"a require line", "module x\n\nrequire github.com/argoproj/argo-cd/v3 v3.2.11\n", "v3.2.11"},
		{"a require block", "require (\n\tgithub.com/a/b v1.0.0\n\tgithub.com/argoproj/argo-cd/v3 v3.1.0 // indirect\n)\n", "v3.1.0"},
		{"a pseudo-version", "require (\n\tgithub.com/argoproj/argo-cd/v3 v3.0.0-20250101000000-abcdef123456\n)\n", "v3.0.0-20250101000000-abcdef123456"},
		// Another major version or a subpackage path is another module.
		{"argo-cd v2", "require github.com/argoproj/argo-cd/v2 v2.14.0\n", ""},
		{"a longer module path", "require github.com/argoproj/argo-cd/v3/extra v3.0.0\n", ""},
		{"not required", "module x\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if m := argoCDRequire.FindStringSubmatch(tt.gomod); m != nil {
				got = m[1]
			}
			if got != tt.want {
				t.Errorf("version %q, want %q", got, tt.want)
			}
		})
	}
	// The go.mod the tests read names a v3 release.
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "hack", "argocd", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := argoCDRequire.FindSubmatch(data); m == nil || !regexp.MustCompile(`^v3\.\d+\.\d+`).Match(m[1]) {
		t.Errorf("hack/argocd/go.mod: %q", m)
	}
}

func TestRepoRootIsTheDirectoryHoldingGoWork(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	got, err := RepoRoot()
	if err != nil || got != root {
		t.Errorf("RepoRoot = %q, %v; want %q", got, err, root)
	}
	p, err := repoPath("hack", "x")
	if err != nil || p != filepath.Join(root, "hack", "x") {
		t.Errorf("repoPath = %q, %v", p, err)
	}
}

func TestRepoRootOutsideACheckout(t *testing.T) {
	// t.TempDir is under the system's temporary directory, which holds no go.work.
	t.Chdir(t.TempDir())
	if got, err := RepoRoot(); err == nil {
		t.Errorf("RepoRoot = %q outside a checkout", got)
	}
}

func TestCacheRootAndAssetsDir(t *testing.T) {
	g := NewWithT(t)
	cache := t.TempDir()
	t.Setenv("GITOPS_CACHE_DIR", cache)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	got, err := cacheRoot()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(cache))

	// Without KUBEBUILDER_ASSETS the binaries are looked for in the cache.
	_, err = AssetsDir()
	g.Expect(err).To(MatchError(ContainSubstring("kube-apiserver not found in " + filepath.Join(cache, "envtest-assets"))))
	g.Expect(err).To(MatchError(ContainSubstring("hack/build-binaries.sh")))

	assets := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "etcd"} {
		_, err = AssetsDir()
		g.Expect(err).To(MatchError(ContainSubstring(bin+" not found")), "before %s exists", bin)
		g.Expect(os.WriteFile(filepath.Join(assets, bin), nil, 0o755)).To(Succeed())
	}
	got, err = AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(assets))

	// Without GITOPS_CACHE_DIR, the user's cache directory.
	xdg := t.TempDir()
	t.Setenv("GITOPS_CACHE_DIR", "")
	t.Setenv("XDG_CACHE_HOME", xdg)
	got, err = cacheRoot()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(filepath.Join(xdg, "gitops-service")))
}

func TestPostgresBinDirPrefersTheEnvironment(t *testing.T) {
	t.Setenv("GITOPS_POSTGRES_BIN", "/opt/pg/bin")
	if got, err := PostgresBinDir(); err != nil || got != "/opt/pg/bin" {
		t.Errorf("PostgresBinDir = %q, %v", got, err)
	}
}

func TestVersionOfADebianPostgresDir(t *testing.T) {
	tests := []struct {
		dir  string
		want int
	}{
		{"/usr/lib/postgresql/17/bin", 17},
		{"/usr/lib/postgresql/9/bin", 9},
		// Not a versioned directory: sorted after every version.
		{"/usr/bin", 0},
		{"/usr/lib/postgresql/latest/bin", 0},
	}
	for _, tt := range tests {
		if got := versionOf(tt.dir); got != tt.want {
			t.Errorf("versionOf(%q) = %d, want %d", tt.dir, got, tt.want)
		}
	}
}

func TestPostgresURL(t *testing.T) {
	p := &Postgres{Port: 54321}
	tests := []struct {
		database, want string
	}{
		{"postgres", "postgres://postgres@127.0.0.1:54321/postgres?sslmode=disable"},
		{"test_0a1b2c", "postgres://postgres@127.0.0.1:54321/test_0a1b2c?sslmode=disable"},
		{"with space", "postgres://postgres@127.0.0.1:54321/with%20space?sslmode=disable"},
	}
	for _, tt := range tests {
		if got := p.URL(tt.database); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.database, got, tt.want)
		}
	}
}

func TestRandomSuffixNamesADatabase(t *testing.T) {
	seen := map[string]bool{}
	valid := regexp.MustCompile(`^[0-9a-f]{12}$`)
	for range 100 {
		s := randomSuffix()
		if !valid.MatchString(s) || seen[s] {
			t.Fatalf("suffix %q: not 12 lowercase hex digits, or repeated", s)
		}
		seen[s] = true
	}
}

func TestLockPortIsExclusiveUntilClosed(t *testing.T) {
	dir := t.TempDir()
	first, err := lockPort(dir, 12345)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := lockPort(dir, 12345); err == nil {
		_ = second.Close()
		t.Fatal("a locked port was locked again")
	}
	other, err := lockPort(dir, 12346)
	if err != nil {
		t.Fatalf("another port: %v", err)
	}
	_ = other.Close()
	_ = first.Close()
	again, err := lockPort(dir, 12345)
	if err != nil {
		t.Fatalf("after the lock was released: %v", err)
	}
	_ = again.Close()
	if _, err := lockPort(filepath.Join(dir, "missing"), 1); err == nil {
		t.Error("a lock in a missing directory")
	}
}

func TestBindableAndKernelPort(t *testing.T) {
	port, err := kernelPort()
	if err != nil || port <= 0 {
		t.Fatalf("kernelPort = %d, %v", port, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("the kernel's port %d is not free: %v", port, err)
	}
	// A listener on one address makes the port unusable for a child binding every address.
	if bindable(port) {
		t.Errorf("port %d is bindable while something listens on it", port)
	}
	_ = l.Close()
	if !bindable(port) {
		t.Errorf("port %d is not bindable once free", port)
	}
}

func TestProcessExists(t *testing.T) {
	if !processExists(os.Getpid()) {
		t.Error("this process does not exist")
	}
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Process ids are below pid_max.
	if processExists(pidMax) {
		t.Errorf("process %d exists", pidMax)
	}
}

func TestFindProcessMatchesProgramAndArgument(t *testing.T) {
	if len(os.Args) < 2 {
		t.Fatalf("the test binary runs without arguments: %q", os.Args)
	}
	name, arg := filepath.Base(os.Args[0]), os.Args[1]
	pid, argv, err := findProcess(name, arg)
	if err != nil {
		t.Fatal(err)
	}
	if pid <= 0 || filepath.Base(argv[0]) != name || !slices.Contains(argv[1:], arg) {
		t.Errorf("found %d %q, want a %s with %s", pid, argv, name, arg)
	}
	if _, _, err := findProcess(name, "--no-such-argument-"+randomSuffix()); err == nil {
		t.Error("found a process with an argument none has")
	}
	if _, _, err := findProcess("no-such-program-"+randomSuffix(), arg); err == nil {
		t.Error("found a program that does not run")
	}
}

func TestServerCertificateIsValidForItsIPOnly(t *testing.T) {
	g := NewWithT(t)
	caPEM, certPEM, keyPEM, err := ServerCertificate("127.0.0.1")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tls.X509KeyPair(certPEM, keyPEM)
	g.Expect(err).NotTo(HaveOccurred(), "the key does not match the certificate")

	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(caPEM)).To(BeTrue())
	block, _ := pem.Decode(certPEM)
	g.Expect(block).NotTo(BeNil())
	leaf, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	verify := func(host string) error {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	g.Expect(verify("127.0.0.1")).To(Succeed())
	g.Expect(verify("127.0.0.2")).NotTo(Succeed())
	g.Expect(verify("localhost")).NotTo(Succeed())

	// Another call makes another CA, which does not trust the first certificate.
	otherCA, _, _, err := ServerCertificate("127.0.0.1")
	g.Expect(err).NotTo(HaveOccurred())
	otherPool := x509.NewCertPool()
	otherPool.AppendCertsFromPEM(otherCA)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: otherPool, DNSName: "127.0.0.1"})
	g.Expect(err).To(HaveOccurred())
}

func TestUploadPackDirRefusesEscapes(t *testing.T) {
	g := NewWithT(t)
	for _, cmd := range []string{
		"git-upload-pack '/a/../b.git'", "git-upload-pack '/a\\b.git'", "git-upload-pack '/a\nb.git'",
		"git-upload-pack '/a\x00b.git'", "git-upload-pack '/repo.git'x",
	} {
		_, ok := uploadPackDir("/srv/git", cmd)
		g.Expect(ok).To(BeFalse(), "%q", cmd)
	}
	// Dots that are not a parent directory are names like any other.
	got, ok := uploadPackDir("/srv/git", "git-upload-pack '/a..b/.repo.git'")
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal("/srv/git/a..b/.repo.git"))
}
