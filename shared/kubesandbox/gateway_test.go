package kubesandbox_test

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

// installHTTPRouteCRD registers the Gateway API HTTPRoute resource (the
// part of its schema the runtime writes) with the test API server, once
// per cluster, and waits until it is served.
func installHTTPRouteCRD(t *testing.T, rc *rest.Config, ns string) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(rc)
	str := map[string]any{"type": "string"}
	obj := func(required []any, props map[string]any) map[string]any {
		o := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	arr := func(items map[string]any) map[string]any { return map[string]any{"type": "array", "items": items} }
	port := map[string]any{"type": "integer", "format": "int32", "minimum": int64(1), "maximum": int64(65535)}
	spec := obj(nil, map[string]any{
		"parentRefs": arr(obj([]any{"name"}, map[string]any{"group": str, "kind": str, "namespace": str, "name": str, "sectionName": str})),
		"hostnames":  arr(map[string]any{"type": "string", "pattern": `^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`}),
		"rules": arr(obj(nil, map[string]any{
			"backendRefs": arr(obj([]any{"name"}, map[string]any{"group": str, "kind": str, "name": str, "port": port})),
		})),
	})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		// The Gateway API's own CRDs carry this annotation (its group is
		// a protected *.k8s.io group).
		"metadata": map[string]any{"name": "httproutes.gateway.networking.k8s.io",
			"annotations": map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/1538"}},
		"spec": map[string]any{
			"group": "gateway.networking.k8s.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "httproutes", "singular": "httproute", "kind": "HTTPRoute", "listKind": "HTTPRouteList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": obj(nil, map[string]any{
					"apiVersion": str, "kind": str, "metadata": map[string]any{"type": "object"}, "spec": spec})}}},
		},
	}}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "the HTTPRoute resource to be served", func() bool {
		_, err := dyn.Resource(kubesandbox.HTTPRoutes).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	})
}

// With a Gateway configured, each sandbox host (the agent server's and
// each extra port's) gets an HTTPRoute attached to it instead of an
// Ingress; the routes go with their sandbox.
func TestGatewayRouting(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	installHTTPRouteCRD(t, rc, ns)
	k := newKube(t, rc, ns, func(c *kubesandbox.Config) {
		c.Gateway = &kubesandbox.GatewayRef{Namespace: "infra", Name: "acs-sandboxes"}
		c.Default.ExtraPorts = []kubesandbox.Port{{Name: "vscode", Port: 60000}}
	})
	st, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: "sb-gw", OwnerID: "u", Spec: acs.SandboxSpec{ID: "acs-default"}, SessionKey: acs.NewSecret(32)})
	if err != nil {
		t.Fatal(err)
	}
	st = waitStatus(t, k.rt, "sb-gw", acs.SandboxRunning)
	rid := runtimeID(st)
	name := "acs-" + rid
	routes := dynamic.NewForConfigOrDie(rc).Resource(kubesandbox.HTTPRoutes).Namespace(ns)
	for _, want := range []struct {
		name, host string
		port       int64
	}{
		{name, rid + "-sandboxes.example.test", 80},
		{name + "-vscode", "vscode-" + rid + "-sandboxes.example.test", 60000},
	} {
		r, err := routes.Get(ctx, want.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("route %s: %v", want.name, err)
		}
		hosts, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
		parents, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs")
		rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
		if len(hosts) != 1 || hosts[0] != want.host || len(parents) != 1 || len(rules) != 1 {
			t.Fatalf("route %s: %v", want.name, r.Object["spec"])
		}
		parent := parents[0].(map[string]any)
		backends, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs")
		if parent["name"] != "acs-sandboxes" || parent["namespace"] != "infra" || parent["kind"] != "Gateway" || len(backends) != 1 ||
			backends[0].(map[string]any)["name"] != name || backends[0].(map[string]any)["port"] != want.port {
			t.Fatalf("route %s: parent %v backends %v", want.name, parent, backends)
		}
		if refs := r.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "ConfigMap" || r.GetLabels()[kubesandbox.LabelRuntimeID] != rid {
			t.Fatalf("route %s: owners %v labels %v", want.name, refs, r.GetLabels())
		}
	}
	if _, err := k.net.Ingresses(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an Ingress besides the routes: %v", err)
	}
	if err := k.rt.Delete(ctx, "sb-gw"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "the routes to be deleted with the sandbox", func() bool {
		l, err := routes.List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelRuntimeID + "=" + rid})
		return err == nil && len(l.Items) == 0
	})
}
