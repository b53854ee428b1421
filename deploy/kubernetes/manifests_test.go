package kubernetes_test

// Parses every manifest in this directory strictly into the Kubernetes API
// types (an unknown or misspelt field fails) and checks what ACS relies on.

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const (
	namespace  = "acs-sandboxes"
	policyName = "acs-sandbox-egress"
)

// agentPod is the label set of a sandbox pod as shared/kubesandbox makes it.
var agentPod = labels.Set{
	"app.kubernetes.io/managed-by": "acs",
	"acs.dev/component":            "agent-server",
	"acs.dev/runtime-id":           "sb-0123456789abcdef0123",
	"acs.dev/pool":                 "claimed",
}

// object is one decoded manifest document.
type object struct {
	file string
	doc  int // 1-based document number in the file
	kind string
	obj  any // a pointer to the typed API object
}

func (o object) String() string { return fmt.Sprintf("%s (document %d, %s)", o.file, o.doc, o.kind) }

// The kinds a manifest here may have, each with its apiVersion and type. A new
// kind needs a line here, so that it too is decoded strictly.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Namespace":          {"v1", func() any { return new(corev1.Namespace) }},
	"ServiceAccount":     {"v1", func() any { return new(corev1.ServiceAccount) }},
	"NetworkPolicy":      {"networking.k8s.io/v1", func() any { return new(networkingv1.NetworkPolicy) }},
	"Role":               {"rbac.authorization.k8s.io/v1", func() any { return new(rbacv1.Role) }},
	"RoleBinding":        {"rbac.authorization.k8s.io/v1", func() any { return new(rbacv1.RoleBinding) }},
	"ClusterRole":        {"rbac.authorization.k8s.io/v1", func() any { return new(rbacv1.ClusterRole) }},
	"ClusterRoleBinding": {"rbac.authorization.k8s.io/v1", func() any { return new(rbacv1.ClusterRoleBinding) }},
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeFile splits a YAML file into documents and decodes each strictly.
func decodeFile(name string, data []byte) ([]object, error) {
	var out []object
	for i, doc := range docSep.Split(string(data), -1) {
		if empty(doc) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s document %d: %v", name, i+1, err)
		}
		k, ok := kinds[tm.Kind]
		if !ok {
			return nil, fmt.Errorf("%s document %d: kind %q is not one this test knows: add it to kinds", name, i+1, tm.Kind)
		}
		if tm.APIVersion != k.apiVersion {
			return nil, fmt.Errorf("%s document %d: %s has apiVersion %q, want %q", name, i+1, tm.Kind, tm.APIVersion, k.apiVersion)
		}
		obj := k.new()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s document %d (%s): %v", name, i+1, tm.Kind, err)
		}
		out = append(out, object{file: name, doc: i + 1, kind: tm.Kind, obj: obj})
	}
	return out, nil
}

// empty reports whether a YAML document has only comments and blank lines.
func empty(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// manifests are the *.yaml files here but kustomization.yaml.
func manifests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	return files
}

func loadAll(t *testing.T) []object {
	t.Helper()
	var all []object
	for _, f := range manifests(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeFile(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Errorf("%s has no object", f)
		}
		all = append(all, objs...)
	}
	return all
}

func find[T any](t *testing.T, all []object, name string) *T {
	t.Helper()
	for _, o := range all {
		if p, ok := o.obj.(*T); ok && objectMeta(o.obj).Name == name {
			return p
		}
	}
	var zero T
	t.Fatalf("no %T named %q in the manifests", zero, name)
	return nil
}

func objectMeta(obj any) *metav1.ObjectMeta {
	return obj.(interface{ GetObjectMeta() metav1.Object }).GetObjectMeta().(*metav1.ObjectMeta)
}

func TestManifestsDecodeStrictly(t *testing.T) {
	all := loadAll(t)
	for _, o := range all {
		m := objectMeta(o.obj)
		if m.Name == "" {
			t.Errorf("%s has no metadata.name", o)
		}
		switch o.kind {
		case "Namespace", "ClusterRole", "ClusterRoleBinding":
		default:
			// Explicit, since the kustomization sets no namespace.
			if m.Namespace != namespace {
				t.Errorf("%s %s: metadata.namespace is %q, want %q", o, m.Name, m.Namespace, namespace)
			}
		}
	}
}

// The strict decoding must reject what a typo produces.
func TestDecodeRejectsBadManifests(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"unknown field", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  lables: {a: b}\n", "unknown field"},
		{"misplaced field", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: x}\nspec:\n  podSelector: {}\n  egress:\n    - to: [{ipBlock: {cidr: 0.0.0.0/0}}]\n      protocol: UDP\n", "unknown field"},
		{"duplicate key", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  name: y\n", "duplicate"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "not one this test knows"},
		{"wrong apiVersion", "apiVersion: networking.k8s.io/v1beta1\nkind: NetworkPolicy\nmetadata: {name: x}\n", "want \"networking.k8s.io/v1\""},
		{"wrong type", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [x]\n", "cannot unmarshal"},
	} {
		_, err := decodeFile(c.name, []byte("# a comment\n---\n"+c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error mentioning %q, got %v", c.name, c.want, err)
		}
	}
}

func TestNamespaceEnforcesRestricted(t *testing.T) {
	ns := find[corev1.Namespace](t, loadAll(t), namespace)
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s: pod-security.kubernetes.io/enforce is %q, want restricted", namespace, got)
	}
}

func TestNetworkPolicy(t *testing.T) {
	np := find[networkingv1.NetworkPolicy](t, loadAll(t), policyName)
	spec := np.Spec

	t.Run("selects the agent-server pods", func(t *testing.T) {
		sel, err := metav1.LabelSelectorAsSelector(&spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(agentPod) {
			t.Errorf("podSelector %q does not select a sandbox pod %v", sel, agentPod)
		}
		for _, k := range []string{"app.kubernetes.io/managed-by", "acs.dev/component"} {
			other := labels.Merge(agentPod, nil)
			delete(other, k)
			if sel.Matches(other) {
				t.Errorf("podSelector %q also selects pods without %s: want both labels required", sel, k)
			}
		}
	})

	t.Run("policy types", func(t *testing.T) {
		for _, want := range []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress} {
			if !slices.Contains(spec.PolicyTypes, want) {
				t.Errorf("policyTypes %v lacks %s", spec.PolicyTypes, want)
			}
		}
	})

	t.Run("metadata endpoint in an except", func(t *testing.T) {
		var excepts []string
		for _, r := range spec.Egress {
			for _, p := range r.To {
				if p.IPBlock != nil {
					excepts = append(excepts, p.IPBlock.Except...)
				}
			}
		}
		for _, ip := range []string{"169.254.169.254", "fd00:ec2::254"} {
			a := netip.MustParseAddr(ip)
			if !slices.ContainsFunc(excepts, func(c string) bool { return netip.MustParsePrefix(c).Contains(a) }) {
				t.Errorf("no egress ipBlock excepts %s (the instance metadata service); excepts: %v", ip, excepts)
			}
		}
	})

	t.Run("egress", func(t *testing.T) {
		for _, c := range []struct {
			ip    string
			proto corev1.Protocol
			port  int32
			allow bool
			why   string
		}{
			{"169.254.169.254", "TCP", 80, false, "EC2 instance metadata"},
			{"169.254.169.254", "TCP", 443, false, "EC2 instance metadata"},
			{"169.254.170.2", "TCP", 80, false, "ECS task metadata"},
			{"fd00:ec2::254", "TCP", 80, false, "EC2 instance metadata over IPv6"},
			{"10.244.3.7", "TCP", 8000, false, "another sandbox (pod CIDR)"},
			{"10.244.3.7", "TCP", 443, false, "another pod on 443 (pod CIDR)"},
			{"10.96.0.1", "TCP", 443, false, "the API server's service IP"},
			{"93.184.215.14", "TCP", 443, true, "the internet over HTTPS"},
			{"93.184.215.14", "TCP", 22, true, "git over SSH"},
			{"2606:4700::6810:84e5", "TCP", 443, true, "the internet over IPv6"},
		} {
			if got := egressAllowsIP(spec.Egress, c.ip, c.proto, c.port); got != c.allow {
				t.Errorf("egress to %s %s/%d (%s): allowed %v, want %v", c.ip, c.proto, c.port, c.why, got, c.allow)
			}
		}
	})

	t.Run("DNS", func(t *testing.T) {
		kubeSystem := labels.Set{"kubernetes.io/metadata.name": "kube-system"}
		coreDNS := labels.Set{"k8s-app": "kube-dns"}
		for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
			if !egressAllowsPod(t, spec.Egress, kubeSystem, coreDNS, proto, 53) {
				t.Errorf("egress to CoreDNS (kube-system, k8s-app=kube-dns) on %s/53 is not allowed", proto)
			}
		}
		if egressAllowsPod(t, spec.Egress, labels.Set{"kubernetes.io/metadata.name": namespace}, agentPod, corev1.ProtocolTCP, 8000) {
			t.Errorf("egress to another sandbox pod (by selector) is allowed")
		}
	})

	t.Run("ingress", func(t *testing.T) {
		if len(spec.Ingress) == 0 {
			t.Fatal("no ingress rule: the ingress controller could not reach the sandboxes")
		}
		for i, r := range spec.Ingress {
			if len(r.From) == 0 {
				t.Errorf("ingress rule %d has no from: it admits every source", i)
			}
			for _, p := range r.From {
				switch {
				case p.IPBlock != nil:
					if pfx := netip.MustParsePrefix(p.IPBlock.CIDR); pfx.Bits() == 0 {
						t.Errorf("ingress rule %d admits %s: every address", i, pfx)
					}
				case p.NamespaceSelector != nil:
					if len(p.NamespaceSelector.MatchLabels) == 0 && len(p.NamespaceSelector.MatchExpressions) == 0 {
						t.Errorf("ingress rule %d admits every namespace", i)
					}
				case p.PodSelector != nil:
					t.Errorf("ingress rule %d admits pods of the sandbox namespace (other sandboxes)", i)
				}
			}
		}
		ingressNS := labels.Set{"kubernetes.io/metadata.name": "ingress-nginx"}
		admitted := slices.ContainsFunc(spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
			return slices.ContainsFunc(r.From, func(p networkingv1.NetworkPolicyPeer) bool {
				if p.NamespaceSelector == nil || p.PodSelector != nil {
					return false
				}
				sel, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
				return err == nil && sel.Matches(ingressNS)
			})
		})
		if !admitted {
			t.Errorf("no ingress rule admits the ingress controller's namespace")
		}
	})
}

// portMatches reports whether the rule's ports admit proto/port (no ports:
// every port).
func portMatches(ports []networkingv1.NetworkPolicyPort, proto corev1.Protocol, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		lo := p.Port.IntVal // named ports do not apply to ipBlock peers
		hi := lo
		if p.EndPort != nil {
			hi = *p.EndPort
		}
		if port >= lo && port <= hi {
			return true
		}
	}
	return false
}

// egressAllowsIP evaluates the egress rules for a destination outside the
// cluster's pods: only ipBlock peers can match it.
func egressAllowsIP(rules []networkingv1.NetworkPolicyEgressRule, ip string, proto corev1.Protocol, port int32) bool {
	a := netip.MustParseAddr(ip)
	for _, r := range rules {
		if !portMatches(r.Ports, proto, port) {
			continue
		}
		if len(r.To) == 0 {
			return true
		}
		for _, p := range r.To {
			if p.IPBlock == nil || !netip.MustParsePrefix(p.IPBlock.CIDR).Contains(a) {
				continue
			}
			if !slices.ContainsFunc(p.IPBlock.Except, func(c string) bool { return netip.MustParsePrefix(c).Contains(a) }) {
				return true
			}
		}
	}
	return false
}

// egressAllowsPod evaluates the egress rules for a pod, by its namespace's
// and its own labels (ipBlock peers are ignored: pod IPs are placeholders).
func egressAllowsPod(t *testing.T, rules []networkingv1.NetworkPolicyEgressRule, nsLabels, podLabels labels.Set, proto corev1.Protocol, port int32) bool {
	t.Helper()
	matches := func(s *metav1.LabelSelector, l labels.Set) bool {
		if s == nil {
			return true
		}
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel.Matches(l)
	}
	for _, r := range rules {
		if !portMatches(r.Ports, proto, port) {
			continue
		}
		if len(r.To) == 0 {
			return true
		}
		for _, p := range r.To {
			if p.IPBlock != nil {
				continue
			}
			// A podSelector alone selects pods in the policy's namespace.
			if p.NamespaceSelector == nil && nsLabels["kubernetes.io/metadata.name"] != namespace {
				continue
			}
			if matches(p.NamespaceSelector, nsLabels) && matches(p.PodSelector, podLabels) {
				return true
			}
		}
	}
	return false
}

// kustomization is the part of kustomize's Kustomization this base uses;
// decoded strictly, so a field this test does not know fails.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels,omitempty"`
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: apiVersion %q kind %q", k.APIVersion, k.Kind)
	}
	for _, l := range k.Labels {
		if l.IncludeSelectors {
			t.Errorf("kustomization.yaml: labels %v with includeSelectors would change the NetworkPolicy's podSelector", l.Pairs)
		}
	}
	listed := slices.Clone(k.Resources)
	sort.Strings(listed)
	if len(slices.Compact(slices.Clone(listed))) != len(listed) {
		t.Errorf("kustomization.yaml lists a resource twice: %v", k.Resources)
	}
	files := manifests(t)
	for _, f := range files {
		if !slices.Contains(listed, f) {
			t.Errorf("kustomization.yaml does not list %s", f)
		}
	}
	for _, r := range listed {
		if slices.Contains(files, r) {
			continue
		}
		if r == "rbac.yaml" {
			t.Logf("kustomization.yaml lists rbac.yaml, which does not exist yet")
			continue
		}
		t.Errorf("kustomization.yaml lists %s, which is not a manifest in deploy/kubernetes", r)
	}
	if !slices.Contains(listed, "rbac.yaml") {
		t.Errorf("kustomization.yaml does not list rbac.yaml")
	}
}

// TestRBAC checks rbac.yaml once it exists: a RoleBinding in the sandbox
// namespace grants a Role defined there to the group the provisioner's IAM
// role is mapped to by its EKS access entry.
func TestRBAC(t *testing.T) {
	data, err := os.ReadFile("rbac.yaml")
	if os.IsNotExist(err) {
		t.Skip("rbac.yaml does not exist yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeFile("rbac.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]bool{}
	for _, o := range objs {
		if r, ok := o.obj.(*rbacv1.Role); ok {
			roles[r.Name] = true
		}
		if o.kind == "ClusterRoleBinding" {
			t.Errorf("%s: the provisioner needs no cluster-wide rights", o)
		}
	}
	bound := false
	for _, o := range objs {
		rb, ok := o.obj.(*rbacv1.RoleBinding)
		if !ok {
			continue
		}
		group := slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.GroupKind && s.Name == "acs:provisioner"
		})
		if !group {
			continue
		}
		bound = true
		if rb.RoleRef.Kind != "Role" || !roles[rb.RoleRef.Name] {
			t.Errorf("RoleBinding %s: roleRef %s %q is not a Role in rbac.yaml", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name)
		}
	}
	if !bound {
		t.Errorf("rbac.yaml: no RoleBinding grants a Role to the group acs:provisioner")
	}
}
