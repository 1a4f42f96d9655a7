package manageropts

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestUncachedSecretsKeepsTheOtherCacheOptions(t *testing.T) {
	configMap := &corev1.ConfigMap{}
	cases := []struct {
		name             string
		in               *client.CacheOptions
		want             []client.Object
		wantUnstructured bool
	}{
		{name: "no client cache options", in: nil, want: []client.Object{&corev1.Secret{}}},
		{name: "another kind already read uncached", in: &client.CacheOptions{DisableFor: []client.Object{configMap}, Unstructured: true},
			want: []client.Object{configMap, &corev1.Secret{}}, wantUnstructured: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ctrl.Options{Client: client.Options{Cache: c.in}}
			UncachedSecrets(&o)
			if !reflect.DeepEqual(o.Client.Cache.DisableFor, c.want) {
				t.Errorf("DisableFor %v, want %v", o.Client.Cache.DisableFor, c.want)
			}
			if o.Client.Cache.Unstructured != c.wantUnstructured {
				t.Error("the other client cache options changed")
			}
		})
	}
}
