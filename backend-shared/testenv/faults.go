package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// CrashAPIServer kills the kube-apiserver with SIGKILL, as a crash would; etcd keeps
// running. StartAPIServer starts it again.
func (cp *ControlPlane) CrashAPIServer() error {
	if cp.apiServer != nil {
		cp.apiServer.Kill()
		return nil
	}
	// The first crash: the server is envtest's, found by its port.
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		return err
	}
	pid, argv, err := findProcess("kube-apiserver", "--secure-port="+u.Port())
	if err != nil {
		return err
	}
	cp.apiServerArgv = argv
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver %d: %w", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); processExists(pid); {
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver %d did not exit", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// StartAPIServer starts the kube-apiserver stopped by CrashAPIServer again, with the same
// command line (port, certificates, etcd), and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if cp.apiServerArgv == nil {
		return errors.New("the kube-apiserver was not crashed")
	}
	if cp.apiServer != nil && cp.apiServer.Running() {
		return errors.New("the kube-apiserver is running")
	}
	p, err := StartProcess(cp.apiServerArgv[0], cp.apiServerArgv[1:], filepath.Join(cp.workDir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	cp.apiServer = p
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("kube-apiserver exited: %s", p.Tail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %w", errors.Join(err, ctx.Err()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// findProcess finds the process whose program is name and whose command line has arg.
func findProcess(name, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		argv := []string{}
		for _, a := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
			argv = append(argv, string(a))
		}
		if filepath.Base(argv[0]) != name {
			continue
		}
		for _, a := range argv[1:] {
			if a == arg {
				return pid, argv, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no %s process with %s", name, arg)
}

func processExists(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited; its parent has not reaped it yet.
	if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
		return data[i+2] != 'Z'
	}
	return true
}
