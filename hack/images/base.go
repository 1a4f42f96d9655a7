package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonroot is the user the Deployments' securityContext runs as (runAsUser 65532), as in
// distroless's :nonroot images.
const nonroot = 65532

// The Debian packages whose files make the base: the CA bundle for TLS to the API server,
// PostgreSQL, Git hosts and managed clusters, and the zone database for time.LoadLocation.
var basePackages = []string{"ca-certificates", "tzdata"}

// baseFile is one entry of the base's only layer.
type baseFile struct {
	name     string // absolute path in the image
	mode     int64
	uid, gid int
	typ      byte
	body     []byte
	link     string
}

// staticBase assembles a distroless-style base index (one image per platform; the layer is
// architecture-independent) from the machine's copies of basePackages, so that no registry
// is needed. Everything is stamped with created, so the same packages give the same digest.
func staticBase(platforms []v1.Platform, created time.Time, sysroot string) (v1.ImageIndex, error) {
	files, err := baseFiles(sysroot)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := singleLayerImage(files, created, p, func(c *v1.Config) {
			c.User = fmt.Sprintf("%d:%d", nonroot, nonroot)
			c.WorkingDir = "/home/nonroot"
			c.Env = []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			}
		})
		if err != nil {
			return nil, err
		}
		platform := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &platform}})
	}
	return idx, nil
}

// singleLayerImage is an image of one layer holding files, for platform, every timestamp
// created, its configuration set by config.
func singleLayerImage(files []baseFile, created time.Time, platform v1.Platform, config func(*v1.Config)) (v1.Image, error) {
	layerBytes, err := tarFiles(files, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: layer, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: created}},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Created = v1.Time{Time: created}
	config(&cf.Config)
	return mutate.ConfigFile(img, cf)
}

// baseFiles lists the base's entries: users and groups, the CA bundle and zone database
// read below sysroot ("/" on a build machine), and each package's dpkg status so that
// scanners know the versions inside.
func baseFiles(sysroot string) ([]baseFile, error) {
	dir := func(name string, mode int64, uid int) baseFile {
		return baseFile{name: name, mode: mode, uid: uid, gid: uid, typ: tar.TypeDir}
	}
	file := func(name, body string) baseFile {
		return baseFile{name: name, mode: 0o644, typ: tar.TypeReg, body: []byte(body)}
	}
	files := []baseFile{
		dir("/etc", 0o755, 0), dir("/etc/ssl", 0o755, 0), dir("/etc/ssl/certs", 0o755, 0),
		dir("/home", 0o755, 0), dir("/home/nonroot", 0o700, nonroot), dir("/root", 0o700, 0),
		dir("/tmp", 0o1777, 0), dir("/usr", 0o755, 0), dir("/usr/share", 0o755, 0),
		dir("/var", 0o755, 0), dir("/var/lib", 0o755, 0), dir("/var/lib/dpkg", 0o755, 0), dir("/var/lib/dpkg/status.d", 0o755, 0),
		file("/etc/passwd", fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonroot, nonroot)),
		file("/etc/group", fmt.Sprintf("root:x:0:\nnobody:x:65534:\nnonroot:x:%d:\n", nonroot)),
		file("/etc/nsswitch.conf", "hosts: files dns\n"),
	}
	bundle, err := os.ReadFile(filepath.Join(sysroot, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil {
		return nil, fmt.Errorf("reading the CA bundle (install Debian's ca-certificates): %w", err)
	}
	files = append(files, baseFile{name: "/etc/ssl/certs/ca-certificates.crt", mode: 0o644, typ: tar.TypeReg, body: bundle})
	zoneinfo, err := treeFiles(sysroot, "usr/share/zoneinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the zone database (install Debian's tzdata): %w", err)
	}
	files = append(files, zoneinfo...)
	for _, pkg := range basePackages {
		status, err := dpkgStatus(pkg)
		if err != nil {
			return nil, err
		}
		files = append(files, file("/var/lib/dpkg/status.d/"+pkg, status))
	}
	return files, nil
}

// treeFiles reads the directory rel below sysroot: directories, regular files and links.
func treeFiles(sysroot, rel string) ([]baseFile, error) {
	var files []baseFile
	root := filepath.Join(sysroot, rel)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(sysroot, p)
		name := "/" + filepath.ToSlash(r)
		switch {
		case d.IsDir():
			files = append(files, baseFile{name: name, mode: 0o755, typ: tar.TypeDir})
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files = append(files, baseFile{name: name, mode: 0o777, typ: tar.TypeSymlink, link: target})
		case d.Type().IsRegular():
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files = append(files, baseFile{name: name, mode: 0o644, typ: tar.TypeReg, body: body})
		}
		return nil
	})
	return files, err
}

// dpkgStatus is the package's dpkg status stanza, as distroless records it.
func dpkgStatus(pkg string) (string, error) {
	out, err := exec.Command("dpkg-query", "--status", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-query --status %s (install Debian's %s): %w", pkg, pkg, err)
	}
	return string(out), nil
}

// tarFiles writes the entries sorted by name with fixed times and owners, parents first,
// so that the same files always give the same bytes.
func tarFiles(files []baseFile, mtime time.Time) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimPrefix(f.name, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		if parent := path.Dir(name); parent != "." && !seen[parent] {
			return nil, fmt.Errorf("%s comes before its directory %s", f.name, parent)
		}
		hdr := &tar.Header{
			Typeflag: f.typ, Name: name, Linkname: f.link, Mode: f.mode,
			Uid: f.uid, Gid: f.gid, Size: int64(len(f.body)), ModTime: mtime, Format: tar.FormatPAX,
		}
		if f.typ == tar.TypeDir {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
