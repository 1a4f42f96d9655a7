package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	refNameAnnotation = "org.opencontainers.image.ref.name"
	spdxMediaType     = "application/spdx+json"
)

// writeLayout writes the images to a new OCI image layout at dir: one index per binary,
// named by org.opencontainers.image.ref.name, and each platform's SBOM as an OCI 1.1
// referrer of that platform's image (listed in index.json too, so that copying the layout
// copies them).
func writeLayout(dir string, images []builtImage) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, img := range images {
		if err := p.AppendIndex(img.index, layout.WithAnnotations(map[string]string{refNameAnnotation: img.binary})); err != nil {
			return err
		}
		sboms, err := sbomReferrers(img)
		if err != nil {
			return fmt.Errorf("%s: %w", img.binary, err)
		}
		for _, s := range sboms {
			if err := p.AppendImage(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// sbomReferrers makes, for each platform's image, a referrer manifest holding its SBOM.
func sbomReferrers(img builtImage) ([]v1.Image, error) {
	im, err := img.index.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []v1.Image
	for _, desc := range im.Manifests {
		sbom, ok := img.sboms[desc.Digest]
		if !ok {
			return nil, fmt.Errorf("no SBOM for %s", desc.Platform)
		}
		subject := v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}
		a, err := newArtifact(spdxMediaType, sbom, subject)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// artifact is an OCI 1.1 artifact manifest: one blob and a subject. The config is empty
// but typed as the artifact too, since registries that predate the artifactType field
// (and some that do not) report the config's media type as the artifact's type.
type artifact struct {
	manifest []byte
	blob     v1.Layer
}

func newArtifact(artifactType string, blob []byte, subject v1.Descriptor) (v1.Image, error) {
	layer := static.NewLayer(blob, types.MediaType(artifactType))
	ld, err := partial.Descriptor(layer)
	if err != nil {
		return nil, err
	}
	emptyConfig := []byte("{}")
	configHash, _, err := v1.SHA256(bytes.NewReader(emptyConfig))
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  artifactType,
		Config:        v1.Descriptor{MediaType: types.MediaType(artifactType), Digest: configHash, Size: int64(len(emptyConfig))},
		Layers:        []v1.Descriptor{*ld},
		Subject:       &subject,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(artifact{manifest: raw, blob: layer})
}

func (a artifact) RawConfigFile() ([]byte, error)      { return []byte("{}"), nil }
func (a artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }
func (a artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := a.blob.Digest(); err == nil && d == h {
		return a.blob, nil
	}
	return nil, fmt.Errorf("artifact has no blob %s", h)
}
