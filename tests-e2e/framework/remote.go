package framework

import (
	"context"
	"errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// StartRemoteCluster starts a second API server, a cluster the service reaches only through
// a GitOpsDeploymentManagedEnvironment, and returns it with the kubeconfig of a
// cluster-admin ServiceAccount (bearer token), as a user would hand it over.
func StartRemoteCluster(ctx context.Context) (*testenv.ControlPlane, []byte, error) {
	remote, err := testenv.StartControlPlane(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		return nil, nil, err
	}
	kubeconfig, err := deployerKubeconfig(ctx, remote)
	if err != nil {
		return nil, nil, errors.Join(err, remote.Stop())
	}
	return remote, kubeconfig, nil
}

func deployerKubeconfig(ctx context.Context, cp *testenv.ControlPlane) ([]byte, error) {
	const ns, name = "kube-system", "gitops-deployer"
	if err := cp.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
		return nil, err
	}
	if err := cp.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["remote"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	cfg.AuthInfos["deployer"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "deployer"}
	cfg.CurrentContext = "remote"
	return clientcmd.Write(*cfg)
}
