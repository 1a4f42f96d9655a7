package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// layoutImage is one binary's index in a layout, with the SBOM referrers of its images.
type layoutImage struct {
	binary    string
	index     v1.ImageIndex
	digest    v1.Hash
	referrers []v1.Image
}

// readLayout finds each binary's index (by its ref name) and the referrers whose subject
// is one of that index's images.
func readLayout(dir string) ([]layoutImage, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image layout %s (run make images first): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	var images []layoutImage
	owner := map[v1.Hash]int{} // platform image digest -> position in images
	for _, d := range im.Manifests {
		bin := d.Annotations[refNameAnnotation]
		if bin == "" {
			continue
		}
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		sub, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, s := range sub.Manifests {
			owner[s.Digest] = len(images)
		}
		images = append(images, layoutImage{binary: bin, index: idx, digest: d.Digest})
	}
	for _, d := range im.Manifests {
		if d.Annotations[refNameAnnotation] != "" {
			continue
		}
		img, err := top.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		if m.Subject == nil {
			continue
		}
		i, ok := owner[m.Subject.Digest]
		if !ok {
			return nil, fmt.Errorf("referrer %s names an image %s that is not in the layout", d.Digest, m.Subject.Digest)
		}
		images[i].referrers = append(images[i].referrers, img)
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("the image layout %s holds no named image", dir)
	}
	return images, nil
}

// push copies every image of the layout to repo/<binary>:tag, and the SBOM referrers
// beside each (through the registry's referrers API, or its tag fallback).
func push(dir, repo, tag string, insecure bool, transport http.RoundTripper) ([]string, error) {
	images, err := readLayout(dir)
	if err != nil {
		return nil, err
	}
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if transport != nil {
		opts = append(opts, remote.WithTransport(transport))
	}
	var pushed []string
	for _, img := range images {
		repository := strings.TrimSuffix(repo, "/") + "/" + img.binary
		ref, err := name.NewTag(repository+":"+tag, nameOpts...)
		if err != nil {
			return nil, err
		}
		if err := remote.WriteIndex(ref, img.index, opts...); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", ref, err)
		}
		for _, r := range img.referrers {
			d, err := r.Digest()
			if err != nil {
				return nil, err
			}
			rref, err := name.NewDigest(repository+"@"+d.String(), nameOpts...)
			if err != nil {
				return nil, err
			}
			if err := remote.Write(rref, r, opts...); err != nil {
				return nil, fmt.Errorf("pushing the SBOM %s: %w", rref, err)
			}
		}
		pushed = append(pushed, repository+"@"+img.digest.String())
	}
	return pushed, nil
}
