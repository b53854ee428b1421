package kubesandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"
	"k8s.io/client-go/rest"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
	"github.com/acs-project/acs/shared/sandboxtest"
)

func TestMain(m *testing.M) { testbin.Main(m) }

var ctx = context.Background()

// cluster connects to the test API server (scripts/kube-cluster.sh, started
// by scripts/test.sh) and gives the test a namespace of its own.
func cluster(t testing.TB) (*rest.Config, string) {
	t.Helper()
	path := os.Getenv("ACS_TEST_KUBECONFIG")
	if path == "" {
		t.Skip("ACS_TEST_KUBECONFIG is not set: run scripts/test.sh (it starts a local kube-apiserver with kwok)")
	}
	rc, err := kubesandbox.RESTConfig(kubesandbox.Credentials{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 400
	core := corev1client.NewForConfigOrDie(rc)
	ns := fmt.Sprintf("acs-test-%s", acs.NewID()[:10])
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// The templates ask for gVisor: the API server admits only pods whose
	// RuntimeClass exists (kwok runs them whatever the handler).
	_, err = nodev1client.NewForConfigOrDie(rc).RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Claims of this class are provisioned by the test's stand-in.
	immediate := storagev1.VolumeBindingImmediate
	_, err = storagev1client.NewForConfigOrDie(rc).StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: standinClass}, Provisioner: "acs.dev/standin", VolumeBindingMode: &immediate}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return rc, ns
}

// tolerations let pods onto the kwok node.
func tolerations() []corev1.Toleration {
	v := os.Getenv("ACS_TEST_KUBE_NODE_TOLERATION") // key=value:Effect
	kv, effect, _ := strings.Cut(v, ":")
	k, val, _ := strings.Cut(kv, "=")
	if k == "" {
		return nil
	}
	return []corev1.Toleration{{Key: k, Operator: corev1.TolerationOpEqual, Value: val, Effect: corev1.TaintEffect(effect)}}
}

type kube struct {
	rt    *kubesandbox.Runtime
	core  corev1client.CoreV1Interface
	net   networkingv1client.NetworkingV1Interface
	ns    string
	stand *standin
	cfg   kubesandbox.Config
}

func testTemplate() kubesandbox.PodTemplate {
	return kubesandbox.PodTemplate{Image: "registry.example/acs-sandbox:test", WorkspaceSize: resource.MustParse("2Gi"),
		RuntimeClassName: "gvisor", StorageClass: standinClass,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}
}

func newKube(t testing.TB, rc *rest.Config, ns string, mutate func(*kubesandbox.Config)) *kube {
	return newKubeAs(t, rc, rc, ns, mutate)
}

// newKubeAs runs the runtime with the credentials of rc and the stand-in
// (which creates volumes) with those of admin.
func newKubeAs(t testing.TB, rc, admin *rest.Config, ns string, mutate func(*kubesandbox.Config)) *kube {
	t.Helper()
	core := corev1client.NewForConfigOrDie(rc)
	net := networkingv1client.NewForConfigOrDie(rc)
	st := newStandin(t, corev1client.NewForConfigOrDie(admin), ns, testbin.ACS(t))
	cfg := kubesandbox.Config{Namespace: ns, BaseHost: "sandboxes.example.test", Separator: "-",
		Default: testTemplate(), Tolerations: tolerations(), URLFor: st.URLFor,
		Env: map[string]string{"OH_WEBHOOKS_0_BASE_URL": "http://control-plane.test/api/v1/webhooks"}, ReadyTimeout: 60 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	rt, err := kubesandbox.New(cfg, kubesandbox.Clients{Core: core, Networking: net, Dynamic: dynamic.NewForConfigOrDie(rc)})
	if err != nil {
		t.Fatal(err)
	}
	return &kube{rt: rt, core: core, net: net, ns: ns, stand: st, cfg: cfg}
}

// runtimeID is the runtime id in an agent URL.
func runtimeID(st acs.RuntimeStatus) string {
	return st.AgentURL[strings.LastIndex(st.AgentURL, "/")+1:]
}

func TestConformance(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, nil)
	sandboxtest.Run(t, k.rt, sandboxtest.Options{
		Spec: acs.SandboxSpec{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"}, WorkingDir: "/workspace"},
		// kwok reports readiness without waiting for the stand-in's
		// process, so the suite does not call the agent server right away.
		AgentReachable: false,
		Timeout:        60 * time.Second,
		WriteFile: func(t *testing.T, st acs.RuntimeStatus, name, content string) {
			dir := k.stand.workspace(runtimeID(st))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		ReadFile: func(t *testing.T, st acs.RuntimeStatus, name string) (string, error) {
			b, err := os.ReadFile(filepath.Join(k.stand.workspace(runtimeID(st)), name))
			return string(b), err
		},
	})
}

func waitStatus(t testing.TB, rt acs.Runtime, id string, want acs.SandboxStatus) acs.RuntimeStatus {
	t.Helper()
	var st acs.RuntimeStatus
	if !testwait.Until(60*time.Second, func() bool {
		var err error
		if st, err = rt.Status(ctx, id); err != nil {
			t.Fatal(err)
		}
		return st.Status == want
	}) {
		t.Fatalf("sandbox %s never reached %s (last %+v)", id, want, st)
	}
	return st
}

// The objects a sandbox is made of, their security settings, and what
// pause, resume and delete do to them.
func TestObjectsAndLifecycle(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, nil)
	spec := acs.SandboxSpec{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"}, WorkingDir: "/workspace",
		InitialEnv: map[string]string{"SPEC_VAR": "from-spec"}}
	key := acs.NewSecret(40)
	if _, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: "sb-objects", OwnerID: "alice", Spec: spec, SessionKey: key,
		Env: map[string]string{"OH_ALLOW_CORS_ORIGINS_0": "https://app.test"}}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, k.rt, "sb-objects", acs.SandboxRunning)
	rid := runtimeID(st)
	name := "acs-" + rid
	if st.SessionKey != key || st.WarmPool != "" {
		t.Fatalf("status %+v", st)
	}
	pod, err := k.core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case pod.Spec.SecurityContext.RunAsNonRoot == nil || !*pod.Spec.SecurityContext.RunAsNonRoot,
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL",
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault,
		pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken:
		t.Fatalf("pod security: %+v / %+v", pod.Spec.SecurityContext, sc)
	}
	if c.Image != "registry.example/acs-sandbox:test" || c.Resources.Limits.Memory().String() != "2Gi" ||
		pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" ||
		c.ReadinessProbe.HTTPGet.Path != "/ready" || c.LivenessProbe.HTTPGet.Path != "/alive" ||
		strings.Join(c.Command, " ") != "/usr/local/bin/acs agent-server" {
		t.Fatalf("pod template not applied: %+v", c)
	}
	if pod.Labels[kubesandbox.LabelSpec] != "acs-default" || pod.Labels[kubesandbox.LabelOwner] == "" || pod.Labels[kubesandbox.LabelSandbox] == "" {
		t.Fatalf("pod labels %v", pod.Labels)
	}
	sec, err := k.core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || string(sec.Data["SESSION_API_KEY"]) != key || string(sec.Data["OH_ALLOW_CORS_ORIGINS_0"]) != "https://app.test" ||
		string(sec.Data["OH_WEBHOOKS_0_BASE_URL"]) == "" {
		t.Fatalf("secret %v %v", sec, err)
	}
	for _, e := range c.Env {
		if e.Name == "SESSION_API_KEY" || strings.Contains(e.Value, key) {
			t.Fatal("the session key is in the pod spec")
		}
	}
	if _, err := k.core.PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := k.core.Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || svc.Spec.Selector[kubesandbox.LabelRuntimeID] != rid {
		t.Fatalf("service %v %v", svc, err)
	}
	ing, err := k.net.Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || ing.Spec.Rules[0].Host != rid+"-sandboxes.example.test" {
		t.Fatalf("ingress %v %v", ing, err)
	}
	for _, meta := range []metav1.ObjectMeta{pod.ObjectMeta, sec.ObjectMeta, svc.ObjectMeta, ing.ObjectMeta} {
		if len(meta.OwnerReferences) != 1 || meta.OwnerReferences[0].Kind != "ConfigMap" {
			t.Fatalf("%s is not owned by the sandbox record: %v", meta.Name, meta.OwnerReferences)
		}
	}
	testwait.For(t, 60*time.Second, "the stand-in agent server", func() bool { return k.stand.agentUp(rid) })

	// Pause: the pod goes, the PVC stays.
	if err := k.rt.Pause(ctx, "sb-objects"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, k.rt, "sb-objects", acs.SandboxPaused)
	testwait.For(t, 60*time.Second, "the pod to go", func() bool {
		_, err := k.core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := k.core.PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("PVC after pause: %v", err)
	}
	// Resume: a new key, a new pod.
	newKey := acs.NewSecret(40)
	if _, err := k.rt.Resume(ctx, "sb-objects", newKey, map[string]string{"RESUMED": "1"}); err != nil {
		t.Fatal(err)
	}
	if st := waitStatus(t, k.rt, "sb-objects", acs.SandboxRunning); st.SessionKey != newKey {
		t.Fatalf("resumed with %q", st.SessionKey)
	}
	// Delete: everything goes (the garbage collector follows the owner
	// references).
	if err := k.rt.Delete(ctx, "sb-objects"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, k.rt, "sb-objects", acs.SandboxMissing)
	testwait.For(t, 60*time.Second, "every object of the sandbox to be deleted", func() bool {
		_, e1 := k.core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		_, e2 := k.core.PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		_, e3 := k.core.Services(ns).Get(ctx, name, metav1.GetOptions{})
		_, e4 := k.net.Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
		_, e5 := k.core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3) && apierrors.IsNotFound(e4) && apierrors.IsNotFound(e5)
	})
}

// The warm pool: Fill starts pods ahead of time, concurrent starts claim
// distinct ones (a hit each) until the pool is empty (then a miss), and
// Fill refills it and replaces runtimes started with an outdated
// environment.
func TestWarmPool(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, func(c *kubesandbox.Config) { c.Default.WarmPool = 2 })
	spec := acs.SandboxSpec{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"}}
	rep, err := k.rt.Fill(ctx, []acs.SandboxSpec{spec})
	if err != nil || rep.Created != 2 {
		t.Fatalf("fill: %+v %v", rep, err)
	}
	testwait.For(t, 60*time.Second, "two ready warm pods", func() bool {
		pods, _ := k.core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelPool + "=warm"})
		ready := 0
		for _, p := range pods.Items {
			if s, _ := kubesandbox.PodStatus(&p); s == acs.SandboxRunning {
				ready++
			}
		}
		return ready == 2
	})
	var wg sync.WaitGroup
	results := make([]acs.RuntimeStatus, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = k.rt.Start(ctx, acs.StartRequest{SandboxID: fmt.Sprintf("sb-warm-%d", i), OwnerID: "alice", Spec: spec, SessionKey: acs.NewSecret(40)})
		}()
	}
	wg.Wait()
	hits, runtimes := 0, map[string]bool{}
	for i := range 3 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		st := waitStatus(t, k.rt, fmt.Sprintf("sb-warm-%d", i), acs.SandboxRunning)
		if results[i].WarmPool == "hit" {
			hits++
		}
		if runtimes[runtimeID(st)] {
			t.Fatalf("runtime %s was claimed twice", runtimeID(st))
		}
		runtimes[runtimeID(st)] = true
	}
	if hits != 2 {
		t.Fatalf("%d warm-pool hits of 3 starts with 2 warm pods", hits)
	}
	// The claimed pods carry their sandbox's labels; deleting a sandbox
	// deletes its claimed runtime.
	rep, err = k.rt.Fill(ctx, []acs.SandboxSpec{spec})
	if err != nil || rep.Created != 2 || rep.Warm != 2 {
		t.Fatalf("refill: %+v %v", rep, err)
	}
	// Create to RUNNING, from a ready warm pod and from nothing (the
	// figures in the closing note: kwok makes scheduling and pulls
	// instant, so the difference here is the API work and kwok's status
	// round trips; on a real cluster a miss adds scheduling, volume
	// provisioning, image pull and agent-server start).
	testwait.For(t, 60*time.Second, "two ready warm pods again", func() bool {
		pods, _ := k.core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelPool + "=warm"})
		n := 0
		for _, p := range pods.Items {
			if s, _ := kubesandbox.PodStatus(&p); s == acs.SandboxRunning {
				n++
			}
		}
		return n == 2
	})
	timed := func(rt *kubesandbox.Runtime, id string) (time.Duration, string) {
		t0 := time.Now()
		st, err := rt.Start(ctx, acs.StartRequest{SandboxID: id, OwnerID: "alice", Spec: spec, SessionKey: acs.NewSecret(40)})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, rt, id, acs.SandboxRunning)
		return time.Since(t0), st.WarmPool
	}
	cold := newKube(t, rc, ns, nil)
	dHit, hit := timed(k.rt, "sb-timed-hit")
	dMiss, _ := timed(cold.rt, "sb-timed-miss")
	if hit != "hit" {
		t.Fatalf("timed start: warm pool %q", hit)
	}
	t.Logf("create to RUNNING: warm-pool hit %v, no pool %v", dHit.Round(time.Millisecond), dMiss.Round(time.Millisecond))
	for _, id := range []string{"sb-timed-hit", "sb-timed-miss"} {
		k.rt.Delete(ctx, id)
	}
	for i := range 3 {
		if err := k.rt.Delete(ctx, fmt.Sprintf("sb-warm-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 60*time.Second, "the claimed runtimes to be deleted", func() bool {
		cms, _ := k.core.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelPool + "=claimed"})
		return len(cms.Items) == 0
	})
	// A changed environment makes the warm pods stale: Fill replaces them.
	k2 := newKube(t, rc, ns, func(c *kubesandbox.Config) {
		c.Default.WarmPool = 2
		c.Env = map[string]string{"OH_WEBHOOKS_0_BASE_URL": "http://elsewhere.test"}
	})
	rep, err = k2.rt.Fill(ctx, []acs.SandboxSpec{spec})
	if err != nil || rep.Removed != 1 || rep.Created != 2 {
		t.Fatalf("fill after an environment change: %+v %v", rep, err)
	}
}

// Creating an unknown spec's sandbox without a template is an error, and a
// sandbox id that is no label value still works.
func TestOddInputs(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, func(c *kubesandbox.Config) { c.Default = kubesandbox.PodTemplate{} })
	_, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: "x", OwnerID: "u", Spec: acs.SandboxSpec{ID: "nope"}, SessionKey: "k"})
	if err == nil || !strings.Contains(err.Error(), "no pod template") {
		t.Fatalf("start without a template: %v", err)
	}
	k = newKube(t, rc, ns, nil)
	odd := "Sandbox/With Spaces & Ünïcode " + strings.Repeat("x", 80)
	if _, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: odd, OwnerID: "user@example.com", Spec: acs.SandboxSpec{ID: "spec with spaces"}, SessionKey: "k"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, k.rt, odd, acs.SandboxRunning)
	if err := k.rt.Delete(ctx, odd); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Pause(ctx, odd); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("pause deleted: %v", err)
	}
	// The same id again, at once: fresh objects, not the old ones the
	// garbage collector is still deleting (a terminating PVC would keep
	// the new pod unschedulable).
	if _, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: odd, OwnerID: "user@example.com", Spec: acs.SandboxSpec{ID: "spec with spaces"}, SessionKey: "k2"}); err != nil {
		t.Fatal(err)
	}
	if st := waitStatus(t, k.rt, odd, acs.SandboxRunning); st.SessionKey != "k2" {
		t.Fatalf("restarted sandbox: %+v", st)
	}
	if err := k.rt.Delete(ctx, odd); err != nil {
		t.Fatal(err)
	}
}
