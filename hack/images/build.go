package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/ko/pkg/build"
	"github.com/sigstore/cosign/v3/pkg/oci"
)

// program is a Go command to build into an image: its image name, module directory (from
// the repository's top) and import path.
type program struct {
	name, dir, importPath string
}

// services are the three binaries of the service, one module each.
var services = []program{
	{"backend", "backend", modulePath + "/backend"},
	{"cluster-agent", "cluster-agent", modulePath + "/cluster-agent"},
	{"appstudio-controller", "appstudio-controller", modulePath + "/appstudio-controller"},
}

// pause is the one-node cluster's pod sandbox.
var pause = program{"pause", "hack/images", modulePath + "/hack/images/pause"}

const (
	modulePath   = "github.com/gitops-service/gitops-service"
	buildinfoPkg = modulePath + "/backend-shared/buildinfo"
	// baseName is how the images' annotations name the base assembled here.
	baseName = "localhost/gitops-service/static:debian"
)

// buildOptions describe one build of the images.
type buildOptions struct {
	root      string // the repository's top directory
	version   string
	commit    string
	source    string
	created   time.Time // the commit's time: same commit, same digests
	platforms []v1.Platform
	sbomDir   string
	programs  []program // default: the services
}

// builtImage is one binary's multi-platform image, with the SBOM ko made for each
// platform's image (by that image's digest).
type builtImage struct {
	binary string
	index  v1.ImageIndex
	sboms  map[v1.Hash][]byte
}

// collect turns ko's result into an index (ko returns a bare image for one platform) and
// takes the SBOM attached to each platform's image.
func collect(binary string, res build.Result, platform v1.Platform) (builtImage, error) {
	out := builtImage{binary: binary, sboms: map[v1.Hash][]byte{}}
	var images []oci.SignedImage
	switch r := res.(type) {
	case oci.SignedImageIndex:
		im, err := r.IndexManifest()
		if err != nil {
			return out, err
		}
		for _, d := range im.Manifests {
			img, err := r.SignedImage(d.Digest)
			if err != nil {
				return out, err
			}
			images = append(images, img)
		}
		out.index = r
	case oci.SignedImage:
		images = append(images, r)
		out.index = indexOf(r, platform)
	default:
		return out, fmt.Errorf("ko returned %T", res)
	}
	for _, img := range images {
		d, err := img.Digest()
		if err != nil {
			return out, err
		}
		f, err := img.Attachment("sbom")
		if err != nil {
			return out, fmt.Errorf("no SBOM for %s: %w", d, err)
		}
		if out.sboms[d], err = f.Payload(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// indexOf is an index of the one image img, for platform.
func indexOf(img v1.Image, platform v1.Platform) v1.ImageIndex {
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &platform}})
}

// buildImages builds every binary with ko on the static base, one platform at a time
// within each binary as ko schedules them.
func buildImages(ctx context.Context, o buildOptions) ([]builtImage, error) {
	base, err := staticBase(o.platforms, o.created, "/")
	if err != nil {
		return nil, err
	}
	baseRef, err := name.ParseReference(baseName)
	if err != nil {
		return nil, err
	}
	// The binaries build as a release would: each module on its own, not the workspace.
	if err := os.Setenv("GOWORK", "off"); err != nil {
		return nil, err
	}
	var platforms []string
	for _, p := range o.platforms {
		platforms = append(platforms, p.String())
	}
	progs := o.programs
	if len(progs) == 0 {
		progs = services
	}
	var out []builtImage
	for _, prog := range progs {
		bin, importPath := prog.name, prog.importPath
		ldflags := fmt.Sprintf("-s -w -X %s.version=%s -X %s.commit=%s", buildinfoPkg, o.version, buildinfoPkg, o.commit)
		opts := []build.Option{
			build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) { return baseRef, base, nil }),
			build.WithPlatforms(platforms...),
			build.WithCreationTime(v1.Time{Time: o.created}),
			build.WithKoDataCreationTime(v1.Time{Time: o.created}),
			build.WithTrimpath(true),
			build.WithConfig(map[string]build.Config{importPath: {Ldflags: []string{ldflags}}}),
			build.WithDefaultEnv([]string{"GOWORK=off", "CGO_ENABLED=0"}),
			build.WithUser(fmt.Sprintf("%d:%d", nonroot, nonroot)),
			build.WithSPDX(o.version),
			build.WithJobs(1), // two cores: one go build at a time keeps the machine usable
		}
		for k, v := range labels(bin, o) {
			opts = append(opts, build.WithLabel(k, v))
		}
		if o.sbomDir != "" {
			if err := os.MkdirAll(o.sbomDir, 0o755); err != nil {
				return nil, err
			}
			opts = append(opts, build.WithSBOMDir(o.sbomDir))
		}
		b, err := build.NewGo(ctx, filepath.Join(o.root, prog.dir), opts...)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "[images] building %s for %s\n", bin, strings.Join(platforms, ", "))
		res, err := b.Build(ctx, build.StrictScheme+importPath)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", bin, err)
		}
		img, err := collect(bin, res, o.platforms[0])
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", bin, err)
		}
		out = append(out, img)
	}
	return out, nil
}

// labels are the OCI annotations of each image's configuration.
func labels(binary string, o buildOptions) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "gitops-service-" + binary,
		"org.opencontainers.image.description": "The GitOps Service's " + binary,
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.revision":    o.commit,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.created":     o.created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}
