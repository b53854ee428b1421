package agentserver_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/sandbox/agentserver"
)

// archiveNames decodes a complete gzip tar (checksum included) and returns
// its entry names, and the content of the regular files.
func archiveNames(t *testing.T, b []byte) ([]string, map[string]string) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	files := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Typeflag == tar.TypeReg {
			c, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = string(c)
		}
	}
	if _, err := io.Copy(io.Discard, gz); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names, files
}

// archiveEnv starts an agent server on cfg.
func archiveEnv(t *testing.T, cfg agentserver.Config) *env {
	t.Helper()
	return buildEnv(t, envOptions{dir: filepath.Dir(cfg.WorkspaceDir), adjust: func(c *agentserver.Config) { *c = cfg }})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWorkspaceArchive(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(t *testing.T, dir string) agentserver.Config
	}{{
		// OH_CONVERSATIONS_PATH unset: conversations and bash events
		// default inside the workspace.
		name: "default layout",
		cfg: func(t *testing.T, dir string) agentserver.Config {
			cfg, err := agentserver.ConfigFromEnv(func(k string) string {
				return map[string]string{"ACS_WORKSPACE_DIR": filepath.Join(dir, "workspace"),
					"OH_SESSION_API_KEYS_0": testKey}[k]
			})
			if err != nil {
				t.Fatal(err)
			}
			return cfg
		},
	}, {
		name: "state nested in the workspace, secrets masked",
		cfg: func(t *testing.T, dir string) agentserver.Config {
			w := filepath.Join(dir, "workspace")
			return agentserver.Config{SessionKeys: []string{testKey}, SecretKey: "oh-secret-key-for-tests", WorkspaceDir: w,
				ConversationsDir: filepath.Join(w, ".state", "conversations"), BashEventsDir: filepath.Join(w, ".state", "bash")}
		},
	}, {
		name: "workspace configured through a symbolic link",
		cfg: func(t *testing.T, dir string) agentserver.Config {
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			return agentserver.Config{SessionKeys: []string{testKey}, WorkspaceDir: filepath.Join(dir, "link", "workspace"),
				ConversationsDir: filepath.Join(dir, "real", "workspace", "conversations")}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := archiveEnv(t, tc.cfg(t, t.TempDir()))
			writeFile(t, filepath.Join(e.work, "hello.txt"), "hello")
			writeFile(t, filepath.Join(e.work, "src", "main.go"), "package main")
			// The agent's state, not the user's.
			writeFile(t, filepath.Join(e.cfg.ConversationsDir, "0123", "meta.json"), "{}")
			// A bash command puts its events in the bash-events directory.
			if r := e.call("POST", "/api/bash/execute_bash_command", map[string]any{"command": "echo hi", "timeout": 10}); r.status != 200 {
				t.Fatalf("bash: %d %s", r.status, r.body)
			}

			// Both state directories are in the workspace and not empty.
			bashDir := e.cfg.BashEventsDir
			if bashDir == "" {
				bashDir = filepath.Join(filepath.Dir(e.cfg.ConversationsDir), "bash_events")
			}
			for _, d := range []string{e.cfg.ConversationsDir, bashDir} {
				if entries, err := os.ReadDir(d); err != nil || len(entries) == 0 {
					t.Fatalf("state directory %s: %v, %d entries", d, err, len(entries))
				}
			}

			req, _ := http.NewRequest("GET", e.http.URL+"/api/workspace/archive", nil)
			req.Header.Set("X-Session-API-Key", testKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != 200 {
				t.Fatalf("archive: %d %s", res.StatusCode, body)
			}
			if ct, cd := res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"); ct != "application/gzip" || cd != `attachment; filename="workspace.tar.gz"` {
				t.Fatalf("headers: Content-Type %q, Content-Disposition %q", ct, cd)
			}
			names, files := archiveNames(t, body)
			if files["hello.txt"] != "hello" || files["src/main.go"] != "package main" {
				t.Fatalf("archive lacks the workspace's files: %q", names)
			}
			for _, n := range names {
				for _, state := range []string{"conversations", "bash_events", ".state/conversations", ".state/bash"} {
					if n == state+"/" || strings.HasPrefix(n, state+"/") {
						t.Fatalf("archive carries the agent's state: %q", names)
					}
				}
			}

			// The same through the control plane's client.
			var buf bytes.Buffer
			if err := client.NewServiceAgent(e.http.URL, testKey).WorkspaceArchive(context.Background(), &buf); err != nil {
				t.Fatal(err)
			}
			if got, _ := archiveNames(t, buf.Bytes()); strings.Join(got, ",") != strings.Join(names, ",") {
				t.Fatalf("client archive %q, want %q", got, names)
			}
		})
	}
}

func TestWorkspaceArchiveErrors(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.work, "hello.txt"), "hello")

	// The session key is required.
	for _, key := range []string{"", "wrong-key"} {
		if r := e.do("GET", "/api/workspace/archive", nil, key); r.status != http.StatusUnauthorized {
			t.Fatalf("archive with key %q: %d %s", key, r.status, r.body)
		}
		var buf bytes.Buffer
		err := client.NewServiceAgent(e.http.URL, key).WorkspaceArchive(context.Background(), &buf)
		var he *client.HTTPError
		if !errors.As(err, &he) || he.Status != http.StatusUnauthorized || he.Detail != "Unauthorized" || buf.Len() != 0 {
			t.Fatalf("client archive with key %q: %v (%d bytes)", key, err, buf.Len())
		}
	}

	// An archive failing before its first byte is a JSON error.
	if err := os.RemoveAll(e.work); err != nil {
		t.Fatal(err)
	}
	r := e.call("GET", "/api/workspace/archive", nil)
	var detail struct {
		Detail string `json:"detail"`
	}
	if r.status != http.StatusNotFound {
		t.Fatalf("archive of a missing workspace: %d %s", r.status, r.body)
	}
	r.json(t, &detail)
	if detail.Detail != "Workspace not found" {
		t.Fatalf("detail %q", detail.Detail)
	}
	var buf bytes.Buffer
	err := client.NewServiceAgent(e.http.URL, testKey).WorkspaceArchive(context.Background(), &buf)
	var he *client.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusNotFound || buf.Len() != 0 {
		t.Fatalf("client archive of a missing workspace: %v", err)
	}
}

// truncateOnWrite truncates a file at its first write, making the server's
// archive fail midway.
type truncateOnWrite struct {
	path string
	buf  bytes.Buffer
	err  error
}

func (w *truncateOnWrite) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		w.err = os.Truncate(w.path, 0)
	}
	return w.buf.Write(p)
}

// An archive failing midway breaks the transfer off: the client gets an
// error, never a short archive that looks complete.
func TestWorkspaceArchiveAbortedMidway(t *testing.T) {
	e := newEnv(t)
	big := filepath.Join(e.work, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range 64 {
		rand.Read(chunk) // incompressible: the archive streams as the file is read
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	w := &truncateOnWrite{path: big}
	err = client.NewServiceAgent(e.http.URL, testKey).WorkspaceArchive(context.Background(), w)
	if w.err != nil {
		t.Fatal(w.err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("archive failing midway: %v (%d bytes), want io.ErrUnexpectedEOF", err, w.buf.Len())
	}
	if w.buf.Len() == 0 {
		t.Fatal("nothing was streamed before the failure")
	}
	gz, err := gzip.NewReader(&w.buf)
	if err == nil {
		_, err = io.Copy(io.Discard, gz)
	}
	if err == nil {
		t.Fatal("the broken transfer holds a complete gzip stream")
	}
}

// The client's timeout bounds the wait for the answer's headers, not the
// transfer.
func TestWorkspaceArchiveClientTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Session-API-Key") == "hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		w.WriteHeader(200)
		w.Write([]byte("slow"))
		w.(http.Flusher).Flush()
		time.Sleep(1500 * time.Millisecond) // legitimate: simulates a download slower than the header timeout
		w.Write([]byte(" body"))
	}))
	defer srv.Close()
	defer close(release)

	// Long enough for headers on a loaded machine (100 ms was not, in
	// CI), shorter than the slow body.
	c := client.NewServiceAgent(srv.URL, "hang", client.WithHTTPClient(&http.Client{Timeout: time.Second}))
	var buf bytes.Buffer
	if err := c.WorkspaceArchive(context.Background(), &buf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no answer: %v, want context.DeadlineExceeded", err)
	}
	c = client.NewServiceAgent(srv.URL, testKey, client.WithHTTPClient(&http.Client{Timeout: time.Second}))
	if err := c.WorkspaceArchive(context.Background(), &buf); err != nil || buf.String() != "slow body" {
		t.Fatalf("slow transfer: %v %q", err, buf.String())
	}
}
