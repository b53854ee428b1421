package kubesandbox_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

func warmPoolOfOne(c *kubesandbox.Config) { c.Default.WarmPool = 1 }

// writeRecordsFixture starts the fixture's sandbox and warm runtime and
// writes their ConfigMaps to kubesandbox.RecordsFixturePath.
func writeRecordsFixture(t *testing.T) {
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, warmPoolOfOne)
	f := kubesandbox.RecordsFixture{SandboxID: "sb-fixture", Env: k.cfg.Env}
	if _, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: f.SandboxID, OwnerID: "alice", Spec: kubesandbox.FixtureSpec,
		SessionKey: acs.NewSecret(40)}); err != nil {
		t.Fatal(err)
	}
	if rep, err := k.rt.Fill(ctx, []acs.SandboxSpec{kubesandbox.FixtureSpec}); err != nil || rep.Created != 1 {
		t.Fatalf("fill: %+v, %v", rep, err)
	}
	cms, err := k.core.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelManagedBy + "=acs"})
	if err != nil {
		t.Fatal(err)
	}
	object := func(cm corev1.ConfigMap) kubesandbox.FixtureObject {
		return kubesandbox.FixtureObject{Name: cm.Name, Labels: cm.Labels, Annotations: cm.Annotations, Data: cm.Data}
	}
	for _, cm := range cms.Items {
		switch cm.Labels[kubesandbox.LabelComponent] {
		case "sandbox":
			f.Record = object(cm)
		case "warm-runtime":
			f.WarmRoot = object(cm)
		}
	}
	if f.Record.Name == "" || f.WarmRoot.Name == "" {
		t.Fatalf("no record or warm root among %d ConfigMaps", len(cms.Items))
	}
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubesandbox.RecordsFixturePath, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", kubesandbox.RecordsFixturePath)
}

// TestRecordsWrittenEarlierStillWork: the fixture's record and warm root,
// created as they are in a namespace, are a sandbox whose status shows its
// spec (working directory) and warm-pool outcome, and a warm runtime that
// Fill keeps (its pool hash still matches).
func TestRecordsWrittenEarlierStillWork(t *testing.T) {
	t.Parallel()
	if os.Getenv("ACS_UPDATE_STORE_FIXTURES") != "" {
		writeRecordsFixture(t)
	}
	f := kubesandbox.ReadRecordsFixture(t)
	rc, ns := cluster(t)
	k := newKube(t, rc, ns, func(c *kubesandbox.Config) { warmPoolOfOne(c); c.Env = f.Env })
	for _, o := range []kubesandbox.FixtureObject{f.Record, f.WarmRoot} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: ns, Labels: o.Labels, Annotations: o.Annotations},
			Data: o.Data}
		if _, err := k.core.ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := k.rt.Status(ctx, f.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != acs.SandboxStarting || st.WorkingDir != kubesandbox.FixtureSpec.WorkingDir || st.WarmPool != "miss" {
		t.Fatalf("status of the fixture's sandbox: %+v", st)
	}
	rep, err := k.rt.Fill(ctx, []acs.SandboxSpec{kubesandbox.FixtureSpec})
	if want := (acs.PoolReport{Warm: 1}); err != nil || !reflect.DeepEqual(rep, want) {
		t.Fatalf("fill over the fixture's warm runtime: %+v, %v; want %+v", rep, err, want)
	}
}
