package install

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// scraper is the ServiceAccount the tests scrape metrics as, bound to the ClusterRole the
// install guide tells operators to bind their Prometheus to.
const scraper = "metrics-scraper"

// Scraper reads the binaries' metrics as a Prometheus inside the cluster would: through a
// port-forward to the pod, over HTTPS with a token RBAC allows (or plain HTTP, as a release
// from before secure metrics serves them).
type Scraper struct {
	Config *rest.Config
	CS     *kubernetes.Clientset
}

// Token is a token of the scraper ServiceAccount in namespace, which it creates and binds
// to gitops-service-metrics-reader if need be.
func (s *Scraper) Token(ctx context.Context, namespace string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: scraper, Namespace: namespace}}
	if _, err := s.CS.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops-service-" + scraper},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gitops-service-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: scraper, Namespace: namespace}}}
	if _, err := s.CS.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	tr, err := s.CS.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, scraper, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// Scrape GETs /metrics of pod's container port with token (none when empty) and returns
// the status code and body.
func (s *Scraper) Scrape(ctx context.Context, pod corev1.Pod, port int, token string) (int, string, error) {
	local, stop, err := s.forward(pod, port)
	if err != nil {
		return 0, "", err
	}
	defer stop()
	// The endpoint's certificate is self-signed: what is checked is who may read.
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	c := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	code, body, err := get(ctx, c, "https://127.0.0.1:"+strconv.Itoa(local)+"/metrics", token)
	if err != nil {
		// A release from before secure metrics serves plain HTTP.
		return get(ctx, c, "http://127.0.0.1:"+strconv.Itoa(local)+"/metrics", "")
	}
	return code, body, nil
}

func get(ctx context.Context, c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// forward port-forwards a free local port to the pod's port, as kubectl port-forward does.
func (s *Scraper) forward(pod corev1.Pod, port int) (int, func(), error) {
	transport, upgrader, err := spdy.RoundTripperFor(s.Config)
	if err != nil {
		return 0, nil, err
	}
	url := s.CS.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return 0, nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return 0, nil, fmt.Errorf("port-forward to %s: %w", pod.Name, err)
	case <-time.After(30 * time.Second):
		close(stop)
		return 0, nil, fmt.Errorf("port-forward to %s: not ready in 30s", pod.Name)
	}
	ports, err := fw.GetPorts()
	if err == nil && len(ports) == 0 {
		err = errors.New("none forwarded")
	}
	if err != nil {
		close(stop)
		return 0, nil, fmt.Errorf("port-forward to %s: no local port: %w", pod.Name, err)
	}
	return int(ports[0].Local), func() { close(stop) }, nil
}
