package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ensureRedisPassword creates the Secret argocd-redis (key auth) in the pod's namespace
// with a random password unless it exists: what Argo CD's install manifests expect of
// their Redis init container.
func ensureRedisPassword() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	password := rand.Text()
	_, err = cs.CoreV1().Secrets(string(ns)).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-redis", Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
		Data:       map[string][]byte{"auth": []byte(password)},
	}, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		fmt.Println("argocd-redis exists")
		return nil
	case err != nil:
		return err
	}
	fmt.Println("argocd-redis created")
	return nil
}
