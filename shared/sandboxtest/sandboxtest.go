// Package sandboxtest is the conformance suite every acs.Runtime adapter
// passes.
package sandboxtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
)

// Options tune the suite to what an adapter's environment allows.
type Options struct {
	// AgentReachable means the suite can call the agent server at AgentURL
	// (true for process sandboxes; false where pods are simulated).
	AgentReachable bool
	// Spec is the sandbox spec to start.
	Spec acs.SandboxSpec
	// Timeout bounds waiting for RUNNING.
	Timeout time.Duration
	// WriteFile, when set, puts a file into a sandbox's workspace and
	// ReadFile reads it back, to check that pause keeps the workspace and
	// that Archive holds the file.
	WriteFile func(t *testing.T, st acs.RuntimeStatus, name, content string)
	ReadFile  func(t *testing.T, st acs.RuntimeStatus, name string) (string, error)
	// KillAgent, when set, SIGKILLs the agent server of sandbox id (as an
	// OOM kill does) and returns once the process is gone, to check the
	// restart rule: the runtime restarts the agent server by itself, after
	// at least RestartBackoff (doubled per crash), with the same session
	// key, the sandbox reading STARTING meanwhile and never ERROR;
	// CrashLoopCount (default 3) crashes in a row make it ERROR; Resume
	// starts an ERROR sandbox afresh (new key, crash count cleared).
	KillAgent      func(t *testing.T, id string)
	RestartBackoff time.Duration
	CrashLoopCount int
	// RemoveWorkspace, with KillAgent, deletes a sandbox's workspace: the
	// agent server's next exit makes the sandbox ERROR, and Resume fails.
	RemoveWorkspace func(t *testing.T, st acs.RuntimeStatus)
}

// Run runs the suite against rt.
func Run(t *testing.T, rt acs.Runtime, opts Options) {
	ctx := context.Background()
	if opts.Timeout == 0 {
		opts.Timeout = 60 * time.Second
	}
	waitFor := func(t *testing.T, id string, want acs.SandboxStatus) acs.RuntimeStatus {
		t.Helper()
		deadline := time.Now().Add(opts.Timeout)
		var st acs.RuntimeStatus
		for time.Now().Before(deadline) {
			var err error
			st, err = rt.Status(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status == want {
				return st
			}
			if st.Status == acs.SandboxError && want != acs.SandboxError {
				t.Fatalf("sandbox %s failed: %s", id, st.Detail)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("sandbox %s never reached %s (last %s %s)", id, want, st.Status, st.Detail)
		return st
	}
	alive := func(t *testing.T, st acs.RuntimeStatus, key string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", st.AgentURL+"/api/conversations/count", nil)
		req.Header.Set("X-Session-API-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	id := func(t *testing.T) string { return fmt.Sprintf("sbt%x", time.Now().UnixNano()) }

	t.Run("UnknownIsMissing", func(t *testing.T) {
		st, err := rt.Status(ctx, "never-created")
		if err != nil || st.Status != acs.SandboxMissing {
			t.Fatalf("%+v %v", st, err)
		}
		if err := rt.Pause(ctx, "never-created"); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("pause unknown: %v", err)
		}
		if _, err := rt.Resume(ctx, "never-created", "k", nil); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("resume unknown: %v", err)
		}
		if err := rt.Delete(ctx, "never-created"); err != nil {
			t.Fatalf("delete unknown: %v", err)
		}
	})

	t.Run("Lifecycle", func(t *testing.T) {
		sid := id(t)
		key := acs.NewSecret(32)
		st, err := rt.Start(ctx, acs.StartRequest{SandboxID: sid, OwnerID: "u1", Spec: opts.Spec, SessionKey: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Delete(ctx, sid) })
		if st.Status != acs.SandboxStarting && st.Status != acs.SandboxRunning {
			t.Fatalf("after start: %+v", st)
		}
		running := waitFor(t, sid, acs.SandboxRunning)
		if running.SessionKey != key || running.AgentURL == "" {
			t.Fatalf("running status %+v", running)
		}
		// Starting again is idempotent: same sandbox, same key.
		again, err := rt.Start(ctx, acs.StartRequest{SandboxID: sid, OwnerID: "u1", Spec: opts.Spec, SessionKey: "another"})
		if err != nil || again.SessionKey != key {
			t.Fatalf("second start changed the sandbox: %+v %v", again, err)
		}
		if opts.AgentReachable {
			if code := alive(t, running, key); code != 200 {
				t.Fatalf("agent server with its key: %d", code)
			}
			if code := alive(t, running, "wrong"); code != 401 {
				t.Fatalf("agent server with a wrong key: %d", code)
			}
		}
		if opts.WriteFile != nil {
			opts.WriteFile(t, running, "kept.txt", "survives pause")
		}

		if err := rt.Pause(ctx, sid); err != nil {
			t.Fatal(err)
		}
		paused := waitFor(t, sid, acs.SandboxPaused)
		if opts.AgentReachable && alive(t, running, key) != 0 {
			t.Fatal("agent server still answers after pause")
		}
		if err := rt.Pause(ctx, sid); err != nil {
			t.Fatalf("pausing a paused sandbox: %v", err)
		}
		_ = paused

		newKey := acs.NewSecret(32)
		if _, err := rt.Resume(ctx, sid, newKey, nil); err != nil {
			t.Fatal(err)
		}
		resumed := waitFor(t, sid, acs.SandboxRunning)
		if resumed.SessionKey != newKey {
			t.Fatal("resume must use the new session key")
		}
		if opts.AgentReachable {
			if code := alive(t, resumed, newKey); code != 200 {
				t.Fatalf("resumed agent server with the new key: %d", code)
			}
			if code := alive(t, resumed, key); code != 401 {
				t.Fatalf("old key still works after resume: %d", code)
			}
		}
		if opts.ReadFile != nil {
			got, err := opts.ReadFile(t, resumed, "kept.txt")
			if err != nil || got != "survives pause" {
				t.Fatalf("workspace after pause/resume: %q %v", got, err)
			}
		}

		if err := rt.Delete(ctx, sid); err != nil {
			t.Fatal(err)
		}
		waitFor(t, sid, acs.SandboxMissing)
		if err := rt.Delete(ctx, sid); err != nil {
			t.Fatalf("second delete: %v", err)
		}
	})

	t.Run("Archive", func(t *testing.T) {
		if err := rt.Archive(ctx, "never-created", io.Discard); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("archive unknown: %v, want ErrNotFound", err)
		}
		sid := id(t)
		t.Cleanup(func() { rt.Delete(ctx, sid) })
		if _, err := rt.Start(ctx, acs.StartRequest{SandboxID: sid, OwnerID: "u1", Spec: opts.Spec, SessionKey: acs.NewSecret(32)}); err != nil {
			t.Fatal(err)
		}
		running := waitFor(t, sid, acs.SandboxRunning)
		const name, content = "archived.txt", "in the archive\n"
		if opts.WriteFile != nil {
			opts.WriteFile(t, running, name, content)
		}
		check := func(t *testing.T, when string) {
			t.Helper()
			var buf bytes.Buffer
			if err := rt.Archive(ctx, sid, &buf); err != nil {
				t.Fatalf("archive %s: %v", when, err)
			}
			files, err := untar(&buf)
			if err != nil {
				t.Fatalf("archive %s: %v", when, err)
			}
			if opts.WriteFile == nil {
				return
			}
			got, ok := files[name]
			if !ok {
				t.Fatalf("archive %s lacks %s (has %d files)", when, name, len(files))
			}
			if got != content {
				t.Fatalf("archive %s: %s holds %q, want %q", when, name, got, content)
			}
		}
		check(t, "while running")

		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if err := rt.Archive(canceled, sid, io.Discard); err == nil {
			t.Fatal("archive with a canceled context succeeded")
		}

		if err := rt.Pause(ctx, sid); err != nil {
			t.Fatal(err)
		}
		waitFor(t, sid, acs.SandboxPaused)
		check(t, "while paused")

		if err := rt.Delete(ctx, sid); err != nil {
			t.Fatal(err)
		}
		waitFor(t, sid, acs.SandboxMissing)
		if err := rt.Archive(ctx, sid, io.Discard); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("archive deleted: %v, want ErrNotFound", err)
		}
	})

	if opts.KillAgent != nil {
		t.Run("RestartAfterCrash", func(t *testing.T) {
			restartAfterCrash(t, rt, opts, waitFor, alive, id(t))
		})
	}

	t.Run("ConcurrentStartsMakeOneSandbox", func(t *testing.T) {
		sid := id(t)
		t.Cleanup(func() { rt.Delete(ctx, sid) })
		keys := make(chan string, 8)
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			go func(i int) {
				st, err := rt.Start(ctx, acs.StartRequest{SandboxID: sid, OwnerID: "u1", Spec: opts.Spec, SessionKey: fmt.Sprint("key-", i)})
				errs <- err
				keys <- st.SessionKey
			}(i)
		}
		for i := 0; i < 8; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		running := waitFor(t, sid, acs.SandboxRunning)
		if opts.AgentReachable && alive(t, running, running.SessionKey) != 200 {
			t.Fatal("the one sandbox does not answer with its key")
		}
	})
}

// restartAfterCrash checks the restart rule (Options.KillAgent).
func restartAfterCrash(t *testing.T, rt acs.Runtime, opts Options,
	waitFor func(*testing.T, string, acs.SandboxStatus) acs.RuntimeStatus,
	alive func(*testing.T, acs.RuntimeStatus, string) int, sid string) {
	ctx := context.Background()
	loop := opts.CrashLoopCount
	if loop == 0 {
		loop = 3
	}
	key := acs.NewSecret(32)
	if _, err := rt.Start(ctx, acs.StartRequest{SandboxID: sid, OwnerID: "u1", Spec: opts.Spec, SessionKey: key}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Delete(ctx, sid) })
	running := waitFor(t, sid, acs.SandboxRunning)
	if opts.WriteFile != nil {
		opts.WriteFile(t, running, "before-crash.txt", "kept across crashes")
	}
	// crash kills the agent server and waits until the runtime has noticed
	// (the sandbox leaves RUNNING for want; when want is STARTING, a
	// restart already done, RUNNING at another address, counts too).
	crash := func(t *testing.T, want acs.SandboxStatus) acs.RuntimeStatus {
		t.Helper()
		before, err := rt.Status(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		opts.KillAgent(t, sid)
		deadline := time.Now().Add(opts.Timeout)
		for time.Now().Before(deadline) {
			st, err := rt.Status(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status == want || want == acs.SandboxStarting && st.Status == acs.SandboxRunning && st.AgentURL != before.AgentURL {
				return st
			}
			if st.Status != acs.SandboxRunning {
				t.Fatalf("after the agent server was killed the sandbox reads %s (%s), want %s", st.Status, st.Detail, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("the killed agent server was not noticed (want %s)", want)
		return acs.RuntimeStatus{}
	}
	// restarted expects the runtime to bring the agent server back by
	// itself, with key, no sooner than backoff after killedAt.
	restarted := func(t *testing.T, killedAt time.Time, backoff time.Duration, key string) acs.RuntimeStatus {
		t.Helper()
		back := waitFor(t, sid, acs.SandboxRunning)
		if took := time.Since(killedAt); took < backoff {
			t.Fatalf("restarted %s after the crash, sooner than the back-off %s", took, backoff)
		}
		if back.SessionKey != key {
			t.Fatal("the restarted agent server does not keep the session key")
		}
		if opts.AgentReachable {
			if code := alive(t, back, key); code != 200 {
				t.Fatalf("restarted agent server with its key: %d", code)
			}
		}
		return back
	}

	// Crashes short of a loop: restarted with a doubling back-off.
	backoff := opts.RestartBackoff
	for i := 1; i < loop; i++ {
		killedAt := time.Now()
		st := crash(t, acs.SandboxStarting)
		if st.Status == acs.SandboxStarting && st.Detail == "" {
			t.Fatal("a sandbox restarting after a crash has no detail")
		}
		restarted(t, killedAt, backoff, key)
		backoff *= 2
	}
	// The crash that makes a loop: ERROR, with a detail saying so.
	failed := crash(t, acs.SandboxError)
	if !strings.Contains(failed.Detail, "crash loop") || !strings.Contains(failed.Detail, fmt.Sprint(loop)) {
		t.Fatalf("crash-loop detail %q does not say so", failed.Detail)
	}
	if st, err := rt.Status(ctx, sid); err != nil || st.Status != acs.SandboxError {
		t.Fatalf("after a crash loop: %+v %v", st, err)
	}

	// Resume starts it afresh: new key, workspace kept, crash count
	// cleared (one more crash is restarted again).
	newKey := acs.NewSecret(32)
	if _, err := rt.Resume(ctx, sid, newKey, nil); err != nil {
		t.Fatalf("resume after a crash loop: %v", err)
	}
	resumed := waitFor(t, sid, acs.SandboxRunning)
	if resumed.SessionKey != newKey {
		t.Fatal("resume after a crash loop must use the new session key")
	}
	if opts.AgentReachable {
		if code := alive(t, resumed, newKey); code != 200 {
			t.Fatalf("resumed agent server with the new key: %d", code)
		}
	}
	if opts.ReadFile != nil {
		if got, err := opts.ReadFile(t, resumed, "before-crash.txt"); err != nil || got != "kept across crashes" {
			t.Fatalf("workspace after the crashes: %q %v", got, err)
		}
	}
	killedAt := time.Now()
	crash(t, acs.SandboxStarting)
	back := restarted(t, killedAt, opts.RestartBackoff, newKey)

	// A workspace that is gone: the next exit is ERROR, and stays so.
	if opts.RemoveWorkspace == nil {
		return
	}
	opts.RemoveWorkspace(t, back)
	gone := crash(t, acs.SandboxError)
	if !strings.Contains(gone.Detail, "workspace") {
		t.Fatalf("detail %q does not name the missing workspace", gone.Detail)
	}
	if _, err := rt.Resume(ctx, sid, acs.NewSecret(32), nil); err == nil || errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("resume without a workspace: %v, want an error other than not found", err)
	}
	if st, err := rt.Status(ctx, sid); err != nil || st.Status != acs.SandboxError {
		t.Fatalf("after resuming without a workspace: %+v %v", st, err)
	}
}

// KillByPIDFile is an Options.KillAgent for agent servers that are local
// processes: SIGKILL of the pid in pidFile(id) (the agent server alone, as
// the OOM killer does), then a wait until the process is reaped.
func KillByPIDFile(pidFile func(id string) string) func(t *testing.T, id string) {
	return func(t *testing.T, id string) {
		t.Helper()
		b, err := os.ReadFile(pidFile(id))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Fatalf("pid file %q", b)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the agent server %d: %v", pid, err)
		}
		testwait.For(t, 20*time.Second, fmt.Sprintf("the killed agent server %d to be reaped", pid), func() bool {
			return syscall.Kill(pid, 0) != nil
		})
	}
}

// LocalOptions are the Options for sandboxes that run as local processes
// under root, as procsandbox runs them (directly or behind the runtime
// API): the agent server is reachable, its pid is in root/<id>/agent.pid,
// files live in the sandbox's working directory, and a crashed agent
// server is restarted after restartBackoff.
func LocalOptions(root string, restartBackoff time.Duration) Options {
	return Options{
		AgentReachable:  true,
		Spec:            acs.SandboxSpec{ID: "acs-local"},
		KillAgent:       KillByPIDFile(func(id string) string { return filepath.Join(root, id, "agent.pid") }),
		RestartBackoff:  restartBackoff,
		RemoveWorkspace: RemoveWorkingDir,
		WriteFile: func(t *testing.T, st acs.RuntimeStatus, name, content string) {
			if err := os.WriteFile(filepath.Join(st.WorkingDir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		ReadFile: func(t *testing.T, st acs.RuntimeStatus, name string) (string, error) {
			b, err := os.ReadFile(filepath.Join(st.WorkingDir, name))
			return string(b), err
		},
	}
}

// RemoveWorkingDir is an Options.RemoveWorkspace for workspaces on this
// machine: it deletes st.WorkingDir.
func RemoveWorkingDir(t *testing.T, st acs.RuntimeStatus) {
	t.Helper()
	if st.WorkingDir == "" {
		t.Fatal("no working directory")
	}
	if err := os.RemoveAll(st.WorkingDir); err != nil {
		t.Fatal(err)
	}
}

// untar reads a gzip-compressed tar and returns its regular files by name
// (relative to the workspace, a leading "./" dropped). Names that are
// absolute or climb out with ".." are errors.
func untar(r io.Reader) (map[string]string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a tar: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("entry %q is outside the workspace", hdr.Name)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", hdr.Name, err)
		}
		files[name] = string(b)
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return files, nil
}
