package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

const webhookSecret = "bench-secret"

// webhookHook is the Git server's post-commit hook: commits of the repository "pushed"
// call the receiver of namespace, as a Git host's webhook would.
type webhookHook struct {
	s         *stack.Stack
	mu        sync.Mutex
	namespace string
}

func (h *webhookHook) onCommit(name, branch, commit string) error {
	h.mu.Lock()
	ns := h.namespace
	h.mu.Unlock()
	if name != "pushed" || ns == "" {
		return nil
	}
	code, body, err := h.s.GitWebhook.PushGitHub(context.Background(), ns, webhookSecret, h.s.Git.URL(name), branch, commit)
	if err == nil && code != http.StatusAccepted {
		err = fmt.Errorf("the receiver answered %d: %s", code, body)
	}
	return err
}

// timePushes times pushes one after the other to a repository whose pushes call the
// receiver, then the same number of pushes, at once, to repositories left to polling.
func timePushes(ctx context.Context, s *stack.Stack, hook *webhookHook, pushes int, res *Result) error {
	c := s.ControlPlane.Client
	res.Pushes = pushes
	ns, err := namespace(ctx, c, "push-")
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gitops-service-git-webhook", Namespace: ns},
		StringData: map[string]string{"secret": webhookSecret}}); err != nil {
		return err
	}
	depl, err := deployRepository(ctx, s, ns, "pushed")
	if err != nil {
		return err
	}
	hook.mu.Lock()
	hook.namespace = ns
	hook.mu.Unlock()
	var webhook []float64
	for i := range pushes {
		took, err := timePush(ctx, s, depl, "pushed", i)
		if err != nil {
			return err
		}
		webhook = append(webhook, took)
		fmt.Fprintf(os.Stderr, "==> push %d with the receiver: %.2fs\n", i+1, took)
	}

	polled := make([]*v1.GitOpsDeployment, pushes)
	for i := range polled {
		if polled[i], err = deployRepository(ctx, s, ns, "polled-"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	// Argo CD polls every 3 minutes with up to a minute of jitter, and its repo server may
	// answer from a revision cache that lives 3 minutes more.
	fmt.Fprintf(os.Stderr, "==> %d pushes left to Argo CD's polling (up to 7 minutes)\n", pushes)
	polling := make([]float64, pushes)
	errs := make([]error, pushes)
	var wg sync.WaitGroup
	for i := range polled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			polling[i], errs[i] = timePush(ctx, s, polled[i], "polled-"+strconv.Itoa(i), 0)
			fmt.Fprintf(os.Stderr, "==> push %d left to polling: %.1fs\n", i+1, polling[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	sort.Float64s(webhook)
	sort.Float64s(polling)
	res.PushWebhookP50Seconds, res.PushWebhookP99Seconds = stack.Percentile(webhook, 0.5), stack.Percentile(webhook, 0.99)
	res.PushPollingP50Seconds, res.PushPollingP99Seconds = stack.Percentile(polling, 0.5), stack.Percentile(polling, 0.99)
	res.PushRatioP50 = res.PushWebhookP50Seconds / res.PushPollingP50Seconds
	return nil
}

func namespace(ctx context.Context, c client.Client, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	err := c.Create(ctx, ns)
	return ns.Name, err
}

// deployRepository creates a repository with one ConfigMap and a GitOpsDeployment of it,
// and waits until it is deployed.
func deployRepository(ctx context.Context, s *stack.Stack, ns, repo string) (*v1.GitOpsDeployment, error) {
	if err := s.Git.Create(repo, nil); err != nil {
		return nil, err
	}
	if _, err := s.Git.Commit(repo, map[string]string{"app/configmap.yaml": configMap(repo, "initial")}, "initial"); err != nil {
		return nil, err
	}
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: repo, Namespace: ns},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: s.Git.URL(repo), Path: "app"},
			Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
	c := s.ControlPlane.Client
	if err := c.Create(ctx, depl); err != nil {
		return nil, err
	}
	_, err := poll(ctx, time.Now(), func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(depl), depl)
		return depl.Status.Sync.Status == v1.SyncStatusCodeSynced && depl.Status.Health.Status == v1.HealthStatusCodeHealthy, err
	})
	return depl, err
}

// timePush commits a change to repo and times it until depl shows that commit
// Synced/Healthy.
func timePush(ctx context.Context, s *stack.Stack, depl *v1.GitOpsDeployment, repo string, i int) (float64, error) {
	c := s.ControlPlane.Client
	start := time.Now()
	commit, err := s.Git.Commit(repo, map[string]string{"app/configmap.yaml": configMap(repo, "push-"+strconv.Itoa(i))}, "push")
	if err != nil {
		return 0, err
	}
	got := depl.DeepCopy()
	return pollFor(ctx, start, 12*time.Minute, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(got), got)
		return got.Status.Sync.Revision == commit && got.Status.Sync.Status == v1.SyncStatusCodeSynced &&
			got.Status.Health.Status == v1.HealthStatusCodeHealthy, err
	})
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}
