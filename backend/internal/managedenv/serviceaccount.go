package managedenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	applyrbacv1 "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/internal/clusterconfig"
)

const (
	// ServiceAccountNamespace is where createNewServiceAccount installs the ServiceAccount.
	ServiceAccountNamespace = "kube-system"
	// LabelManagedEnvironmentUID marks what createNewServiceAccount installs on a target
	// cluster with the UID of the ManagedEnvironment it was installed for.
	LabelManagedEnvironmentUID = "managed-gitops.redhat.com/managed-environment-uid"

	fieldManager = "gitops-service"
	// tokenWait bounds the wait for the token controller to fill the token Secret.
	tokenWait = 10 * time.Second
	// requestedTokenLifetime is the lifetime asked of the TokenRequest API when the token
	// controller does not fill the token Secret.
	requestedTokenLifetime = 365 * 24 * time.Hour
	// storedContext is the context of the kubeconfig stored for a ServiceAccount.
	storedContext = "argocd-manager"
)

// ServiceAccountName is the name of the ServiceAccount, ClusterRole, ClusterRoleBinding (and
// Roles and RoleBindings) that createNewServiceAccount installs for a ManagedEnvironment.
func ServiceAccountName(uid types.UID) string { return "argocd-manager-" + string(uid) }

// tokenSecretName is the name of the ServiceAccount's token Secret.
func tokenSecretName(uid types.UID) string { return ServiceAccountName(uid) + "-token" }

// installer installs, with the user's credentials, the ServiceAccount Argo CD deploys with.
//
// Everything it installs besides the ClusterRole is owned (ownerReferences) by the
// ClusterRole, so that deleting the ClusterRole makes the target cluster's garbage collector
// remove the rest; the ClusterRole always lets the ServiceAccount delete the ClusterRole
// itself, so that the stored token suffices to uninstall once the user's credentials are
// gone.
type installer struct {
	cs   kubernetes.Interface
	conn *Connection
	uid  types.UID
	name string
	// namespaces, when not empty and cluster resources are not wanted, limits the
	// ServiceAccount to full access in these namespaces (and reading Namespaces).
	namespaces []string
	labels     map[string]string
	// previousToken is the token stored for the environment, if any: reused when the token
	// Secret has no token and it still works (see token).
	previousToken string
}

// installServiceAccount installs (idempotently, with server-side apply) the ServiceAccount
// of env with the user's credentials conn, and returns the ServiceAccount's token once it
// has proved to work. previousToken is the token stored for env, if any.
func installServiceAccount(ctx context.Context, conn *Connection, env *v1.GitOpsDeploymentManagedEnvironment, previousToken string) (string, error) {
	cs, err := kubernetes.NewForConfig(conn.Config)
	if err != nil {
		return "", credErr(v1.ManagedEnvironmentReasonUnableToCreateClient, "no client can be built from context %q of the kubeconfig", conn.ContextName)
	}
	in := &installer{
		cs: cs, conn: conn, uid: env.UID, name: ServiceAccountName(env.UID), previousToken: previousToken,
		labels: map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, LabelManagedEnvironmentUID: string(env.UID)},
	}
	// Argo CD manages cluster-scoped resources only with cluster-wide access, which RBAC
	// cannot grant without granting every namespace too.
	if !env.Spec.ClusterResources {
		in.namespaces = env.Spec.Namespaces
	}
	token, err := in.install(ctx)
	if outcome.As(err) != nil {
		// Best effort: leave nothing behind that no stored token could remove later.
		in.rollback(ctx)
	}
	return token, err
}

func (in *installer) install(ctx context.Context) (string, error) {
	apply := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	rules := []*applyrbacv1.PolicyRuleApplyConfiguration{
		// Lets the stored token uninstall everything (see installer).
		applyrbacv1.PolicyRule().WithAPIGroups(rbacv1.GroupName).WithResources("clusterroles").
			WithVerbs("get", "delete").WithResourceNames(in.name),
	}
	if len(in.namespaces) == 0 {
		rules = append(rules,
			applyrbacv1.PolicyRule().WithAPIGroups("*").WithResources("*").WithVerbs("*"),
			applyrbacv1.PolicyRule().WithNonResourceURLs("*").WithVerbs("*"))
	} else {
		rules = append(rules, applyrbacv1.PolicyRule().WithAPIGroups("").WithResources("namespaces").WithVerbs("get", "list", "watch"))
	}
	role, err := in.cs.RbacV1().ClusterRoles().Apply(ctx,
		applyrbacv1.ClusterRole(in.name).WithLabels(in.labels).WithRules(rules...), apply)
	if err != nil {
		return "", in.fail(err, "create or update ClusterRole "+in.name, `"patch" on clusterroles.rbac.authorization.k8s.io (cluster scope)`)
	}
	owner := applymetav1.OwnerReference().WithAPIVersion(rbacv1.SchemeGroupVersion.String()).WithKind("ClusterRole").
		WithName(role.Name).WithUID(role.UID)
	subject := applyrbacv1.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(in.name).WithNamespace(ServiceAccountNamespace)

	if _, err := in.cs.CoreV1().ServiceAccounts(ServiceAccountNamespace).Apply(ctx,
		applycorev1.ServiceAccount(in.name, ServiceAccountNamespace).WithLabels(in.labels).WithOwnerReferences(owner), apply); err != nil {
		return "", in.fail(err, "create or update ServiceAccount "+ServiceAccountNamespace+"/"+in.name,
			`"patch" on serviceaccounts in namespace `+ServiceAccountNamespace)
	}
	if _, err := in.cs.RbacV1().ClusterRoleBindings().Apply(ctx,
		applyrbacv1.ClusterRoleBinding(in.name).WithLabels(in.labels).WithOwnerReferences(owner).
			WithRoleRef(applyrbacv1.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(in.name)).
			WithSubjects(subject), apply); err != nil {
		return "", in.fail(err, "create or update ClusterRoleBinding "+in.name, `"patch" on clusterrolebindings.rbac.authorization.k8s.io (cluster scope)`)
	}
	for _, ns := range in.namespaces {
		if _, err := in.cs.RbacV1().Roles(ns).Apply(ctx,
			applyrbacv1.Role(in.name, ns).WithLabels(in.labels).WithOwnerReferences(owner).
				WithRules(applyrbacv1.PolicyRule().WithAPIGroups("*").WithResources("*").WithVerbs("*")), apply); err != nil {
			return "", in.fail(err, "create or update Role "+ns+"/"+in.name, `"patch" on roles.rbac.authorization.k8s.io in namespace `+ns)
		}
		if _, err := in.cs.RbacV1().RoleBindings(ns).Apply(ctx,
			applyrbacv1.RoleBinding(in.name, ns).WithLabels(in.labels).WithOwnerReferences(owner).
				WithRoleRef(applyrbacv1.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(in.name)).
				WithSubjects(subject), apply); err != nil {
			return "", in.fail(err, "create or update RoleBinding "+ns+"/"+in.name, `"patch" on rolebindings.rbac.authorization.k8s.io in namespace `+ns)
		}
	}
	in.removeStaleRoles(ctx)

	secretName := tokenSecretName(in.uid)
	if _, err := in.cs.CoreV1().Secrets(ServiceAccountNamespace).Apply(ctx,
		applycorev1.Secret(secretName, ServiceAccountNamespace).WithLabels(in.labels).WithOwnerReferences(owner).
			WithAnnotations(map[string]string{corev1.ServiceAccountNameKey: in.name}).
			WithType(corev1.SecretTypeServiceAccountToken), apply); err != nil {
		return "", in.fail(err, "create or update Secret "+ServiceAccountNamespace+"/"+secretName,
			`"patch" on secrets in namespace `+ServiceAccountNamespace)
	}
	token, err := in.token(ctx, secretName)
	if err != nil {
		return "", err
	}
	if err := in.verify(ctx, token); err != nil {
		return "", err
	}
	return token, nil
}

// token waits, bounded, for the token controller to fill the token Secret. Failing that it
// falls back to the TokenRequest API: a cluster may not run the token controller for Secrets
// (a control plane whose kube-controller-manager has no service-account key, or a hosted
// one that disabled legacy tokens), and the install must still work there. A requested
// token is bound to the ServiceAccount (deleting it revokes the token) but expires, so it
// asks for a long lifetime (the API server may shorten it) and a later reconcile keeps the
// stored token while it works and requests a new one once it does not.
func (in *installer) token(ctx context.Context, secretName string) (string, error) {
	deadline := time.Now().Add(tokenWait)
	for {
		secret, err := in.cs.CoreV1().Secrets(ServiceAccountNamespace).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return "", in.fail(err, "read Secret "+ServiceAccountNamespace+"/"+secretName, `"get" on secrets in namespace `+ServiceAccountNamespace)
		}
		if token := secret.Data[corev1.ServiceAccountTokenKey]; len(token) > 0 {
			return string(token), nil
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if in.previousToken != "" && in.works(ctx, in.previousToken) {
		return in.previousToken, nil
	}
	seconds := int64(requestedTokenLifetime / time.Second)
	tr, err := in.cs.CoreV1().ServiceAccounts(ServiceAccountNamespace).CreateToken(ctx, in.name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", in.fail(err, "request a token for ServiceAccount "+ServiceAccountNamespace+"/"+in.name,
			`"create" on serviceaccounts/token in namespace `+ServiceAccountNamespace)
	}
	return tr.Status.Token, nil
}

// serviceAccountConfig reaches the cluster of the user's connection with token.
func (in *installer) serviceAccountConfig(token string) *rest.Config {
	return &rest.Config{
		Host: in.conn.Config.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: in.conn.Config.Insecure, ServerName: in.conn.Config.ServerName, CAData: in.conn.Config.CAData,
		},
		Timeout: in.conn.Config.Timeout, Dial: in.conn.Config.Dial,
	}
}

// works says whether token authenticates and may read namespaces.
func (in *installer) works(ctx context.Context, token string) bool {
	return Verify(ctx, &Connection{Config: in.serviceAccountConfig(token), ContextName: in.conn.ContextName}, in.namespaces) == nil
}

// verify proves the new ServiceAccount's token works, allowing the API server's caches of
// tokens and RBAC a few seconds to catch up.
func (in *installer) verify(ctx context.Context, token string) error {
	conn := &Connection{Config: in.serviceAccountConfig(token), ContextName: in.conn.ContextName}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := Verify(ctx, conn, in.namespaces)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			if ce := outcome.As(err); ce != nil {
				return credErr(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
					"the ServiceAccount %s/%s was installed, but its token does not work: %s", ServiceAccountNamespace, in.name, ce.Message)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// removeStaleRoles deletes, best effort, the Roles and RoleBindings installed earlier in
// namespaces that are no longer to be used (all of them once the ClusterRole gives access
// everywhere). It lists across namespaces, which the user's credentials may not be allowed
// to: then the stale ones stay until the environment is deleted (they are owned by the
// ClusterRole).
func (in *installer) removeStaleRoles(ctx context.Context) {
	selector := LabelManagedEnvironmentUID + "=" + string(in.uid)
	bindings, err := in.cs.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err == nil {
		for _, b := range bindings.Items {
			if !slices.Contains(in.namespaces, b.Namespace) {
				_ = in.cs.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{})
			}
		}
	}
	roles, err := in.cs.RbacV1().Roles(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err == nil {
		for _, r := range roles.Items {
			if !slices.Contains(in.namespaces, r.Namespace) {
				_ = in.cs.RbacV1().Roles(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
			}
		}
	}
}

// rollback deletes, best effort, the ClusterRole of a failed install: the target's garbage
// collector removes what it owns.
func (in *installer) rollback(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	background := metav1.DeletePropagationBackground
	_ = in.cs.RbacV1().ClusterRoles().Delete(ctx, in.name, metav1.DeleteOptions{PropagationPolicy: &background})
}

// fail turns an API error of an install step into a user error saying which
// permission is missing; other errors (transport, timeouts) are returned for a retry. The
// API server's own message is not quoted: it is not needed and could, for a Secret, echo
// its data.
func (in *installer) fail(err error, step, permission string) error {
	const remedy = "createNewServiceAccount needs credentials that may create a ServiceAccount and its token Secret in namespace " +
		ServiceAccountNamespace + ", ClusterRoles and ClusterRoleBindings (and Roles and RoleBindings in spec.namespaces), and grant " +
		"the access they give (typically cluster-admin); or set createNewServiceAccount to false to use the Secret's credentials"
	switch {
	// RBAC's escalation check answers with a plain Forbidden; only its message tells it
	// from a missing permission.
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "not currently held"):
		return credErr(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
			"unable to %s on the target cluster (403 Forbidden): the credentials may not grant permissions they do not hold themselves "+
				"(RBAC escalation prevention); give them those permissions or the \"escalate\" and \"bind\" verbs. %s", step, remedy)
	case apierrors.IsForbidden(err):
		return credErr(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
			"unable to %s on the target cluster (403 Forbidden): the credentials lack %s. %s", step, permission, remedy)
	case apierrors.IsUnauthorized(err):
		return credErr(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
			"unable to %s on the target cluster: the cluster rejected the credentials (401 Unauthorized)", step)
	case apierrors.IsNotFound(err) && strings.HasPrefix(step, "create or update Role"):
		return credErr(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
			"unable to %s on the target cluster: a namespace of spec.namespaces does not exist", step)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && apierrors.ReasonForError(err) != metav1.StatusReasonUnknown &&
		!apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) && !apierrors.IsTooManyRequests(err) &&
		!apierrors.IsInternalError(err) && !apierrors.IsServiceUnavailable(err) && !apierrors.IsConflict(err) {
		return credErr(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
			"unable to %s on the target cluster (%s)", step, apierrors.ReasonForError(err))
	}
	return fmt.Errorf("installing the ServiceAccount: unable to %s: %w", step, err)
}

// serviceAccountCredentials are the credentials stored for an installed ServiceAccount:
// its token, and a kubeconfig with only the cluster's address and CA (none of the user's
// credentials).
func serviceAccountCredentials(env *v1.GitOpsDeploymentManagedEnvironment, conn *Connection, token string) (*db.ClusterCredentials, error) {
	host := env.Spec.APIURL
	data, err := (&kubeconfig.Credentials{
		Context: storedContext, Server: host, CAData: conn.Config.CAData, Insecure: conn.Config.Insecure,
		ServerName: conn.Config.ServerName, BearerToken: token,
	}).Write()
	if err != nil {
		return nil, fmt.Errorf("writing the ServiceAccount's kubeconfig: %w", err)
	}
	return &db.ClusterCredentials{
		Host:                       host,
		Kubeconfig:                 db.Secret(data),
		KubeconfigContext:          storedContext,
		BearerToken:                db.Secret(token),
		ServiceAccountNamespace:    ServiceAccountNamespace,
		AllowInsecureSkipTLSVerify: env.Spec.AllowInsecureSkipTLSVerify,
		Namespaces:                 env.Spec.Namespaces,
		ClusterResources:           env.Spec.ClusterResources,
	}, nil
}

// uninstallServiceAccount deletes, best effort, what createNewServiceAccount installed for
// the ManagedEnvironment uid, with its stored credentials (the ServiceAccount's token: the
// user's are not kept): it deletes the ClusterRole, which owns the rest.
func uninstallServiceAccount(ctx context.Context, creds *db.ClusterCredentials, uid string) error {
	if creds.ServiceAccountNamespace == "" || creds.BearerToken == "" {
		return nil
	}
	restConfig, err := clusterconfig.FromCredentials(creds)
	if err != nil {
		return err
	}
	restConfig.BearerToken = string(creds.BearerToken)
	cs, err := kubernetes.NewForConfig(bound(restConfig, 0))
	if err != nil {
		return errors.New("no client can be built from the stored kubeconfig")
	}
	background := metav1.DeletePropagationBackground
	err = cs.RbacV1().ClusterRoles().Delete(ctx, ServiceAccountName(types.UID(uid)), metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ClusterRole %s (%s)", ServiceAccountName(types.UID(uid)), apierrors.ReasonForError(err))
	}
	return nil
}
