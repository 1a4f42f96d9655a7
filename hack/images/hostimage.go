package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// hostImage is an image of programs installed on this machine from Debian's packages
// (git, redis-server) and binaries built here (Argo CD), for the one-node cluster, which
// cannot pull. It holds the named paths, the shared libraries their ELF files load, and
// the static base's users, certificates and zone database.
type hostImage struct {
	name string
	// paths are copied as they are on this machine; a directory with all below it.
	paths []string
	// files put a file of this machine at another path: image path -> source.
	files map[string]string
	// links are symbolic links: image path -> target.
	links map[string]string
	// user runs the image (uid = gid), with a home directory it owns.
	user       int
	userName   string
	env        []string
	workdir    string
	entrypoint []string
}

// build makes the image for this machine's platform.
func (h hostImage) build(created time.Time) (v1.Image, error) {
	files, err := baseFiles("/")
	if err != nil {
		return nil, err
	}
	home := "/home/" + h.userName
	own := []baseFile{
		{name: "/etc/passwd", mode: 0o644, typ: tar.TypeReg, body: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", h.userName, h.user, h.user, h.userName, home))},
		{name: "/etc/group", mode: 0o644, typ: tar.TypeReg, body: []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\n", h.userName, h.user))},
		{name: home, mode: 0o755, uid: h.user, gid: h.user, typ: tar.TypeDir},
	}
	collected := newCollector()
	for _, p := range h.paths {
		if err := collected.addTree(p); err != nil {
			return nil, err
		}
	}
	for dst, src := range h.files {
		resolved, err := filepath.EvalSymlinks(src)
		if err != nil {
			return nil, err
		}
		if err := collected.addFileAs(resolved, dst); err != nil {
			return nil, err
		}
	}
	for dst, target := range h.links {
		collected.add(baseFile{name: dst, mode: 0o777, typ: tar.TypeSymlink, link: target})
	}
	if err := collected.addLibraries(); err != nil {
		return nil, err
	}
	files = merge(files, collected.withParents(), own)
	return singleLayerImage(files, created, v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, func(c *v1.Config) {
		c.User = fmt.Sprintf("%d:%d", h.user, h.user)
		c.WorkingDir = h.workdir
		c.Entrypoint = h.entrypoint
		c.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=" + home}, h.env...)
	})
}

// merge joins lists of entries; of two entries with one name, the later one wins.
func merge(lists ...[]baseFile) []baseFile {
	byName := map[string]baseFile{}
	for _, l := range lists {
		for _, f := range l {
			byName[f.name] = f
		}
	}
	out := make([]baseFile, 0, len(byName))
	for _, f := range byName {
		out = append(out, f)
	}
	return out
}

// collector gathers files of this machine by their image path. A machine whose /bin,
// /lib, /lib64 and /sbin link into /usr (Debian's merged /usr) gets the same links in the
// image, and files are stored under the directory those links lead to, so that every path
// the programs and the loader use resolves in the image as on the machine.
type collector struct {
	files map[string]baseFile
	elfs  []string // machine paths of the ELF files taken
}

func newCollector() *collector {
	c := &collector{files: map[string]baseFile{}}
	for _, dir := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		if target, err := os.Readlink(dir); err == nil {
			c.add(baseFile{name: dir, mode: 0o777, typ: tar.TypeSymlink, link: target})
		}
	}
	return c
}

// canonical is path with its directory's links resolved: where the file really lives.
func canonical(path string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return path
	}
	return filepath.Join(dir, filepath.Base(path))
}

func (c *collector) add(f baseFile) { c.files[f.name] = f }

// addTree adds path and, for a directory, everything below it; links are kept as links
// and their targets added too.
func (c *collector) addTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			c.add(baseFile{name: canonical(p), mode: 0o755, typ: tar.TypeDir})
			return nil
		}
		return c.addFileAs(p, canonical(p))
	})
}

// addFileAs adds the machine's file src at dst (a link stays a link, its target added).
func (c *collector) addFileAs(src, dst string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		c.add(baseFile{name: dst, mode: 0o777, typ: tar.TypeSymlink, link: target})
		resolved, err := filepath.EvalSymlinks(src)
		if err != nil {
			return err
		}
		if _, ok := c.files[resolved]; ok || resolved == dst {
			return nil
		}
		return c.addFileAs(resolved, resolved)
	}
	body, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	c.add(baseFile{name: dst, mode: int64(info.Mode().Perm()), typ: tar.TypeReg, body: body})
	if f, err := elf.NewFile(bytes.NewReader(body)); err == nil {
		_ = f.Close()
		c.elfs = append(c.elfs, src)
	}
	return nil
}

var lddPath = regexp.MustCompile(`(?m)(?:=> )?(/\S+) \(0x`)

// addLibraries adds the shared libraries (and the loader) every ELF file loads, as ldd
// resolves them on this machine.
func (c *collector) addLibraries() error {
	for i := 0; i < len(c.elfs); i++ {
		out, err := exec.Command("ldd", c.elfs[i]).CombinedOutput()
		if err != nil {
			continue // static, or not a program: nothing to load
		}
		for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
			lib := m[1]
			if _, ok := c.files[canonical(lib)]; ok {
				continue
			}
			if err := c.addFileAs(lib, canonical(lib)); err != nil {
				return fmt.Errorf("%s needs %s: %w", c.elfs[i], lib, err)
			}
		}
	}
	return nil
}

// withParents returns the files with every parent directory they need.
func (c *collector) withParents() []baseFile {
	var out []baseFile
	dirs := map[string]bool{}
	for name, f := range c.files {
		out = append(out, f)
		for dir := filepath.Dir(name); dir != "/" && !dirs[dir]; dir = filepath.Dir(dir) {
			dirs[dir] = true
			if _, ok := c.files[dir]; !ok {
				out = append(out, baseFile{name: dir, mode: 0o755, typ: tar.TypeDir})
			}
		}
	}
	return out
}

// nodeImages are the images the one-node cluster runs besides the service's own: Argo CD
// (the binary built here, with Debian's git for the repo server) and Debian's Redis.
func nodeImages(argocdBinary, argocdTag string) []hostImage {
	argocdRoles := map[string]string{}
	for _, role := range []string{"argocd-application-controller", "argocd-repo-server", "argocd-git-ask-pass", "argocd-cmp-server"} {
		argocdRoles["/usr/local/bin/"+role] = "argocd"
	}
	return []hostImage{
		{
			name:  "localhost/gitops-service/argocd:" + argocdTag,
			paths: []string{"/usr/bin/git", "/usr/lib/git-core", "/usr/share/git-core", "/usr/bin/ssh", "/bin/sh", "/bin/cp"},
			files: map[string]string{"/usr/local/bin/argocd": argocdBinary},
			links: argocdRoles,
			user:  999, userName: "argocd", workdir: "/home/argocd",
		},
		{
			name:  "localhost/gitops-service/redis:debian",
			paths: []string{"/usr/bin/redis-server"},
			user:  999, userName: "redis", workdir: "/tmp",
			// Argo CD's manifests give Redis only arguments, as the official image expects.
			entrypoint: []string{"redis-server"},
		},
	}
}
