package kubesandbox_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

// recorder notes the (verb, resource) of every API request.
type recorder struct {
	mu   sync.Mutex
	used map[string]bool
}

func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		// /api/v1/namespaces/NS/RES[/NAME] or /apis/G/V/namespaces/NS/RES[/NAME]
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if i := slices.Index(parts, "namespaces"); i >= 0 && len(parts) > i+2 {
			group := ""
			if parts[0] == "apis" {
				group = parts[1]
			}
			res, named := parts[i+2], len(parts) > i+3
			verb := map[string]string{"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[req.Method]
			if req.Method == "GET" && !named {
				verb = "list"
			}
			r.mu.Lock()
			r.used[group+"/"+res+":"+verb] = true
			r.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The provisioner's Role (deploy/kubernetes/rbac.yaml), applied to the real
// API server, lets the runtime do all it does — and the runtime uses every
// permission it grants.
func TestRBACRoleIsExactlyWhatTheRuntimeUses(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	raw, err := os.ReadFile("../../deploy/kubernetes/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if yaml.Unmarshal(doc, &meta) == nil && meta.Kind == "Role" {
			if err := yaml.UnmarshalStrict(doc, &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(role.Rules) == 0 {
		t.Fatal("no Role in rbac.yaml")
	}
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					granted[g+"/"+res+":"+v] = true
				}
			}
		}
	}
	rbac := rbacv1client.NewForConfigOrDie(rc)
	role.Namespace, role.ResourceVersion = ns, ""
	if _, err := rbac.Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := "acs-provisioner-" + ns
	if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "acs-provisioner", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "acs:provisioner"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{used: map[string]bool{}}
	as := rest.CopyConfig(rc)
	as.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"acs:provisioner", "system:authenticated"}}
	as.WrapTransport = rec.wrap
	// RBAC bindings take effect within moments; wait for the first allowed call.
	probe := corev1client.NewForConfigOrDie(as)
	testwait.For(t, 60*time.Second, "the role binding", func() bool {
		_, err := probe.ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	})

	k := newKubeAs(t, as, rc, ns, func(c *kubesandbox.Config) { c.Default.WarmPool = 1 })
	spec := acs.SandboxSpec{ID: "acs-default"}
	if _, err := k.rt.Fill(ctx, []acs.SandboxSpec{spec}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "a ready warm pod", func() bool {
		pods, _ := k.core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelPool + "=warm"})
		return len(pods.Items) == 1 && pods.Items[0].Status.Phase == "Running"
	})
	for _, id := range []string{"rbac-hit", "rbac-miss"} {
		if _, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: id, OwnerID: "u", Spec: spec, SessionKey: acs.NewSecret(32)}); err != nil {
			t.Fatalf("start %s as the provisioner: %v", id, err)
		}
		waitStatus(t, k.rt, id, acs.SandboxRunning)
	}
	if err := k.rt.Pause(ctx, "rbac-miss"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, k.rt, "rbac-miss", acs.SandboxPaused)
	if err := k.rt.Archive(ctx, "rbac-miss", io.Discard); err != nil {
		t.Fatalf("archive a paused sandbox as the provisioner: %v", err)
	}
	if _, err := k.rt.Resume(ctx, "rbac-miss", acs.NewSecret(32), nil); err != nil {
		t.Fatal(err)
	}
	k.rt.Fill(ctx, []acs.SandboxSpec{{ID: "acs-default", InitialEnv: map[string]string{"CHANGED": "1"}}}) // replaces the stale warm runtime
	for _, id := range []string{"rbac-hit", "rbac-miss"} {
		if err := k.rt.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Routing through a Gateway instead of an Ingress.
	installHTTPRouteCRD(t, rc, ns)
	gw := newKubeAs(t, as, rc, ns, func(c *kubesandbox.Config) { c.Gateway = &kubesandbox.GatewayRef{Name: "acs"} })
	if _, err := gw.rt.Start(ctx, acs.StartRequest{SandboxID: "rbac-gateway", OwnerID: "u", Spec: spec, SessionKey: acs.NewSecret(32)}); err != nil {
		t.Fatalf("start with gateway routing as the provisioner: %v", err)
	}
	if err := gw.rt.Delete(ctx, "rbac-gateway"); err != nil {
		t.Fatal(err)
	}

	var unused, ungranted []string
	for p := range granted {
		if !rec.used[p] {
			unused = append(unused, p)
		}
	}
	for p := range rec.used {
		if !granted[p] {
			ungranted = append(ungranted, p)
		}
	}
	sort.Strings(unused)
	sort.Strings(ungranted)
	if len(unused) > 0 || len(ungranted) > 0 {
		t.Fatalf("the Role grants %v that the runtime never uses, and the runtime used %v without a grant", unused, ungranted)
	}
	// Nothing beyond: other namespaces and other verbs are refused.
	if _, err := probe.Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing secrets elsewhere: %v", err)
	}
	if err := probe.PersistentVolumeClaims(ns).Delete(ctx, "anything", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting a PVC directly: %v", err)
	}
}
