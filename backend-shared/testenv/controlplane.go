// Package testenv starts the real parts that tests run against: a kube-apiserver and etcd
// (envtest) with a kube-controller-manager beside them, with every CRD the service uses
// installed, and a throwaway PostgreSQL server with a fresh database per test.
//
// The binaries are built from Go modules by hack/build-binaries.sh; tests find them through
// KUBEBUILDER_ASSETS or, when that is unset, in the default cache directory.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gitops-service/gitops-service/backend-shared/scheme"
)

// Options chooses what a control plane runs.
type Options struct {
	// ControllerManager starts a kube-controller-manager: garbage collection of owner
	// references, namespace deletion and ServiceAccount token Secrets need it.
	ControllerManager bool
	// WithoutServiceCRDs skips the service's own CRDs (for a plain "remote" cluster).
	WithoutServiceCRDs bool
	// WithoutArgoCDCRDs skips Argo CD's Application, AppProject and ApplicationSet CRDs.
	WithoutArgoCDCRDs bool
	// Webhooks, when set, makes envtest serve these webhook configurations from the test
	// process (envtest's own webhook server options).
	Webhooks *envtest.WebhookInstallOptions
}

// ControlPlane is a running kube-apiserver + etcd (+ kube-controller-manager).
type ControlPlane struct {
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// Client is an uncached client with the service's scheme.
	Client client.Client
	// Scheme has every type the service uses.
	Scheme *runtime.Scheme
	// KubeconfigPath is an admin kubeconfig file for processes started beside the test.
	KubeconfigPath string
	// Env is the underlying envtest environment.
	Env *envtest.Environment

	controllerManager *Process
	workDir           string
	// apiServer is the kube-apiserver once StartAPIServer restarted it (envtest's before).
	apiServer     *Process
	apiServerArgv []string
}

// StartControlPlane starts a control plane; call Stop when done (typically from TestMain).
func StartControlPlane(opts Options) (*ControlPlane, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	var crdPaths []string
	if !opts.WithoutServiceCRDs {
		for _, sub := range []string{"bases", "appstudio"} {
			dir, err := repoPath("manifests", "crd", sub)
			if err != nil {
				return nil, err
			}
			crdPaths = append(crdPaths, dir)
		}
	}
	if !opts.WithoutArgoCDCRDs {
		paths, err := ArgoCDCRDPaths()
		if err != nil {
			return nil, err
		}
		crdPaths = append(crdPaths, paths...)
	}

	workDir, err := os.MkdirTemp("", "gitops-testenv-")
	if err != nil {
		return nil, err
	}
	s := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// envtest's defaults (20s) are too short on two busy cores, and an API server that
		// Argo CD still watches takes a while to stop.
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  60 * time.Second,
	}
	if opts.Webhooks != nil {
		env.WebhookInstallOptions = *opts.Webhooks
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(workDir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	cp := &ControlPlane{Config: cfg, Scheme: s, Env: env, workDir: workDir}

	if cp.KubeconfigPath, err = cp.writeAdminKubeconfig("admin"); err != nil {
		return nil, cp.stopAfter(err)
	}
	if cp.Client, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return nil, cp.stopAfter(err)
	}
	if opts.ControllerManager {
		if err := cp.startControllerManager(assets); err != nil {
			return nil, cp.stopAfter(err)
		}
	}
	return cp, nil
}

// Stop stops every process of the control plane and removes its files.
func (cp *ControlPlane) Stop() error {
	var errs []error
	if cp.controllerManager != nil {
		errs = append(errs, cp.controllerManager.Stop(10*time.Second))
	}
	if cp.apiServer != nil {
		errs = append(errs, cp.apiServer.Stop(30*time.Second))
	}
	errs = append(errs, cp.Env.Stop())
	errs = append(errs, os.RemoveAll(cp.workDir))
	return errors.Join(errs...)
}

// Main is the TestMain of a package whose tests share one control plane: it starts one
// with opts into *cp, runs the tests (run: m.Run, or dbtest.Main for tests with a
// database too), stops it and returns the exit code.
func Main(opts Options, cp **ControlPlane, run func() int) int {
	var err error
	if *cp, err = StartControlPlane(opts); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = (*cp).Stop() }()
	return run()
}

func (cp *ControlPlane) stopAfter(err error) error {
	return errors.Join(err, cp.Stop())
}

// writeAdminKubeconfig writes a kubeconfig of a system:masters user for processes that run
// beside the test (the controller-manager, binaries under test, kubectl).
func (cp *ControlPlane) writeAdminKubeconfig(name string) (string, error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.workDir, name+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

func (cp *ControlPlane) startControllerManager(assets string) error {
	kubeconfig, err := cp.writeAdminKubeconfig("kube-controller-manager")
	if err != nil {
		return err
	}
	certDir := cp.Env.ControlPlane.APIServer.CertDir
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		// Tokens must be signed with the key the API server verifies.
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
		"--root-ca-file=" + filepath.Join(certDir, "apiserver.crt"),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No serving port: parallel test packages must not fight over 10257.
		"--secure-port=0",
		"--controllers=*,-nodeipam,-nodelifecycle,-persistentvolume-binder,-attachdetach,-persistentvolume-expander,-ephemeral-volume,-pv-protection,-pvc-protection",
		"--concurrent-gc-syncs=5",
		"--concurrent-namespace-syncs=5",
		"--v=1",
	}
	p, err := StartProcess(filepath.Join(assets, "kube-controller-manager"), args, filepath.Join(cp.workDir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	cp.controllerManager = p
	return cp.waitControllerManagerReady()
}

// waitControllerManagerReady waits until the controller-manager has created the default
// namespace's ServiceAccount, which shows its controllers are running.
func (cp *ControlPlane) waitControllerManagerReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if !cp.controllerManager.Running() {
			return fmt.Errorf("kube-controller-manager exited: %s", cp.controllerManager.Tail())
		}
		sa := &corev1.ServiceAccount{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, sa); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager not ready after 60s: %s", cp.controllerManager.Tail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// AssetsDir is the directory holding kube-apiserver, kube-controller-manager and etcd.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		cache, err := cacheRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "envtest-assets")
	}
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s: build the test control plane with `hack/build-binaries.sh` (or `make test`)", bin, dir)
		}
	}
	return dir, nil
}

func cacheRoot() (string, error) {
	if dir := os.Getenv("GITOPS_CACHE_DIR"); dir != "" {
		return dir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "gitops-service"), nil
}

// RepoRoot is the repository root, found by walking up from the working directory (a test's
// package directory, or anywhere inside the checkout) to the directory holding go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (the directory holding go.work) not found above the working directory")
		}
		dir = parent
	}
}

func repoPath(elem ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{root}, elem...)...), nil
}
