package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// placeholder is how the base Deployments name each binary's image.
func placeholder(binary string) string { return "gitops-service/" + binary }

// renderRelease renders the kustomization at overlay (relative to root) with every
// binary's image pinned by digest to repo/<binary>@<digest of its index in the layout>.
func renderRelease(root, overlay, layoutDir, repo string) ([]byte, error) {
	images, err := readLayout(layoutDir)
	if err != nil {
		return nil, err
	}
	var pins []types.Image
	for _, img := range images {
		pins = append(pins, types.Image{
			Name:    placeholder(img.binary),
			NewName: strings.TrimSuffix(repo, "/") + "/" + img.binary,
			Digest:  img.digest.String(),
		})
	}
	out, err := render(root, overlay, pins)
	if err != nil {
		return nil, err
	}
	for _, img := range images {
		if !strings.Contains(string(out), "/"+img.binary+"@"+img.digest.String()) {
			return nil, fmt.Errorf("rendering %s: no Deployment runs the %s image; is it still named %s in the base?", overlay, img.binary, placeholder(img.binary))
		}
	}
	return out, nil
}

// render builds the kustomization at overlay (relative to root) with the image changes.
func render(root, overlay string, images []types.Image) ([]byte, error) {
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{filepath.ToSlash(filepath.Join("..", "..", overlay))},
		Images:    images,
	}
	body, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	// A kustomization two levels below the root, so that the overlay resolves as it does
	// for an operator's own overlay; removed afterwards.
	if err := os.MkdirAll(filepath.Join(root, "dist"), 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(filepath.Join(root, "dist"), ".release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), body, 0o644); err != nil {
		return nil, err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", overlay, err)
	}
	return res.AsYaml()
}
