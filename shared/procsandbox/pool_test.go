package procsandbox_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/procsandbox"
)

// TestWarmPool: with Warm 1, a new sandbox of the pool's spec and
// environment gets the pre-started agent server (hit) and the pool is
// refilled in the background; a start with another environment is started
// cold (miss). A claimed sandbox is a sandbox like any other: its agent
// server answers with the key its status gives, its workspace holds files
// and is archived, it pauses, resumes and is deleted with what it was made
// from. A runtime started again on the same root removes the members left
// unclaimed and keeps the claimed sandboxes (PAUSED).
func TestWarmPool(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	spec := acs.SandboxSpec{ID: "acs-local", InitialEnv: map[string]string{"FROM_SPEC": "1"}}
	env := map[string]string{"OH_WEBHOOKS_0_BASE_URL": "http://127.0.0.1:9/hooks"}
	cfg := procsandbox.Config{Binary: testbin.ACS(t), Root: root, Warm: 1, WarmEnv: env}
	rt, err := procsandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			rt.Close()
		}
	})
	rep, err := rt.Fill(ctx, []acs.SandboxSpec{spec})
	if err != nil || rep.Created != 1 || rep.Warm != 1 {
		t.Fatalf("first fill: %+v %v", rep, err)
	}
	running := func(id string) acs.RuntimeStatus {
		t.Helper()
		var st acs.RuntimeStatus
		if !testwait.Until(20*time.Second, func() bool { st, _ = rt.Status(ctx, id); return st.Status == acs.SandboxRunning }) {
			t.Fatalf("sandbox %s not RUNNING: %+v", id, st)
		}
		return st
	}
	alive := func(st acs.RuntimeStatus, key string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", st.AgentURL+"/api/conversations/count", nil)
		req.Header.Set("X-Session-API-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	// A hit: the warm agent server, its key, the sandbox's paths.
	st, err := rt.Start(ctx, acs.StartRequest{SandboxID: "sbhit1", OwnerID: "u1", Spec: spec, SessionKey: "ignored-for-a-hit", Env: env})
	if err != nil || st.WarmPool != "hit" {
		t.Fatalf("start with the pool's spec and environment: %+v %v; want a hit", st, err)
	}
	hit := running("sbhit1")
	if hit.WarmPool != "hit" || hit.WorkingDir != filepath.Join(root, "sbhit1", "workspace") {
		t.Fatalf("claimed sandbox's status %+v", hit)
	}
	if code := alive(hit, hit.SessionKey); code != 200 {
		t.Fatalf("the claimed agent server with its status's key: %d", code)
	}
	if code := alive(hit, "ignored-for-a-hit"); code != 401 {
		t.Fatalf("the claimed agent server with another key: %d", code)
	}
	if err := os.WriteFile(filepath.Join(hit.WorkingDir, "notes.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	var arch bytes.Buffer
	if err := rt.Archive(ctx, "sbhit1", &arch); err != nil || arch.Len() == 0 {
		t.Fatalf("archive of a claimed sandbox: %d bytes, %v", arch.Len(), err)
	}

	// The pool refills in the background: the next start is a hit too.
	if !testwait.Until(20*time.Second, func() bool {
		r, err := rt.Fill(ctx, []acs.SandboxSpec{spec})
		return err == nil && r.Warm == 1
	}) {
		t.Fatal("the pool was not refilled")
	}
	if st, err := rt.Start(ctx, acs.StartRequest{SandboxID: "sbhit2", OwnerID: "u1", Spec: spec, SessionKey: "k2", Env: env}); err != nil || st.WarmPool != "hit" {
		t.Fatalf("second start: %+v %v; want a hit", st, err)
	}
	running("sbhit2")

	// Another environment: started cold, with the request's key.
	other := map[string]string{"OH_WEBHOOKS_0_BASE_URL": "http://127.0.0.1:9/elsewhere"}
	if st, err := rt.Start(ctx, acs.StartRequest{SandboxID: "sbmiss", OwnerID: "u1", Spec: spec, SessionKey: "k-miss", Env: other}); err != nil || st.WarmPool != "miss" {
		t.Fatalf("start with another environment: %+v %v; want a miss", st, err)
	}
	if miss := running("sbmiss"); miss.SessionKey != "k-miss" || miss.WorkingDir != filepath.Join(root, "sbmiss", "workspace") {
		t.Fatalf("cold sandbox's status %+v", miss)
	}

	// Pause and resume keep the workspace; the new key is the sandbox's.
	if err := rt.Pause(ctx, "sbhit1"); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.Status(ctx, "sbhit1"); st.Status != acs.SandboxPaused {
		t.Fatalf("after pause: %+v", st)
	}
	if _, err := rt.Resume(ctx, "sbhit1", "k-resumed", nil); err != nil {
		t.Fatal(err)
	}
	resumed := running("sbhit1")
	if code := alive(resumed, "k-resumed"); code != 200 {
		t.Fatalf("resumed claimed sandbox with its new key: %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(resumed.WorkingDir, "notes.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("workspace after resume: %q %v", b, err)
	}

	// Delete removes the sandbox and the directory it was made from.
	target, err := os.Readlink(filepath.Join(root, "sbhit1"))
	if err != nil {
		t.Fatalf("a claimed sandbox is a link to its warm directory: %v", err)
	}
	if err := rt.Delete(ctx, "sbhit1"); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.Status(ctx, "sbhit1"); st.Status != acs.SandboxMissing {
		t.Fatalf("after delete: %+v", st)
	}
	for _, p := range []string{filepath.Join(root, "sbhit1"), filepath.Join(root, filepath.Base(target))} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left after delete: %v", p, err)
		}
	}

	// A new runtime on the root: unclaimed members go, claimed sandboxes stay.
	rt.Close()
	closed = true
	rt2, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt2.Close)
	if n := unclaimed(t, root); n != 0 {
		t.Fatalf("%d unclaimed warm directories left by the previous runtime", n)
	}
	if st, _ := rt2.Status(ctx, "sbhit2"); st.Status != acs.SandboxPaused {
		t.Fatalf("claimed sandbox after a restart: %+v", st)
	}
	if _, err := rt2.Resume(ctx, "sbhit2", "k-after-restart", nil); err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(20*time.Second, func() bool { st, _ := rt2.Status(ctx, "sbhit2"); return st.Status == acs.SandboxRunning }) {
		t.Fatal("claimed sandbox did not resume after a restart")
	}

	// Without a pool: no warm member, and starts say nothing of one.
	if rep, err := rt2.Fill(ctx, []acs.SandboxSpec{spec}); err != nil || rep != (acs.PoolReport{}) {
		t.Fatalf("fill without a pool: %+v %v", rep, err)
	}
	if st, err := rt2.Start(ctx, acs.StartRequest{SandboxID: "sbnopool", OwnerID: "u1", Spec: spec, SessionKey: "k", Env: env}); err != nil || st.WarmPool != "" {
		t.Fatalf("start without a pool: %+v %v", st, err)
	}
}

// unclaimed counts the warm directories under root that no sandbox claimed.
func unclaimed(t *testing.T, root string) int {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, "warm-*"))
	n := 0
	for _, d := range dirs {
		var m struct {
			ID string `json:"id"`
		}
		raw, err := os.ReadFile(filepath.Join(d, "sandbox.json"))
		if err != nil || json.Unmarshal(raw, &m) != nil || strings.HasPrefix(m.ID, "warm-") {
			n++
		}
	}
	return n
}
