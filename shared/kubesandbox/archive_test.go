package kubesandbox_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

// A paused sandbox's archive pod has the name of the pod that was deleted
// at pause. A deletion of the old pod that comes late, by name, deletes
// the new one too, as kwok's does. The archive makes its pod again.
func TestArchiveOfAPausedSandboxOutlivesALateDelete(t *testing.T) {
	t.Parallel()
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, func(c *kubesandbox.Config) { c.ReadyTimeout = 30 * time.Second })
	spec := acs.SandboxSpec{ID: "acs-default"}
	if _, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: "late", OwnerID: "u", Spec: spec, SessionKey: acs.NewSecret(32)}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, k.rt, "late", acs.SandboxRunning)
	if err := k.rt.Pause(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, k.rt, "late", acs.SandboxPaused)

	// The late deletion: the first archive pod that appears is deleted
	// at once, without grace and without a UID precondition.
	name := "acs-" + runtimeID(st)
	dctx, cancel := context.WithCancel(ctx)
	deleted := make(chan error, 1)
	go func() {
		for dctx.Err() == nil {
			pod, err := k.core.Pods(ns).Get(dctx, name, metav1.GetOptions{})
			if err == nil && pod.DeletionTimestamp == nil {
				deleted <- k.core.Pods(ns).Delete(dctx, name, *metav1.NewDeleteOptions(0))
				return
			}
			if err != nil && !apierrors.IsNotFound(err) {
				deleted <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		deleted <- dctx.Err()
	}()
	var buf bytes.Buffer
	err := k.rt.Archive(ctx, "late", &buf)
	cancel()
	if derr := <-deleted; derr != nil {
		t.Fatalf("the late deletion did not happen: %v", derr)
	}
	if err != nil {
		t.Fatalf("archive after its pod was deleted: %v", err)
	}
	if buf.Len() == 0 {
		t.Fatal("empty archive")
	}
}
