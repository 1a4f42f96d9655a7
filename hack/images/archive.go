package main

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// containerdNameAnnotation names an image in an archive for `ctr images import`.
const containerdNameAnnotation = "io.containerd.image.name"

// namedIndex is an index to archive under a full image name.
type namedIndex struct {
	name  string
	index v1.ImageIndex
}

// writeArchive writes the indexes as an OCI archive (a tar of an image layout) that
// containerd imports under the given names.
func writeArchive(path string, images []namedIndex) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, img := range images {
		if err := p.AppendIndex(img.index, layout.WithAnnotations(map[string]string{
			containerdNameAnnotation: img.name,
			refNameAnnotation:        img.name,
		})); err != nil {
			return err
		}
	}
	return tarDir(dir, path)
}

// tarDir writes the files below dir into a tar at path.
func tarDir(dir, path string) error {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			names = append(names, p)
		}
		return err
	}); err != nil {
		return err
	}
	sort.Strings(names)
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	for _, name := range names {
		rel, _ := filepath.Rel(dir, name)
		info, err := os.Stat(name)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		_ = f.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return out.Close()
}
