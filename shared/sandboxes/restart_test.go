package sandboxes_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sandboxtest"
)

// restartEnv is a lifecycle over a real store and process sandboxes whose
// crashed agent servers are restarted after 200 ms (a crash loop after
// crashLoop crashes).
type restartEnv struct {
	store *boltstore.Store
	root  string
	rt    *procsandbox.Runtime
	life  *sandboxes.Lifecycle
}

func newRestartEnv(t *testing.T, crashLoop int) *restartEnv {
	t.Helper()
	dir := t.TempDir()
	store, err := boltstore.Open(filepath.Join(dir, "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	root := filepath.Join(dir, "sandboxes")
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root,
		RestartBackoff: 200 * time.Millisecond, CrashLoopCount: crashLoop})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	store.CreateUser(ctx, acs.User{ID: "alice"})
	cfg := sandboxes.Config{Specs: []acs.SandboxSpec{{ID: "acs-local"}}, PollInterval: 20 * time.Millisecond,
		MaxRunningSandboxes: 2}.Defaults()
	return &restartEnv{store: store, root: root, rt: rt, life: &sandboxes.Lifecycle{Store: store, Runtime: rt, Config: cfg}}
}

// ready creates a sandbox and waits until its agent server answers.
func (e *restartEnv) ready(t *testing.T, id string) acs.Sandbox {
	t.Helper()
	sb, err := e.life.Create(ctx, acs.Sandbox{ID: id, OwnerID: "alice", SpecID: "acs-local"})
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err = e.life.Ready(ctx, sb, 60*time.Second)
	if err != nil {
		t.Fatalf("sandbox %s not ready: %v", id, err)
	}
	return sb
}

func (e *restartEnv) kill(t *testing.T, id string) {
	t.Helper()
	sandboxtest.KillByPIDFile(func(id string) string { return filepath.Join(e.root, id, "agent.pid") })(t, id)
}

// refreshUntil refreshes the sandbox's record until it reads want.
func (e *restartEnv) refreshUntil(t *testing.T, id string, want acs.SandboxStatus) acs.Sandbox {
	t.Helper()
	var sb acs.Sandbox
	if !testwait.Until(30*time.Second, func() bool {
		var err error
		if sb, err = e.store.GetSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
		sb, _ = e.life.Refresh(ctx, sb)
		return sb.Status == want
	}) {
		t.Fatalf("sandbox %s reads %s (%s), want %s", id, sb.Status, sb.Detail, want)
	}
	return sb
}

// TestResumeRestartsAnErrorSandbox: Resume on an ERROR sandbox whose
// workspace exists starts it again (new key, RUNNING, its agent server
// answering); without a workspace it stays ERROR (ErrSandboxFailed naming
// it), and one the runtime no longer has is MISSING (ErrGone).
func TestResumeRestartsAnErrorSandbox(t *testing.T) {
	cases := []struct {
		name string
		// fail makes the ready sandbox ERROR (in the runtime, the record
		// or both).
		fail      func(t *testing.T, e *restartEnv, sb acs.Sandbox)
		wantErr   error
		want      acs.SandboxStatus
		wantInErr string
	}{
		{name: "crash loop", want: acs.SandboxRunning, fail: func(t *testing.T, e *restartEnv, sb acs.Sandbox) {
			e.kill(t, sb.ID) // a crash loop after one crash (CrashLoopCount 1)
			if got := e.refreshUntil(t, sb.ID, acs.SandboxError); !strings.Contains(got.Detail, "crash loop") {
				t.Fatalf("crash-loop detail %q", got.Detail)
			}
		}},
		{name: "ERROR record after a restart of acs serve", want: acs.SandboxRunning, fail: func(t *testing.T, e *restartEnv, sb acs.Sandbox) {
			// What an older acs serve left: the record ERROR, the
			// sandbox's directory without a process.
			if err := e.rt.Pause(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error {
				s.Status, s.Detail, s.AgentURL = acs.SandboxError, "agent server exited (signal: killed)", ""
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "workspace gone", wantErr: acs.ErrSandboxFailed, want: acs.SandboxError, wantInErr: "workspace is gone",
			fail: func(t *testing.T, e *restartEnv, sb acs.Sandbox) {
				if err := os.RemoveAll(sb.WorkingDir); err != nil {
					t.Fatal(err)
				}
				e.kill(t, sb.ID)
				e.refreshUntil(t, sb.ID, acs.SandboxError)
			}},
		{name: "runtime deleted it", wantErr: acs.ErrGone, want: acs.SandboxMissing, fail: func(t *testing.T, e *restartEnv, sb acs.Sandbox) {
			e.kill(t, sb.ID)
			e.refreshUntil(t, sb.ID, acs.SandboxError)
			if err := e.rt.Delete(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newRestartEnv(t, 1)
			sb := e.ready(t, "sb-restart")
			oldHash := sb.SessionKeyHash
			tc.fail(t, e, sb)
			failed, err := e.store.GetSandbox(ctx, sb.ID)
			if err != nil || failed.Status != acs.SandboxError {
				t.Fatalf("before the resume: %+v %v", failed, err)
			}
			got, err := e.life.Resume(ctx, failed)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantInErr) {
					t.Fatalf("Resume: %v, want %v containing %q", err, tc.wantErr, tc.wantInErr)
				}
				if rec, _ := e.store.GetSandbox(ctx, sb.ID); rec.Status != tc.want {
					t.Fatalf("after the refused resume the sandbox reads %s, want %s", rec.Status, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resume of an ERROR sandbox with its workspace: %v", err)
			}
			if got.Status != acs.SandboxStarting && got.Status != acs.SandboxRunning || got.Detail != "" {
				t.Fatalf("after Resume: %s %q", got.Status, got.Detail)
			}
			got, client, err := e.life.Ready(ctx, got, 60*time.Second)
			if err != nil || client.Alive(ctx) != nil {
				t.Fatalf("the resumed sandbox is not ready: %v", err)
			}
			if got.Status != tc.want || got.SessionKeyHash == "" || got.SessionKeyHash == oldHash {
				t.Fatalf("after the resume: %s, key hash %q (old %q)", got.Status, got.SessionKeyHash, oldHash)
			}
		})
	}
}

// TestReadyWaitsForCrashRestart: a message (Ready) sent right after the
// agent server crashed waits for the runtime's restart, like a transparent
// resume, instead of failing; the sandbox never reads ERROR and keeps its
// session key.
func TestReadyWaitsForCrashRestart(t *testing.T) {
	e := newRestartEnv(t, 3)
	sb := e.ready(t, "sb-crash")
	e.kill(t, sb.ID)
	got, client, err := e.life.Ready(ctx, sb, 60*time.Second)
	if err != nil {
		t.Fatalf("Ready after a crash: %v", err)
	}
	if err := client.Alive(ctx); err != nil {
		t.Fatalf("the restarted agent server: %v", err)
	}
	if got.Status != acs.SandboxRunning || got.SessionKeyHash != sb.SessionKeyHash {
		t.Fatalf("after the restart: %s, key kept %v", got.Status, got.SessionKeyHash == sb.SessionKeyHash)
	}
}
