package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// One build of the backend image shared by the tests: building is the slow part.
var (
	shared     sync.Once
	sharedDir  string
	sharedErr  error
	testCommit = "0123456789abcdef0123456789abcdef01234567"
)

func testOptions(t *testing.T) buildOptions {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := parsePlatforms("linux/amd64,linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	return buildOptions{
		root: root, version: "v0.0.0-test", commit: testCommit, source: "https://" + modulePath,
		created: time.Unix(1700000000, 0).UTC(), platforms: platforms, programs: services[:1],
	}
}

func buildTo(t *testing.T, dir string) {
	t.Helper()
	images, err := buildImages(context.Background(), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeLayout(dir, images); err != nil {
		t.Fatal(err)
	}
}

func sharedLayout(t *testing.T) string {
	t.Helper()
	shared.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "images-test-")
		if sharedErr == nil {
			buildTo(t, sharedDir)
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func TestSameCommitSameDigests(t *testing.T) {
	first := sharedLayout(t)
	second := t.TempDir()
	buildTo(t, second)
	a, err := os.ReadFile(filepath.Join(first, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("two builds of one commit differ:\n%s\n%s", a, b)
	}
}

func TestImageContents(t *testing.T) {
	images, err := readLayout(sharedLayout(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].binary != "backend" {
		t.Fatalf("layout holds %v, want the backend image", images)
	}
	idx := images[0].index
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Fatalf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
	if len(images[0].referrers) != 2 {
		t.Fatalf("%d SBOM referrers, want one per platform", len(images[0].referrers))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://" + modulePath,
		"org.opencontainers.image.revision": testCommit,
		"org.opencontainers.image.version":  "v0.0.0-test",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want the nonroot 65532:65532", cf.Config.User)
	}

	files := extract(t, img)
	for _, want := range []string{"etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/Etc/UTC", "usr/share/zoneinfo/UTC", "usr/share/zoneinfo/Europe/Berlin", "var/lib/dpkg/status.d/tzdata"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the image has no /%s", want)
		}
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", files["etc/passwd"])
	}

	// The amd64 binary runs here and reports the stamped build.
	bin := filepath.Join(t.TempDir(), "backend")
	if err := os.WriteFile(bin, files["ko-app/backend"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("backend version: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "version: v0.0.0-test\ncommit: "+testCommit+"\n") {
		t.Fatalf("backend version printed:\n%s", out)
	}

	// Each platform's SBOM is SPDX naming the binary's own module.
	sbom := referrerPayload(t, images[0].referrers[0])
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name string `json:"name"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(sbom, &doc); err != nil {
		t.Fatalf("SBOM is not JSON: %v", err)
	}
	if !strings.HasPrefix(doc.SPDXVersion, "SPDX-") || !strings.Contains(string(sbom), modulePath+"/backend") {
		t.Fatalf("SBOM is not an SPDX document of the backend: %.300s", sbom)
	}
}

func TestPushToARegistry(t *testing.T) {
	dir := sharedLayout(t)
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/gitops-service"
	pushed, err := push(dir, repo, "v0.0.0-test", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	images, err := readLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != 1 || pushed[0] != repo+"/backend@"+images[0].digest.String() {
		t.Fatalf("pushed %v", pushed)
	}
	ref, err := name.ParseReference(repo+"/backend:v0.0.0-test", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d != images[0].digest {
		t.Fatalf("the registry serves %s, the layout holds %s", d, images[0].digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	subject, err := name.NewDigest(repo+"/backend@"+im.Manifests[0].Digest.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := remote.Referrers(subject)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != spdxMediaType {
		t.Fatalf("referrers of the amd64 image: %+v, want its SPDX SBOM", rm.Manifests)
	}
}

func TestReleasePinsImagesByDigest(t *testing.T) {
	dir := sharedLayout(t)
	images, err := readLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	root := testOptions(t).root
	if err := os.MkdirAll(filepath.Join(root, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := renderRelease(root, "manifests/overlays/production", dir, "registry.example.com/gitops-service")
	if err != nil {
		t.Fatal(err)
	}
	want := "image: registry.example.com/gitops-service/backend@" + images[0].digest.String()
	if !strings.Contains(string(out), want) {
		t.Fatalf("install.yaml has no %q", want)
	}
	if strings.Contains(string(out), "image: gitops-service/backend\n") {
		t.Fatal("install.yaml still names the placeholder backend image")
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, "dist", ".release-*"))
	if len(leftovers) != 0 {
		t.Fatalf("release left %v behind", leftovers)
	}
}

// extract reads every regular file of img's flattened filesystem, and each link as
// "-> target".
func extract(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeSymlink {
			files[strings.TrimPrefix(hdr.Name, "/")] = []byte("-> " + hdr.Linkname)
		}
		if hdr.Typeflag == tar.TypeReg {
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(hdr.Name, "/")] = body
		}
	}
}

func referrerPayload(t *testing.T, img v1.Image) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("referrer layers: %v, %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return body
}
