package kubesandbox

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/acs-project/acs/shared/acs"
)

// poolHash digests what a warm runtime was started with (its spec and
// environment): only a runtime started as a new one would be is claimed.
func poolHash(spec acs.SandboxSpec, env map[string]string) string {
	all := maps.Clone(env)
	if all == nil {
		all = map[string]string{}
	}
	all["\x00spec"] = encodeSpec(spec)
	return envHash(all)
}

// env is the sandbox environment: Config.Env with extra over it (a new map).
func (r *Runtime) env(extra map[string]string) map[string]string {
	env := map[string]string{}
	maps.Copy(env, r.cfg.Env)
	maps.Copy(env, extra)
	return env
}

// claim takes a warm runtime for the sandbox of rec: ready ones first,
// then the oldest. The claim is an update of the warm runtime's root on
// its resourceVersion, so two starts never claim the same one. It returns
// "" when none could be claimed.
func (r *Runtime) claim(ctx context.Context, rec *corev1.ConfigMap, req acs.StartRequest, env map[string]string) (string, error) {
	ns := r.cfg.Namespace
	sel := labels.Set{LabelManagedBy: managedBy, LabelComponent: componentPool, LabelPool: "warm",
		LabelSpec: labelValue(req.Spec.ID), LabelEnv: poolHash(req.Spec, env)}.AsSelector().String()
	roots, err := r.core.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(roots.Items) == 0 {
		return "", wrap("list the warm pool", err)
	}
	ready := map[string]bool{}
	pods, err := r.core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelManagedBy: managedBy,
		LabelComponent: componentAgent, LabelPool: "warm", LabelSpec: labelValue(req.Spec.ID)}.AsSelector().String()})
	if err != nil {
		return "", wrap("list the warm pool's pods", err)
	}
	for _, p := range pods.Items {
		if st, _ := PodStatus(&p); st == acs.SandboxRunning {
			ready[p.Labels[LabelRuntimeID]] = true
		} else if st == acs.SandboxError {
			ready[p.Labels[LabelRuntimeID]] = false
		}
	}
	cands := roots.Items
	sort.SliceStable(cands, func(i, j int) bool {
		ri, rj := ready[cands[i].Labels[LabelRuntimeID]], ready[cands[j].Labels[LabelRuntimeID]]
		if ri != rj {
			return ri
		}
		return cands[i].CreationTimestamp.Before(&cands[j].CreationTimestamp)
	})
	for _, root := range cands {
		rid := root.Labels[LabelRuntimeID]
		if ok, seen := ready[rid]; seen && !ok {
			continue // failed: Fill replaces it
		}
		c := root.DeepCopy()
		c.Labels[LabelPool], c.Labels[LabelSandbox], c.Labels[LabelOwner] = "claimed", rec.Labels[LabelSandbox], rec.Labels[LabelOwner]
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[AnnotationSandboxID], c.Annotations[AnnotationOwnerID] = req.SandboxID, req.OwnerID
		c.OwnerReferences = ownedBy(rec)
		if _, err := r.core.ConfigMaps(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue // another start took it
			}
			return "", wrap("claim warm runtime "+rid, err)
		}
		r.relabelPod(ctx, rid, func(l map[string]string) {
			l[LabelPool], l[LabelSandbox], l[LabelOwner] = "claimed", rec.Labels[LabelSandbox], rec.Labels[LabelOwner]
		})
		return rid, nil
	}
	return "", nil
}

// relabelPod updates a pod's labels (best effort: labels are for people
// and policies; the record is the truth).
func (r *Runtime) relabelPod(ctx context.Context, rid string, fn func(map[string]string)) {
	pods := r.core.Pods(r.cfg.Namespace)
	for range 3 {
		p, err := pods.Get(ctx, objectName(rid), metav1.GetOptions{})
		if err != nil {
			return
		}
		fn(p.Labels)
		if _, err = pods.Update(ctx, p, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return
		}
	}
}

// release returns a claimed warm runtime that lost a race to the pool.
func (r *Runtime) release(ctx context.Context, rid string) {
	cms := r.core.ConfigMaps(r.cfg.Namespace)
	for range 3 {
		root, err := cms.Get(ctx, objectName(rid), metav1.GetOptions{})
		if err != nil {
			return
		}
		root.Labels[LabelPool] = "warm"
		delete(root.Labels, LabelSandbox)
		delete(root.Labels, LabelOwner)
		delete(root.Annotations, AnnotationSandboxID)
		delete(root.Annotations, AnnotationOwnerID)
		root.OwnerReferences = nil
		if _, err = cms.Update(ctx, root, metav1.UpdateOptions{}); err == nil {
			r.relabelPod(ctx, rid, func(l map[string]string) {
				l[LabelPool] = "warm"
				delete(l, LabelSandbox)
				delete(l, LabelOwner)
			})
			return
		}
		if !apierrors.IsConflict(err) {
			slog.Warn("kubesandbox: release a warm runtime", "runtime", rid, "error", err)
			return
		}
	}
}

// Fill keeps each spec's warm pool at its template's size: it starts the
// missing runtimes and removes failed ones and ones started with an
// outdated spec or environment. Specs without a template, or whose
// template has no warm pool, get none (and lose any they had).
func (r *Runtime) Fill(ctx context.Context, specs []acs.SandboxSpec) (acs.PoolReport, error) {
	var rep acs.PoolReport
	ns := r.cfg.Namespace
	env := r.env(nil)
	for _, spec := range specs {
		t, err := r.cfg.template(spec.ID)
		want := t.WarmPool
		if err != nil {
			want = 0
		}
		sel := labels.Set{LabelManagedBy: managedBy, LabelComponent: componentPool, LabelPool: "warm", LabelSpec: labelValue(spec.ID)}.AsSelector().String()
		roots, err := r.core.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return rep, wrap("list the warm pool of "+spec.ID, err)
		}
		hash := poolHash(spec, env)
		have := 0
		for _, root := range roots.Items {
			rid := root.Labels[LabelRuntimeID]
			bad := root.Labels[LabelEnv] != hash || have >= want
			if !bad {
				if p, err := r.core.Pods(ns).Get(ctx, objectName(rid), metav1.GetOptions{}); err == nil {
					st, _ := PodStatus(p)
					bad = st == acs.SandboxError
				} else if apierrors.IsNotFound(err) {
					bad = r.now().Sub(root.CreationTimestamp.Time) > takeover
				}
			}
			if bad {
				if r.removeWarm(ctx, root) {
					rep.Removed++
				}
				continue
			}
			have++
		}
		for ; have < want; have++ {
			if err := r.startWarm(ctx, spec, t, env, hash); err != nil {
				return rep, err
			}
			rep.Created++
		}
		rep.Warm += have
	}
	return rep, nil
}

// removeWarm deletes an unclaimed warm runtime, unless it was claimed
// meanwhile (the delete is conditioned on the root's resourceVersion).
func (r *Runtime) removeWarm(ctx context.Context, root corev1.ConfigMap) bool {
	bg := metav1.DeletePropagationBackground
	rv := root.ResourceVersion
	err := r.core.ConfigMaps(r.cfg.Namespace).Delete(ctx, root.Name, metav1.DeleteOptions{PropagationPolicy: &bg,
		Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		slog.Warn("kubesandbox: remove a warm runtime", "runtime", root.Name, "error", err)
	}
	return err == nil
}

func (r *Runtime) startWarm(ctx context.Context, spec acs.SandboxSpec, t PodTemplate, env map[string]string, hash string) error {
	rid := "wp-" + acs.NewID()[:20]
	lbl := runtimeLabels(rid, spec.ID)
	lbl[LabelPool], lbl[LabelEnv] = "warm", hash
	rootLabels := maps.Clone(lbl)
	rootLabels[LabelComponent] = componentPool
	root, err := r.core.ConfigMaps(r.cfg.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(rid), Namespace: r.cfg.Namespace, Labels: rootLabels,
			Annotations: map[string]string{AnnotationSpecID: spec.ID}},
		Data: map[string]string{"spec": encodeSpec(spec)},
	}, metav1.CreateOptions{})
	if err != nil {
		return wrap("create warm runtime for "+spec.ID, err)
	}
	if err := r.createRuntime(ctx, rid, lbl, root, spec, t, acs.NewSecret(40), env); err != nil {
		return fmt.Errorf("start warm runtime for %s: %w", spec.ID, err)
	}
	return nil
}
