package runtimeenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/functions/internal/runtimeenv"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/kubesandbox"
	"github.com/acs-project/acs/shared/runtimeapi"
)

// load reads a function's configuration the way awsenv.Load does.
func load(t *testing.T, vars map[string]string) *awsenv.Env {
	t.Helper()
	m := map[string]string{"AWS_REGION": "eu-west-1", "ACS_TABLE": "acs", "ACS_SECRET_KEY": "0123456789abcdef0123",
		"ACS_PUBLIC_URL": "https://api.example.com", "ACS_KUBE_BASE_HOST": "runtime.example.com",
		"ACS_SANDBOX_IMAGE": "registry.example/acs-sandbox:1", "ACS_KUBECONFIG": "/nonexistent/kubeconfig"}
	for k, v := range vars {
		m[k] = v
	}
	cfg, err := config.Load(func(k string) string { return m[k] }, config.Target{Program: config.Function, Need: config.NeedRuntime})
	if err != nil {
		t.Fatal(err)
	}
	return &awsenv.Env{Config: cfg}
}

func TestRuntimeAPI(t *testing.T) {
	rt, err := runtimeenv.New(load(t, map[string]string{"ACS_RUNTIME_URL": "http://127.0.0.1:5000", "ACS_RUNTIME_API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.(*runtimeapi.Client); !ok {
		t.Fatalf("runtime %T, want the runtime API client", rt)
	}
	if runtimeenv.Pool(rt) != nil {
		t.Fatal("the runtime API has no warm pool")
	}
}

func TestKubernetesConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "templates.json")
	os.WriteFile(good, []byte(`{"acs-default":{"image":"registry.example/acs-sandbox:2","warm_pool":2}}`), 0o600)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\n"+
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"), 0o600)
	tests := []struct {
		name    string
		vars    map[string]string
		wantErr string
	}{
		{"kubeconfig", map[string]string{"ACS_KUBECONFIG": kubeconfig}, ""},
		{"templates from a file", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_POD_TEMPLATES": good}, ""},
		{"gateway routing", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_ROUTING": "gateway", "ACS_KUBE_GATEWAY": "infra/acs"}, ""},
		{"missing kubeconfig file", nil, "kubeconfig"},
		{"templates file missing", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_POD_TEMPLATES": filepath.Join(dir, "nope.json")}, "ACS_KUBE_POD_TEMPLATES"},
		{"template without image", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_POD_TEMPLATES": `{"acs-default":{"warm_pool":1}}`}, "image is required"},
		{"unknown template field", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_POD_TEMPLATES": `{"acs-default":{"image":"i","cpu":2}}`}, "ACS_KUBE_POD_TEMPLATES"},
		{"tolerations", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_TOLERATIONS": `[{"key":"sandboxes","operator":"Exists","effect":"NoSchedule"}]`}, ""},
		{"tolerations not an array", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_TOLERATIONS": `{"key":"x"}`}, "ACS_KUBE_TOLERATIONS"},
		{"toleration with an unknown field", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_TOLERATIONS": `[{"key":"x","operatr":"Exists"}]`}, "ACS_KUBE_TOLERATIONS"},
		{"toleration with a bad operator", map[string]string{"ACS_KUBECONFIG": kubeconfig, "ACS_KUBE_TOLERATIONS": `[{"key":"x","operator":"Maybe"}]`}, "operator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := runtimeenv.New(load(t, tc.vars))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := rt.(*kubesandbox.Runtime); !ok || runtimeenv.Pool(rt) == nil {
					t.Fatalf("runtime %T, want Kubernetes with a warm pool", rt)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want an error naming %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// Against the test cluster: the runtime built from the functions'
// variables reaches the API server with the kubeconfig, works in the
// configured namespace, and its warm pods get what every sandbox gets.
func TestKubernetesRuntimeFromEnvironment(t *testing.T) {
	path := os.Getenv("ACS_TEST_KUBECONFIG")
	if path == "" {
		t.Skip("ACS_TEST_KUBECONFIG is not set: run scripts/test.sh (it starts a local kube-apiserver)")
	}
	ctx := context.Background()
	rc, err := kubesandbox.RESTConfig(kubesandbox.Credentials{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	core := corev1client.NewForConfigOrDie(rc)
	ns := "acs-env-" + strings.ToLower(acs.NewID()[:10])
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	rt := runtimeenv.Runtime(load(t, map[string]string{"ACS_KUBECONFIG": path, "ACS_KUBE_NAMESPACE": ns, "ACS_KUBE_WARM_POOL": "1",
		"ACS_KUBE_NODE_SELECTOR": "pool=sandboxes", "ACS_KUBE_TOLERATIONS": `[{"key":"sandboxes","operator":"Exists","effect":"NoSchedule"}]`}))
	if st, err := rt.Status(ctx, "no-such-sandbox"); err != nil || st.Status != acs.SandboxMissing {
		t.Fatalf("status of an unknown sandbox: %+v %v", st, err)
	}
	if err := rt.Pause(ctx, "no-such-sandbox"); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("pause of an unknown sandbox: %v", err)
	}
	spec := awsenv.DefaultSpecs()
	rep, err := runtimeenv.Pool(rt).Fill(ctx, spec)
	if err != nil || rep.Created != 1 {
		t.Fatalf("fill: %+v %v", rep, err)
	}
	pods, err := core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelPool + "=warm"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("warm pods: %v %v", pods, err)
	}
	pod := pods.Items[0]
	if img := pod.Spec.Containers[0].Image; img != "registry.example/acs-sandbox:1" {
		t.Fatalf("warm pod image %q", img)
	}
	found := false
	for _, tol := range pod.Spec.Tolerations {
		found = found || (tol.Key == "sandboxes" && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule)
	}
	if !found || pod.Spec.NodeSelector["pool"] != "sandboxes" {
		t.Fatalf("warm pod placement: tolerations %v, node selector %v", pod.Spec.Tolerations, pod.Spec.NodeSelector)
	}
	sec, err := core.Secrets(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	// The browser's origin (the public URL's) may call the pod's agent
	// server, so the web frontend served there can use it.
	if err != nil || string(sec.Data["OH_WEBHOOKS_0_BASE_URL"]) != "https://api.example.com/api/v1/webhooks" ||
		string(sec.Data["OH_ALLOW_CORS_ORIGINS_0"]) != "https://api.example.com" {
		t.Fatalf("the warm runtime's environment: %v %v", sec, err)
	}
}
