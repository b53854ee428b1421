package kubesandbox_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

// API errors a real server will not produce on demand (throttling,
// timeouts, conflicts) are injected with the fake clientset; everything
// else is tested against the real API server (cluster_test.go).
func TestAPIFaults(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name    string
		verb    string
		res     string
		err     error
		want    error
		inError string
	}{
		{"throttled create", "create", "configmaps", apierrors.NewTooManyRequests("slow down", 1), acs.ErrUnavailable, "create sandbox"},
		{"timeout", "create", "configmaps", apierrors.NewServerTimeout(gr, "create", 1), acs.ErrUnavailable, "create sandbox"},
		{"unavailable pod create", "create", "pods", apierrors.NewServiceUnavailable("etcd down"), acs.ErrUnavailable, "create the pod"},
		{"forbidden secret", "create", "secrets", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("RBAC")), nil, "create the secret"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.PrependReactor(c.verb, c.res, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, c.err })
			rt, err := kubesandbox.New(kubesandbox.Config{Namespace: "acs", BaseHost: "x.test", Default: kubesandbox.PodTemplate{Image: "i"}}, kubesandbox.Clients{Core: cs.CoreV1(), Networking: cs.NetworkingV1()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = rt.Start(ctx, acs.StartRequest{SandboxID: "s1", OwnerID: "u", Spec: acs.SandboxSpec{ID: "default"}, SessionKey: "k"})
			if err == nil || !strings.Contains(err.Error(), c.inError) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("Start: %v, want %v mentioning %q", err, c.want, c.inError)
			}
		})
	}
	// A claim that loses the race for a warm runtime (409 on its update)
	// tries the next one, and with none left creates a pod: a miss.
	t.Run("claim conflict", func(t *testing.T) {
		cs := fake.NewClientset()
		cfg := kubesandbox.Config{Namespace: "acs", BaseHost: "x.test", Default: kubesandbox.PodTemplate{Image: "i", WarmPool: 1}}
		rt, err := kubesandbox.New(cfg, kubesandbox.Clients{Core: cs.CoreV1(), Networking: cs.NetworkingV1()})
		if err != nil {
			t.Fatal(err)
		}
		spec := acs.SandboxSpec{ID: "default"}
		if _, err := rt.Fill(ctx, []acs.SandboxSpec{spec}); err != nil {
			t.Fatal(err)
		}
		cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
			if cm.Labels[kubesandbox.LabelPool] == "claimed" {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cm.Name, errors.New("modified"))
			}
			return false, nil, nil
		})
		st, err := rt.Start(ctx, acs.StartRequest{SandboxID: "s1", OwnerID: "u", Spec: spec, SessionKey: "k"})
		if err != nil || st.WarmPool != "miss" {
			t.Fatalf("start after a lost claim: %+v %v", st, err)
		}
	})
}
