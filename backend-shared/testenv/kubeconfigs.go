package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ClientCertKubeconfig adds a client-certificate user in groups and returns a kubeconfig
// with its certificate and key inline, as a user would hand it over, and its client
// configuration. Its server has no trailing slash (Config.Host has one), so every use of it
// also checks that the service treats the two spellings as the same server.
func (cp *ControlPlane) ClientCertKubeconfig(name string, groups ...string) ([]byte, *rest.Config, error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	cfg := user.Config()
	data, err := kubeconfig(strings.TrimSuffix(cp.Config.Host, "/"), cfg.CAData,
		&clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData})
	return data, cfg, err
}

// ServiceAccountKubeconfig creates ServiceAccount namespace/name bound to cluster-admin and
// returns a kubeconfig with a bearer token of it, and the token.
func (cp *ControlPlane) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) ([]byte, string, error) {
	if err := cp.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}); err != nil {
		return nil, "", err
	}
	if err := cp.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}); err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", err
	}
	data, err := kubeconfig(cp.Config.Host, cp.Config.CAData, &clientcmdapi.AuthInfo{Token: tr.Status.Token})
	return data, tr.Status.Token, err
}

// ServiceAccountTokenKubeconfig returns a kubeconfig with a bearer token, valid for
// expiration, of the existing ServiceAccount namespace/name, and the token. Unlike
// ServiceAccountKubeconfig it creates and binds nothing: the ServiceAccount has whatever
// roles the caller bound to it.
func (cp *ControlPlane) ServiceAccountTokenKubeconfig(ctx context.Context, namespace, name string, expiration time.Duration) ([]byte, string, error) {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, "", err
	}
	seconds := int64(expiration / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("creating a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	data, err := kubeconfig(cp.Config.Host, cp.Config.CAData, &clientcmdapi.AuthInfo{Token: tr.Status.Token})
	return data, tr.Status.Token, err
}

// kubeconfig is a kubeconfig with one cluster, user and current context.
func kubeconfig(server string, caData []byte, user *clientcmdapi.AuthInfo) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos["user"] = user
	cfg.Contexts["context"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.CurrentContext = "context"
	return clientcmd.Write(*cfg)
}

// TokenKubeconfig is a kubeconfig with a bearer token for server (the control plane's own
// address, or another that reaches it), trusting the control plane's CA.
func (cp *ControlPlane) TokenKubeconfig(server, token string) []byte {
	data, err := kubeconfig(server, cp.Config.CAData, &clientcmdapi.AuthInfo{Token: token})
	if err != nil {
		panic(err) // writing a well-formed Config does not fail
	}
	return data
}
