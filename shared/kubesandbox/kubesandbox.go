// Package kubesandbox runs sandboxes as Kubernetes pods (acs.Runtime), in a
// dedicated namespace, through client-go.
//
// Each sandbox has a record: a ConfigMap named from its id (so concurrent
// starts agree on it, and creating it is the atomic "start once"). The
// record owns, through owner references, what serves the sandbox — a
// runtime: a Secret (session key and environment), a PVC (workspace and
// agent state), the agent-server Pod, a Service and an Ingress routing
// {runtime_id}{separator}{base_host} to it. Deleting the record deletes
// everything (Kubernetes' garbage collector).
//
// A runtime is created for the sandbox (a warm-pool miss) or claimed from
// the warm pool: pre-started runtimes per spec, each under its own root
// ConfigMap, claimed atomically by updating that root (labels and an owner
// reference to the sandbox record) on its resourceVersion. Fill keeps the
// pool at its size.
//
// Pause deletes the Pod and keeps everything else; Resume writes a new
// session key into the Secret and recreates the Pod.
package kubesandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
)

// Runtime implements acs.Runtime on Kubernetes.
type Runtime struct {
	cfg    Config
	core   corev1client.CoreV1Interface
	net    networkingv1client.NetworkingV1Interface
	routes dynamic.NamespaceableResourceInterface
	now    func() time.Time
}

// Clients are the API clients a runtime uses. Typed clients keep the
// binaries small; a fake clientset's CoreV1()/NetworkingV1() work too.
type Clients struct {
	Core       corev1client.CoreV1Interface
	Networking networkingv1client.NetworkingV1Interface
	// Dynamic creates Gateway API HTTPRoutes; it is needed only when
	// Config.Gateway is set.
	Dynamic dynamic.Interface
}

// HTTPRoutes is the Gateway API resource the runtime creates when
// Config.Gateway is set.
var HTTPRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

var _ acs.Runtime = (*Runtime)(nil)

// takeover is how long a sandbox record may stay without a runtime before
// another Start assumes its creator died and finishes the job.
const takeover = 30 * time.Second

// New returns a runtime using the given clients. Errors: an invalid
// Config, or a Gateway without a dynamic client.
func New(cfg Config, c Clients) (*Runtime, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, core: c.Core, net: c.Networking, now: time.Now}
	if cfg.Gateway != nil {
		if c.Dynamic == nil {
			return nil, fmt.Errorf("kubesandbox: routing through gateway %s/%s needs a dynamic client", cfg.Gateway.Namespace, cfg.Gateway.Name)
		}
		r.routes = c.Dynamic.Resource(HTTPRoutes)
	}
	return r, nil
}

// NewForConfig returns a runtime talking to the API server of rc.
func NewForConfig(cfg Config, rc *rest.Config) (*Runtime, error) {
	var c Clients
	var err error
	if c.Core, err = corev1client.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("kubesandbox: core client: %w", err)
	}
	if c.Networking, err = networkingv1client.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("kubesandbox: networking client: %w", err)
	}
	if cfg.Gateway != nil {
		if c.Dynamic, err = dynamic.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("kubesandbox: dynamic client: %w", err)
		}
	}
	return New(cfg, c)
}

// wrap turns API errors into the acs error kinds.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("kubesandbox: %s: %v: %w", what, err, acs.ErrNotFound)
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fmt.Errorf("kubesandbox: %s: %v: %w", what, err, acs.ErrConflict)
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err):
		return fmt.Errorf("kubesandbox: %s: %v: %w", what, err, acs.ErrUnavailable)
	}
	return fmt.Errorf("kubesandbox: %s: %w", what, err)
}

func (r *Runtime) record(ctx context.Context, sandboxID string) (*corev1.ConfigMap, error) {
	cm, err := r.core.ConfigMaps(r.cfg.Namespace).Get(ctx, recordName(sandboxID), metav1.GetOptions{})
	if err != nil {
		return nil, wrap("get sandbox "+sandboxID, err)
	}
	return cm, nil
}

// Start creates the sandbox's record and its runtime (from the warm pool
// when one is ready for the spec), or reports the sandbox that exists
// (keeping its session key). Errors: a spec without a pod template, API
// failures (ErrUnavailable when throttled or down: retry).
func (r *Runtime) Start(ctx context.Context, req acs.StartRequest) (acs.RuntimeStatus, error) {
	t, err := r.cfg.template(req.Spec.ID)
	if err != nil {
		return acs.RuntimeStatus{}, err
	}
	env := r.env(req.Env)
	rec := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: recordName(req.SandboxID), Namespace: r.cfg.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelComponent: componentRoot,
				LabelSandbox: labelHash(req.SandboxID), LabelOwner: labelHash(req.OwnerID), LabelSpec: labelValue(req.Spec.ID)},
			Annotations: map[string]string{AnnotationSandboxID: req.SandboxID, AnnotationOwnerID: req.OwnerID, AnnotationSpecID: req.Spec.ID}},
		Data: map[string]string{keyState: stateRunning, "spec": encodeSpec(req.Spec)},
	}
	created, err := r.core.ConfigMaps(r.cfg.Namespace).Create(ctx, rec, metav1.CreateOptions{})
	switch {
	case err == nil:
		rec = created
	case apierrors.IsAlreadyExists(err):
		if rec, err = r.record(ctx, req.SandboxID); err != nil {
			return acs.RuntimeStatus{}, err
		}
		if rec.Data[keyRuntimeID] == "" && r.now().Sub(rec.CreationTimestamp.Time) < takeover {
			return acs.RuntimeStatus{Status: acs.SandboxStarting, Detail: "being created", WorkingDir: workDir(req.Spec)}, nil
		}
	default:
		return acs.RuntimeStatus{}, wrap("create sandbox "+req.SandboxID, err)
	}
	rid := rec.Data[keyRuntimeID]
	if rid == "" {
		if rec, err = r.assign(ctx, rec, req, t, env); err != nil {
			return acs.RuntimeStatus{}, err
		}
		rid = rec.Data[keyRuntimeID]
	}
	if rid == directRuntimeID(rec) {
		labels := runtimeLabels(rid, req.Spec.ID)
		labels[LabelSandbox], labels[LabelOwner] = labelHash(req.SandboxID), labelHash(req.OwnerID)
		if err := r.createRuntime(ctx, rid, labels, rec, req.Spec, t, req.SessionKey, env); err != nil {
			return acs.RuntimeStatus{}, err
		}
	}
	return r.status(ctx, rec)
}

// assign gives the record its runtime: a claimed warm one, or a new one.
func (r *Runtime) assign(ctx context.Context, rec *corev1.ConfigMap, req acs.StartRequest, t PodTemplate, env map[string]string) (*corev1.ConfigMap, error) {
	rid, pool := directRuntimeID(rec), ""
	if t.WarmPool > 0 {
		pool = "miss"
		claimed, err := r.claim(ctx, rec, req, env)
		if err != nil {
			slog.Warn("kubesandbox: warm pool claim failed; creating a pod", "sandbox", req.SandboxID, "error", err)
		}
		if claimed != "" {
			rid, pool = claimed, "hit"
		}
	}
	rec = rec.DeepCopy()
	rec.Data[keyRuntimeID], rec.Data[keyPool] = rid, pool
	updated, err := r.core.ConfigMaps(r.cfg.Namespace).Update(ctx, rec, metav1.UpdateOptions{})
	if err == nil {
		return updated, nil
	}
	if !apierrors.IsConflict(err) {
		return nil, wrap("record the runtime of sandbox "+req.SandboxID, err)
	}
	// Another Start (a takeover) assigned it first: use theirs.
	cur, gerr := r.record(ctx, req.SandboxID)
	if gerr != nil {
		return nil, gerr
	}
	if cur.Data[keyRuntimeID] == "" {
		return nil, wrap("record the runtime of sandbox "+req.SandboxID, err)
	}
	if pool == "hit" && cur.Data[keyRuntimeID] != rid {
		r.release(ctx, rid)
	}
	return cur, nil
}

// createRuntime creates a runtime's objects, each unless it exists (so a
// retried or concurrent Start completes what another began).
func (r *Runtime) createRuntime(ctx context.Context, rid string, labels map[string]string, owner *corev1.ConfigMap, spec acs.SandboxSpec, t PodTemplate, key string, env map[string]string) error {
	ns := r.cfg.Namespace
	type step struct {
		what   string
		create func() error
	}
	steps := []step{
		{"secret", func() error {
			_, err := r.core.Secrets(ns).Create(ctx, r.secret(rid, labels, owner, key, env), metav1.CreateOptions{})
			return err
		}},
		{"persistent volume claim", func() error {
			_, err := r.core.PersistentVolumeClaims(ns).Create(ctx, r.pvc(rid, labels, owner, t), metav1.CreateOptions{})
			return err
		}},
		{"service", func() error {
			_, err := r.core.Services(ns).Create(ctx, r.service(rid, labels, owner, t), metav1.CreateOptions{})
			return err
		}},
	}
	if r.routes == nil {
		steps = append(steps, step{"ingress", func() error {
			_, err := r.net.Ingresses(ns).Create(ctx, r.ingress(rid, labels, owner, t), metav1.CreateOptions{})
			return err
		}})
	} else {
		for _, route := range r.httpRoutes(rid, labels, owner, t) {
			steps = append(steps, step{"HTTPRoute " + route.GetName(), func() error {
				_, err := r.routes.Namespace(ns).Create(ctx, route, metav1.CreateOptions{})
				return err
			}})
		}
	}
	steps = append(steps, step{"pod", func() error {
		_, err := r.core.Pods(ns).Create(ctx, r.pod(rid, labels, owner, spec, t), metav1.CreateOptions{})
		return err
	}})
	for _, s := range steps {
		if err := s.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return wrap("create the "+s.what+" of runtime "+rid, err)
		}
	}
	return nil
}

// Status reports the sandbox from its record, Pod and Secret.
func (r *Runtime) Status(ctx context.Context, id string) (acs.RuntimeStatus, error) {
	rec, err := r.record(ctx, id)
	if errors.Is(err, acs.ErrNotFound) {
		return acs.RuntimeStatus{Status: acs.SandboxMissing}, nil
	}
	if err != nil {
		return acs.RuntimeStatus{}, err
	}
	return r.status(ctx, rec)
}

func recordSpec(rec *corev1.ConfigMap) acs.SandboxSpec {
	return decodeSpec(rec.Data["spec"])
}

func (r *Runtime) status(ctx context.Context, rec *corev1.ConfigMap) (acs.RuntimeStatus, error) {
	spec := recordSpec(rec)
	st := acs.RuntimeStatus{WorkingDir: workDir(spec), WarmPool: rec.Data[keyPool]}
	rid := rec.Data[keyRuntimeID]
	if rid == "" {
		st.Status, st.Detail = acs.SandboxStarting, "being created"
		return st, nil
	}
	if rec.Data[keyState] == statePaused {
		st.Status = acs.SandboxPaused
		return st, nil
	}
	pod, err := r.core.Pods(r.cfg.Namespace).Get(ctx, objectName(rid), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if r.now().Sub(rec.CreationTimestamp.Time) < takeover {
			st.Status, st.Detail = acs.SandboxStarting, "creating the pod"
		} else {
			st.Status, st.Detail = acs.SandboxError, "the agent-server pod is gone"
		}
		return st, nil
	case err != nil:
		return acs.RuntimeStatus{}, wrap("get the pod of runtime "+rid, err)
	}
	st.Status, st.Detail = PodStatus(pod)
	if st.Status == acs.SandboxRunning {
		sec, err := r.core.Secrets(r.cfg.Namespace).Get(ctx, objectName(rid), metav1.GetOptions{})
		if err != nil {
			return acs.RuntimeStatus{}, wrap("get the secret of runtime "+rid, err)
		}
		st.SessionKey, st.AgentURL = string(sec.Data[keySession]), r.cfg.agentURL(rid)
	}
	return st, nil
}

// setState stores the record's state (paused or running).
func (r *Runtime) setState(ctx context.Context, id, state string) (*corev1.ConfigMap, error) {
	var out *corev1.ConfigMap
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rec, err := r.core.ConfigMaps(r.cfg.Namespace).Get(ctx, recordName(id), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if rec.Data[keyState] == state {
			out = rec
			return nil
		}
		rec.Data[keyState] = state
		out, err = r.core.ConfigMaps(r.cfg.Namespace).Update(ctx, rec, metav1.UpdateOptions{})
		return err
	})
	return out, wrap("set sandbox "+id+" "+state, err)
}

// Pause deletes the sandbox's Pod (its capacity is released) and keeps its
// PVC, Secret, Service and Ingress. ErrNotFound for an unknown sandbox.
func (r *Runtime) Pause(ctx context.Context, id string) error {
	rec, err := r.setState(ctx, id, statePaused)
	if err != nil {
		return err
	}
	return r.deletePod(ctx, rec.Data[keyRuntimeID])
}

func (r *Runtime) deletePod(ctx context.Context, rid string) error {
	if rid == "" {
		return nil
	}
	err := r.core.Pods(r.cfg.Namespace).Delete(ctx, objectName(rid), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return wrap("delete the pod of runtime "+rid, err)
}

// Resume stores a new session key and environment in the Secret and
// recreates the Pod (after the paused one has gone). ErrNotFound for an
// unknown sandbox.
func (r *Runtime) Resume(ctx context.Context, id, sessionKey string, env map[string]string) (acs.RuntimeStatus, error) {
	rec, err := r.record(ctx, id)
	if err != nil {
		return acs.RuntimeStatus{}, err
	}
	rid := rec.Data[keyRuntimeID]
	if rid == "" {
		return acs.RuntimeStatus{}, fmt.Errorf("kubesandbox: sandbox %s is still being created: %w", id, acs.ErrConflict)
	}
	spec := recordSpec(rec)
	t, err := r.cfg.template(spec.ID)
	if err != nil {
		return acs.RuntimeStatus{}, err
	}
	all := r.env(env)
	ns := r.cfg.Namespace
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, err := r.core.Secrets(ns).Get(ctx, objectName(rid), metav1.GetOptions{})
		if err != nil {
			return err
		}
		sec.Data = map[string][]byte{keySession: []byte(sessionKey)}
		for k, v := range all {
			sec.Data[k] = []byte(v)
		}
		_, err = r.core.Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return acs.RuntimeStatus{}, wrap("store the new session key of sandbox "+id, err)
	}
	if err := r.waitPodGone(ctx, rid); err != nil {
		return acs.RuntimeStatus{}, err
	}
	if rec, err = r.setState(ctx, id, stateRunning); err != nil {
		return acs.RuntimeStatus{}, err
	}
	owner, labels, err := r.podOwner(ctx, rec, rid)
	if err != nil {
		return acs.RuntimeStatus{}, err
	}
	if _, err := r.core.Pods(ns).Create(ctx, r.pod(rid, labels, owner, spec, t), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return acs.RuntimeStatus{}, wrap("create the pod of sandbox "+id, err)
	}
	return r.status(ctx, rec)
}

// podOwner returns the object that owns a runtime's objects (the record,
// or a claimed warm runtime's root) and the runtime's labels.
func (r *Runtime) podOwner(ctx context.Context, rec *corev1.ConfigMap, rid string) (*corev1.ConfigMap, map[string]string, error) {
	labels := runtimeLabels(rid, rec.Annotations[AnnotationSpecID])
	labels[LabelSandbox], labels[LabelOwner] = rec.Labels[LabelSandbox], rec.Labels[LabelOwner]
	if rid == directRuntimeID(rec) {
		return rec, labels, nil
	}
	root, err := r.core.ConfigMaps(r.cfg.Namespace).Get(ctx, objectName(rid), metav1.GetOptions{})
	if err != nil {
		return nil, nil, wrap("get warm runtime "+rid, err)
	}
	return root, labels, nil
}

// waitPodGone waits until a deleted pod has disappeared.
func (r *Runtime) waitPodGone(ctx context.Context, rid string) error {
	deadline := r.now().Add(r.cfg.ReadyTimeout)
	for {
		pod, err := r.core.Pods(r.cfg.Namespace).Get(ctx, objectName(rid), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrap("get the pod of runtime "+rid, err)
		}
		if pod.DeletionTimestamp == nil {
			// Still running (resumed before the pause took): delete it
			// so the new one gets the new key.
			if err := r.deletePod(ctx, rid); err != nil {
				return err
			}
		}
		if r.now().After(deadline) {
			return fmt.Errorf("kubesandbox: the old pod of runtime %s is still terminating: %w", rid, acs.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Delete deletes the sandbox's record; Kubernetes' garbage collector
// deletes what it owns (Pod, Secret, PVC, Service, Ingress, a claimed warm
// runtime). Deleting an unknown sandbox is not an error.
func (r *Runtime) Delete(ctx context.Context, id string) error {
	bg := metav1.DeletePropagationBackground
	err := r.core.ConfigMaps(r.cfg.Namespace).Delete(ctx, recordName(id), metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return wrap("delete sandbox "+id, err)
}

// Archive writes the workspace archive served by the sandbox's agent
// server. A paused sandbox gets a temporary pod (with its current session
// key) for the archive, deleted afterwards; it stays paused. ErrNotFound
// for an unknown sandbox; ErrUnavailable when no agent server became
// reachable within Config.ReadyTimeout.
func (r *Runtime) Archive(ctx context.Context, id string, w io.Writer) error {
	rec, err := r.record(ctx, id)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kubesandbox: archive %s: %w", id, err)
	}
	rid := rec.Data[keyRuntimeID]
	if rid == "" {
		return fmt.Errorf("kubesandbox: archive %s: still being created: %w", id, acs.ErrConflict)
	}
	if rec.Data[keyState] == statePaused {
		spec := recordSpec(rec)
		t, err := r.cfg.template(spec.ID)
		if err != nil {
			return err
		}
		owner, labels, err := r.podOwner(ctx, rec, rid)
		if err != nil {
			return err
		}
		if err := r.waitPodGone(ctx, rid); err != nil {
			return err
		}
		create := func() error {
			_, err := r.core.Pods(r.cfg.Namespace).Create(ctx, r.pod(rid, labels, owner, spec, t), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return wrap("create a pod to archive sandbox "+id, err)
			}
			return nil
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if cur, err := r.record(dctx, id); err == nil && cur.Data[keyState] == statePaused {
				if err := r.deletePod(dctx, rid); err != nil {
					slog.Warn("kubesandbox: delete the archive pod", "sandbox", id, "error", err)
				}
			}
		}()
		return r.fetchArchive(ctx, rid, w, create)
	}
	return r.fetchArchive(ctx, rid, w, nil)
}

// fetchArchive waits for the runtime's pod to be ready and copies its
// agent server's workspace archive to w, retrying while the route is not
// there yet (nothing written). Whenever the pod is missing and recreate is
// not nil, fetchArchive calls it to make the pod: a pod made only for the
// archive has the name of the pod it replaced, so a late deletion of that
// pod by name deletes it.
func (r *Runtime) fetchArchive(ctx context.Context, rid string, w io.Writer, recreate func() error) error {
	deadline := r.now().Add(r.cfg.ReadyTimeout)
	var last error
	for {
		pod, err := r.core.Pods(r.cfg.Namespace).Get(ctx, objectName(rid), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return wrap("get the pod of runtime "+rid, err)
		}
		if apierrors.IsNotFound(err) {
			last = fmt.Errorf("no pod")
			if recreate != nil {
				if err := recreate(); err != nil {
					return err
				}
			}
		}
		if err == nil {
			st, detail := PodStatus(pod)
			last = fmt.Errorf("pod %s: %s", st, detail)
			if st == acs.SandboxError {
				return fmt.Errorf("kubesandbox: archive runtime %s: %s", rid, detail)
			}
			if st == acs.SandboxRunning {
				sec, err := r.core.Secrets(r.cfg.Namespace).Get(ctx, objectName(rid), metav1.GetOptions{})
				if err != nil {
					return wrap("get the secret of runtime "+rid, err)
				}
				c := client.NewServiceAgent(r.cfg.agentURL(rid), string(sec.Data[keySession]), client.WithHTTPClient(r.cfg.HTTPClient))
				cw := &countingWriter{w: w}
				err = c.WorkspaceArchive(ctx, cw)
				if err == nil || cw.n > 0 || ctx.Err() != nil {
					return err
				}
				var he *client.HTTPError
				if errors.As(err, &he) && he.Status != http.StatusBadGateway && he.Status != http.StatusServiceUnavailable && he.Status != http.StatusGatewayTimeout && he.Status != http.StatusNotFound {
					return fmt.Errorf("kubesandbox: archive runtime %s: %w", rid, err)
				}
				last = err
			}
		}
		if r.now().After(deadline) {
			return fmt.Errorf("kubesandbox: archive runtime %s: no agent server within %s (%v): %w", rid, r.cfg.ReadyTimeout, last, acs.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubesandbox: archive runtime %s: %w", rid, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
