package kubesandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/acs-project/acs/shared/acs"
)

// Labels and annotations on every object ACS makes.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "acs.dev/component"
	LabelRuntimeID = "acs.dev/runtime-id"
	LabelSandbox   = "acs.dev/sandbox" // a hash of the sandbox id (ids need not be label values)
	LabelOwner     = "acs.dev/owner"   // a hash of the owner id
	LabelSpec      = "acs.dev/spec"
	LabelPool      = "acs.dev/pool" // "warm" (unclaimed) or "claimed"
	LabelEnv       = "acs.dev/env"  // a hash of the pod's environment

	AnnotationSandboxID = "acs.dev/sandbox-id"
	AnnotationOwnerID   = "acs.dev/owner-id"
	AnnotationSpecID    = "acs.dev/spec-id"

	managedBy      = "acs"
	componentAgent = "agent-server"
	componentRoot  = "sandbox"
	componentPool  = "warm-runtime"

	// Keys of the sandbox record (the root ConfigMap).
	keyRuntimeID = "runtime-id"
	keyState     = "state" // "running" or "paused"
	keyPool      = "pool"  // "hit" or "miss"
	keySession   = "SESSION_API_KEY"

	stateRunning = "running"
	statePaused  = "paused"
)

// labelHash is a label-safe digest of an id.
func labelHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:40]
}

// directRuntimeID is the runtime id of a sandbox created without the warm
// pool: derived from its record (the sandbox id and the record's UID), so
// concurrent starts agree on it, and a sandbox id started again after a
// delete gets fresh objects rather than the old ones the garbage collector
// is still removing.
func directRuntimeID(rec *corev1.ConfigMap) string {
	return "sb-" + labelHash(rec.Annotations[AnnotationSandboxID] + "\x00" + string(rec.UID))[:20]
}

// recordName is the name of a sandbox's root ConfigMap (its record).
func recordName(sandboxID string) string { return "acs-sb-" + labelHash(sandboxID)[:20] }

// objectName is the name of a runtime's Secret, PVC, Pod, Service and
// Ingress (and of a warm runtime's root ConfigMap).
func objectName(runtimeID string) string { return "acs-" + runtimeID }

func ownedBy(cm *corev1.ConfigMap) []metav1.OwnerReference {
	// No BlockOwnerDeletion: it would need update rights on the owner's
	// finalizers where OwnerReferencesPermissionEnforcement is on.
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}
}

// runtimeLabels label a runtime's objects.
func runtimeLabels(runtimeID, specID string) map[string]string {
	return map[string]string{LabelManagedBy: managedBy, LabelRuntimeID: runtimeID, LabelSpec: labelValue(specID)}
}

// labelValue keeps a spec id usable as a label value (or hashes it).
func labelValue(s string) string {
	if len(s) <= 63 && (s == "" || labelValueRE.MatchString(s)) {
		return s
	}
	return labelHash(s)
}

// envHash digests an environment (a warm pod is claimed only for the
// environment it was started with).
func envHash(env map[string]string) string {
	keys := slices.Sorted(maps.Keys(env))
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k + "\x00" + env[k] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:40]
}

// podEnv is the environment every sandbox pod gets besides its Secret.
func podEnv(spec acs.SandboxSpec, workDir string) []corev1.EnvVar {
	env := map[string]string{}
	maps.Copy(env, spec.InitialEnv)
	env["ACS_AGENT_ADDR"] = "0.0.0.0:8000"
	env["ACS_WORKSPACE_DIR"] = workDir
	env["OH_CONVERSATIONS_PATH"] = "/data/state/conversations"
	env["OH_BASH_EVENTS_DIR"] = "/data/state/bash_events"
	env["HOME"] = "/home/acs"
	var out []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, corev1.EnvVar{Name: k, Value: env[k]})
	}
	return out
}

func workDir(spec acs.SandboxSpec) string {
	if spec.WorkingDir != "" && spec.WorkingDir[0] == '/' {
		return spec.WorkingDir
	}
	return "/workspace"
}

// secret holds the session key and the sandbox environment.
func (r *Runtime) secret(runtimeID string, labels map[string]string, owner *corev1.ConfigMap, key string, env map[string]string) *corev1.Secret {
	data := map[string][]byte{}
	for k, v := range env {
		data[k] = []byte(v)
	}
	data[keySession] = []byte(key)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(runtimeID), Namespace: r.cfg.Namespace, Labels: labels, OwnerReferences: ownedBy(owner)},
		Type:       corev1.SecretTypeOpaque, Data: data,
	}
}

func (r *Runtime) pvc(runtimeID string, labels map[string]string, owner *corev1.ConfigMap, t PodTemplate) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(runtimeID), Namespace: r.cfg.Namespace, Labels: labels, OwnerReferences: ownedBy(owner)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: t.WorkspaceSize}},
		},
	}
	if t.StorageClass != "" {
		sc := t.StorageClass
		p.Spec.StorageClassName = &sc
	}
	return p
}

func (r *Runtime) service(runtimeID string, labels map[string]string, owner *corev1.ConfigMap, t PodTemplate) *corev1.Service {
	ports := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(AgentPort)}}
	for _, p := range t.ExtraPorts {
		ports = append(ports, corev1.ServicePort{Name: p.Name, Port: p.Port, TargetPort: intstr.FromInt32(p.Port)})
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(runtimeID), Namespace: r.cfg.Namespace, Labels: labels, OwnerReferences: ownedBy(owner)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports,
			Selector: map[string]string{LabelRuntimeID: runtimeID, LabelComponent: componentAgent}},
	}
}

func (r *Runtime) ingress(runtimeID string, labels map[string]string, owner *corev1.ConfigMap, t PodTemplate) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	rule := func(host, port string) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: objectName(runtimeID), Port: networkingv1.ServiceBackendPort{Name: port}}}}}}}}
	}
	hosts := []string{r.cfg.host(runtimeID, "")}
	rules := []networkingv1.IngressRule{rule(hosts[0], "http")}
	for _, p := range t.ExtraPorts {
		h := r.cfg.host(runtimeID, p.Name)
		hosts = append(hosts, h)
		rules = append(rules, rule(h, p.Name))
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(runtimeID), Namespace: r.cfg.Namespace, Labels: labels, OwnerReferences: ownedBy(owner)},
		Spec:       networkingv1.IngressSpec{Rules: rules},
	}
	if r.cfg.IngressClassName != "" {
		c := r.cfg.IngressClassName
		ing.Spec.IngressClassName = &c
	}
	if r.cfg.TLSSecretName != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: hosts, SecretName: r.cfg.TLSSecretName}}
	}
	return ing
}

// httpRoutes are the Gateway API routes of a runtime: one per host (the
// agent server's and each extra port's), attached to the configured
// Gateway, to the runtime's Service.
func (r *Runtime) httpRoutes(runtimeID string, labels map[string]string, owner *corev1.ConfigMap, t PodTemplate) []*unstructured.Unstructured {
	route := func(name, host string, port int32) *unstructured.Unstructured {
		meta := map[string]any{"name": name, "namespace": r.cfg.Namespace, "labels": toAny(labels)}
		if refs := ownedBy(owner); len(refs) > 0 {
			ref := refs[0]
			meta["ownerReferences"] = []any{map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID)}}
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": HTTPRoutes.GroupVersion().String(), "kind": "HTTPRoute", "metadata": meta,
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"group": HTTPRoutes.Group, "kind": "Gateway",
					"namespace": r.cfg.Gateway.Namespace, "name": r.cfg.Gateway.Name}},
				"hostnames": []any{host},
				"rules": []any{map[string]any{"backendRefs": []any{map[string]any{
					"name": objectName(runtimeID), "port": int64(port)}}}},
			},
		}}
	}
	out := []*unstructured.Unstructured{route(objectName(runtimeID), r.cfg.host(runtimeID, ""), 80)}
	for _, p := range t.ExtraPorts {
		out = append(out, route(objectName(runtimeID)+"-"+p.Name, r.cfg.host(runtimeID, p.Name), p.Port))
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// pod is the agent server's pod: non-root, no privilege escalation, every
// capability dropped, seccomp RuntimeDefault, no service-account token,
// probes on /ready and /alive, the workspace and agent state on the PVC,
// the session key and environment from the Secret.
func (r *Runtime) pod(runtimeID string, labels map[string]string, owner *corev1.ConfigMap, spec acs.SandboxSpec, t PodTemplate) *corev1.Pod {
	f, tr := false, true
	uid := int64(10001)
	wd := workDir(spec)
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(AgentPort)}},
			PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 2}
	}
	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: AgentPort}}
	for _, p := range t.ExtraPorts {
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port})
	}
	podLabels := maps.Clone(labels)
	podLabels[LabelComponent] = componentAgent
	c := corev1.Container{
		Name: "agent-server", Image: t.Image, ImagePullPolicy: t.ImagePullPolicy,
		Command: spec.Command, WorkingDir: wd,
		Env:     podEnv(spec, wd),
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: objectName(runtimeID)}}}},
		Ports:   ports, Resources: t.Resources,
		ReadinessProbe: probe("/ready", 2, 3), LivenessProbe: probe("/alive", 10, 6),
		StartupProbe: probe("/alive", 1, 120),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: wd, SubPath: "workspace"},
			{Name: "data", MountPath: "/data/state", SubPath: "state"},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &f, RunAsNonRoot: &tr, RunAsUser: &uid, RunAsGroup: &uid,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(runtimeID), Namespace: r.cfg.Namespace, Labels: podLabels, OwnerReferences: ownedBy(owner)},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{c},
			RestartPolicy:                corev1.RestartPolicyAlways,
			AutomountServiceAccountToken: &f,
			EnableServiceLinks:           &f,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &tr, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectName(runtimeID)}}}},
			Tolerations:  r.cfg.Tolerations,
			NodeSelector: r.cfg.NodeSelector,
		},
	}
	if t.RuntimeClassName != "" {
		rc := t.RuntimeClassName
		p.Spec.RuntimeClassName = &rc
	}
	return p
}
