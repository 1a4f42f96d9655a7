// Command images builds, pushes and releases the service's container images.
//
//	images build   -out .local/images -version V -commit C -created UNIX [-platforms ...]
//	images push    -layout .local/images -repo REGISTRY/PREFIX -tag T [-insecure]
//	images release -layout dist/images -repo REGISTRY/PREFIX -out dist/install.yaml
//	images render  -overlay manifests/argocd -out dist/argocd.yaml
//	images archive -layout .local/images -repo localhost/gitops-service -tag dev -out FILE
//	images pause   -out .local/node-images/pause.tar
//	images host    -argocd BIN -out .local/node-images/host.tar   (Argo CD and Redis images)
//
// build writes an OCI image layout: one multi-platform index per binary (backend,
// cluster-agent, appstudio-controller), built by ko on a distroless-style base assembled
// here from Debian's ca-certificates and tzdata, labelled with the source, revision and
// version, with each platform's SPDX SBOM as an OCI referrer. The same commit gives the
// same digests. push copies a layout to any registry; release renders the production
// overlay with the images pinned by digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: images build|push|release [flags]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet("images "+args[0], flag.ContinueOnError)
	root := fs.String("root", ".", "The repository's top directory.")
	switch args[0] {
	case "build":
		out := fs.String("out", ".local/images", "The OCI image layout to write (replaced).")
		o := buildOptions{}
		fs.StringVar(&o.version, "version", "devel", "The version stamped into the binaries and labels.")
		fs.StringVar(&o.commit, "commit", "unknown", "The Git commit stamped into the binaries and labels.")
		fs.StringVar(&o.source, "source", "https://"+modulePath, "The source repository label.")
		created := fs.Int64("created", 0, "Unix time of the images and their files (the commit's time, for reproducible digests).")
		platforms := fs.String("platforms", "linux/amd64,linux/arm64", "Comma-separated platforms.")
		fs.StringVar(&o.sbomDir, "sbom-dir", "", "Also write each SBOM as a file here.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		o.root, o.created = *root, time.Unix(*created, 0).UTC()
		var err error
		if o.platforms, err = parsePlatforms(*platforms); err != nil {
			return err
		}
		images, err := buildImages(ctx, o)
		if err != nil {
			return err
		}
		if err := writeLayout(*out, images); err != nil {
			return err
		}
		return printDigests(*out)
	case "push":
		dir := fs.String("layout", ".local/images", "The OCI image layout to push.")
		repo := fs.String("repo", "", "Where to push: each binary goes to REPO/<binary>.")
		tag := fs.String("tag", "", "The tag to push (default: the images' version label).")
		insecure := fs.Bool("insecure", false, "Allow plain HTTP to the registry.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *repo == "" {
			return fmt.Errorf("push: -repo is required (make push IMAGE_REPO=registry.example.com/gitops-service)")
		}
		t := *tag
		if t == "" {
			t = "latest"
		}
		pushed, err := push(*dir, *repo, t, *insecure, nil)
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(pushed, "\n"))
		return nil
	case "release":
		dir := fs.String("layout", "dist/images", "The OCI image layout of the release.")
		repo := fs.String("repo", "", "The registry prefix the images are published under.")
		overlay := fs.String("overlay", "manifests/overlays/production", "The kustomization to render, relative to -root.")
		out := fs.String("out", "dist/install.yaml", "Where to write the rendered manifests.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *repo == "" {
			return fmt.Errorf("release: -repo is required")
		}
		body, err := renderRelease(*root, *overlay, *dir, *repo)
		if err != nil {
			return err
		}
		return os.WriteFile(*out, body, 0o644)
	case "render":
		overlay := fs.String("overlay", "manifests/argocd", "The kustomization to render, relative to -root.")
		out := fs.String("out", "dist/argocd.yaml", "Where to write the rendered manifests.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		body, err := render(*root, *overlay, nil)
		if err != nil {
			return err
		}
		return os.WriteFile(*out, body, 0o644)
	case "archive":
		dir := fs.String("layout", ".local/images", "The OCI image layout of the services.")
		prefix := fs.String("repo", "localhost/gitops-service", "The name prefix: each binary is REPO/<binary>:TAG in the archive.")
		tag := fs.String("tag", "dev", "The tag.")
		out := fs.String("out", ".local/node-images/gitops-service.tar", "The OCI archive to write, for ctr images import.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		images, err := readLayout(*dir)
		if err != nil {
			return err
		}
		var named []namedIndex
		for _, img := range images {
			repository := strings.TrimSuffix(*prefix, "/") + "/" + img.binary
			// By tag, and by digest for manifests that pin images (make release's).
			named = append(named,
				namedIndex{name: repository + ":" + *tag, index: img.index},
				namedIndex{name: repository + "@" + img.digest.String(), index: img.index})
		}
		return writeArchive(*out, named)
	case "pause":
		out := fs.String("out", ".local/node-images/pause.tar", "The OCI archive to write, for ctr images import.")
		imageName := fs.String("name", "localhost/gitops-service/pause:node", "The image's name in the archive.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
		images, err := buildImages(ctx, buildOptions{root: *root, version: "node", commit: "none", source: "https://" + modulePath,
			created: time.Unix(0, 0).UTC(), platforms: []v1.Platform{platform}, programs: []program{pause}})
		if err != nil {
			return err
		}
		return writeArchive(*out, []namedIndex{{name: *imageName, index: images[0].index}})
	case "host":
		out := fs.String("out", ".local/node-images/host.tar", "The OCI archive to write, for ctr images import.")
		argocd := fs.String("argocd", "", "The Argo CD binary (hack/build-binaries.sh --argocd-dir)/argocd.")
		argocdTag := fs.String("argocd-tag", "v3.2.11", "The tag of the Argo CD image.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var named []namedIndex
		for _, h := range nodeImages(*argocd, *argocdTag) {
			img, err := h.build(time.Unix(0, 0).UTC())
			if err != nil {
				return fmt.Errorf("%s: %w", h.name, err)
			}
			named = append(named, namedIndex{name: h.name, index: indexOf(img, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})})
		}
		return writeArchive(*out, named)
	case "digests":
		dir := fs.String("layout", ".local/images", "The OCI image layout.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return printDigests(*dir)
	default:
		return fmt.Errorf("unknown verb %q: build, push, release or digests", args[0])
	}
}

func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, p := range strings.Split(s, ",") {
		parsed, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, *parsed)
	}
	return out, nil
}

// printDigests prints "<binary> <index digest>" for each image of the layout.
func printDigests(dir string) error {
	images, err := readLayout(dir)
	if err != nil {
		return err
	}
	for _, img := range images {
		fmt.Printf("%s %s\n", img.binary, img.digest)
	}
	return nil
}
