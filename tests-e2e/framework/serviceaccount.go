package framework

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// NamespaceAdminKubeconfig creates ServiceAccount namespace/name on cluster with every
// permission in each of adminOf and none elsewhere (a Role and RoleBinding per namespace,
// nothing cluster-wide), and returns a kubeconfig with a bearer token of it, as a user
// would hand over credentials limited to their own namespaces. (The built-in "admin"
// ClusterRole would not do: it is aggregated by kube-controller-manager, which a remote
// cluster does not run, so it has no rules there.)
func NamespaceAdminKubeconfig(ctx context.Context, cluster *testenv.ControlPlane, namespace, name string, adminOf ...string) ([]byte, error) {
	if err := cluster.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}); err != nil {
		return nil, err
	}
	for _, ns := range adminOf {
		if err := cluster.Client.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-admin", Namespace: ns},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
		}); err != nil {
			return nil, err
		}
		if err := cluster.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-admin", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		}); err != nil {
			return nil, err
		}
	}
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cluster.Config.Host, CertificateAuthorityData: cluster.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["context"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name}
	cfg.CurrentContext = "context"
	return clientcmd.Write(*cfg)
}
