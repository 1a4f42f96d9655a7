package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Down stops every process of the cluster and removes what Up made: the containers and
// their cgroups, the mounts below the state directories, the pods' network namespaces, the
// node's network namespace (and with it its interfaces and iptables rules) and the state.
// It is safe to run on a cluster that is half up or already down.
func (c *Cluster) Down() error {
	var errs []error
	// Processes started with StartAs first: they may use the cluster, never the reverse.
	extra, _ := os.ReadDir(c.path("pids"))
	for _, e := range extra {
		if !slices.Contains(components, e.Name()) {
			if err := c.stop(e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for i := len(components) - 1; i >= 0; i-- {
		if err := c.stop(components[i]); err != nil {
			errs = append(errs, err)
		}
	}
	// Containers outlive containerd: their shims and processes are found by cgroup.
	errs = append(errs, c.killCgroups()...)
	errs = append(errs, c.killShims()...)
	errs = append(errs, c.unmountBelow(c.StateDir, c.runDir(), "/run/netns/cni-", "/var/run/netns/cni-")...)
	if err := deleteNetns(c.Name); err != nil {
		errs = append(errs, err)
	}
	for _, dir := range []string{c.runDir(), c.StateDir} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stop ends one component: SIGTERM, then SIGKILL after ten seconds.
func (c *Cluster) stop(name string) error {
	b, err := os.ReadFile(c.path("pids", name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("pid file of %s: %w", name, err)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return os.Remove(c.path("pids", name))
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// killCgroups kills every process in the node's cgroups and removes them, deepest first.
func (c *Cluster) killCgroups() []error {
	var errs []error
	for _, ctrl := range cgroupControllers() {
		root := filepath.Join("/sys/fs/cgroup", ctrl, c.Name)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, dir := range dirs {
			for attempt := 0; attempt < 50; attempt++ {
				procs := readPids(filepath.Join(dir, "cgroup.procs"))
				if len(procs) == 0 {
					break
				}
				for _, pid := range procs {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			}
		}
	}
	return errs
}

// killShims kills the runc shims of the node's containerd (they name its socket).
func (c *Cluster) killShims() []error {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "containerd-shim") && strings.Contains(string(cmdline), c.containerdSocket()) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// unmountBelow lazily unmounts every mount point starting with one of prefixes, deepest
// first (overlay roots, volume tmpfs, pod network namespaces).
func (c *Cluster) unmountBelow(prefixes ...string) []error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return []error{err}
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		for _, p := range prefixes {
			if p != "" && strings.HasPrefix(mp, p) {
				points = append(points, mp)
				break
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	inUse := networkNamespacesInUse()
	var errs []error
	for _, mp := range points {
		// Pod network namespaces live beside every other runtime's in /run/netns: remove
		// only those no process is in any more (this node's pods were killed above), so
		// that another node on this machine keeps its pods' networks.
		if strings.Contains(mp, "/netns/cni-") && inUse[inode(mp)] {
			continue
		}
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
		if strings.Contains(mp, "/netns/cni-") {
			_ = os.Remove(mp)
		}
	}
	return errs
}

// networkNamespacesInUse is the set of network namespaces (by inode) some process is in.
func networkNamespacesInUse() map[uint64]bool {
	inUse := map[uint64]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			if ino := inode(filepath.Join("/proc", e.Name(), "ns", "net")); ino != 0 {
				inUse[ino] = true
			}
		}
	}
	return inUse
}

// inode is the inode of the file at path (a namespace's, following the link), or 0.
func inode(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return st.Ino
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func readPids(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func goarch() string { return runtime.GOARCH }
