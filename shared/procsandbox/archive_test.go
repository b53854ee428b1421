package procsandbox_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/internal/wsarchive/wsarchivetest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/procsandbox"
)

// pausedSandbox starts a sandbox, pauses it and returns the runtime and its
// workspace.
func pausedSandbox(t *testing.T, id string) (*procsandbox.Runtime, string) {
	t.Helper()
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	ctx := context.Background()
	if _, err := rt.Start(ctx, acs.StartRequest{SandboxID: id, SessionKey: "k"}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Pause(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := rt.Status(ctx, id)
	if err != nil || st.Status != acs.SandboxPaused {
		t.Fatalf("after pause: %+v %v", st, err)
	}
	return rt, st.WorkingDir
}

// Only the workspace is archived (its contents and format are wsarchive's,
// tested there): not the sandbox's home nor the agent server's state.
func TestArchiveWorkspaceOnly(t *testing.T) {
	rt, work := pausedSandbox(t, "archive-contents")
	sandboxDir := filepath.Dir(work)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(work, "dir"), 0o755))
	must(os.WriteFile(filepath.Join(work, "dir", "top.txt"), []byte("top"), 0o644))
	must(os.WriteFile(filepath.Join(sandboxDir, "home", "dotfile"), []byte("home"), 0o600))
	must(os.MkdirAll(filepath.Join(sandboxDir, "state", "conversations"), 0o700))
	must(os.WriteFile(filepath.Join(sandboxDir, "state", "conversations", "c.json"), []byte("state"), 0o600))

	var buf bytes.Buffer
	must(rt.Archive(context.Background(), "archive-contents", &buf))
	got, order := wsarchivetest.Read(t, buf.Bytes())
	if len(got) != 2 || got["dir/"].Typ != tar.TypeDir || got["dir/top.txt"].Content != "top" {
		t.Fatalf("archive holds %q, want the workspace's dir/ and dir/top.txt", order)
	}
}

// A running sandbox's workspace archives too, and the archive never has an
// entry for the workspace itself.
func TestArchiveRunning(t *testing.T) {
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	ctx := context.Background()
	const id = "archive-running"
	if _, err := rt.Start(ctx, acs.StartRequest{SandboxID: id, SessionKey: "k"}); err != nil {
		t.Fatal(err)
	}
	var st acs.RuntimeStatus
	testwait.Until(30*time.Second, func() bool {
		st, err = rt.Status(ctx, id)
		return err != nil || st.Status != acs.SandboxStarting
	})
	if st.Status != acs.SandboxRunning {
		t.Fatalf("sandbox did not start: %+v %v", st, err)
	}
	if err := os.WriteFile(filepath.Join(st.WorkingDir, "live.txt"), []byte("live"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rt.Archive(ctx, id, &buf); err != nil {
		t.Fatal(err)
	}
	got, _ := wsarchivetest.Read(t, buf.Bytes())
	if got["live.txt"].Content != "live" {
		t.Fatalf("archive of a running sandbox: %v", got)
	}
	for _, root := range []string{"", ".", "./", "/"} {
		if _, ok := got[root]; ok {
			t.Fatalf("archive has an entry %q for the workspace", root)
		}
	}
}

func TestArchiveUnknown(t *testing.T) {
	rt, err := procsandbox.New(procsandbox.Config{Binary: "unused", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"never-created", "", "../escape", "a/b", "."} {
		var buf bytes.Buffer
		if err := rt.Archive(context.Background(), id, &buf); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("archive %q: %v, want ErrNotFound", id, err)
		}
		if buf.Len() != 0 {
			t.Fatalf("archive %q wrote %d bytes", id, buf.Len())
		}
	}
}

func fillWorkspace(t *testing.T, work string, files, size int) {
	t.Helper()
	for i := range files {
		b := make([]byte, size)
		rand.Read(b) // incompressible: gzip writes as it goes
		if err := os.WriteFile(filepath.Join(work, fmt.Sprintf("f%03d.bin", i)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// hookWriter runs hook before its first write.
type hookWriter struct {
	hook func()
	n    int
}

func (h *hookWriter) Write(p []byte) (int, error) {
	if h.n == 0 && h.hook != nil {
		h.hook()
	}
	h.n += len(p)
	return len(p), nil
}

// Errors of the archive itself reach the caller wrapped (the cases are
// wsarchive's, tested there).
func TestArchiveCanceled(t *testing.T) {
	rt, work := pausedSandbox(t, "archive-cancel")
	fillWorkspace(t, work, 16, 256<<10)
	ctx, cancel := context.WithCancel(context.Background())
	w := &hookWriter{hook: cancel}
	if err := rt.Archive(ctx, "archive-cancel", w); !errors.Is(err, context.Canceled) {
		t.Fatalf("archive canceled midway: %v, want context.Canceled", err)
	}
	if w.n >= 16*256<<10 {
		t.Fatalf("archive went on after cancellation (%d bytes)", w.n)
	}
	// Already canceled: nothing written, and the sandbox is still found.
	w = &hookWriter{}
	if err := rt.Archive(ctx, "archive-cancel", w); !errors.Is(err, context.Canceled) || errors.Is(err, acs.ErrNotFound) || w.n != 0 {
		t.Fatalf("archive with a canceled context: %v (%d bytes)", err, w.n)
	}
}

// A sandbox deleted while it is archived is not found, rather than an
// archive missing its files.
func TestArchiveDeletedMidway(t *testing.T) {
	rt, work := pausedSandbox(t, "archive-deleted")
	fillWorkspace(t, work, 16, 256<<10)
	w := &hookWriter{hook: func() {
		if err := rt.Delete(context.Background(), "archive-deleted"); err != nil {
			t.Error(err)
		}
	}}
	if err := rt.Archive(context.Background(), "archive-deleted", w); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("archive of a sandbox deleted midway: %v, want ErrNotFound", err)
	}
}
