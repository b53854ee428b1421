package main_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// TestReviewRoutesBadPaths: the review routes of a real `acs serve` with a
// real sandbox answer each bad path with the caller's 4xx (422 for a path
// no file can have, one leading out of the workspace, a directory or a
// FIFO; 404 for a missing file; 413 for a file over the limit, refused
// without reading it), a JSON body whose detail names the path relative to
// the workspace and never where the workspace lies on the host, and a 422
// naming a missing required parameter. 502 is left for an agent server that
// failed: git failing on a corrupt repository.
func TestReviewRoutesBadPaths(t *testing.T) {
	llm := llmtest.New(llmtest.Reply{Repeat: true, Text: "ok"})
	defer llm.Close()
	dataDir := t.TempDir()
	s := startServe(t, dataDir, llm.URL)
	tk := s.mustStart(apiKey, map[string]any{})
	conv := *tk.AppConversationID
	work := filepath.Join(lcSandboxDir(dataDir, *tk.SandboxID), "workspace")
	if _, err := os.Stat(filepath.Join(work, ".git")); err != nil {
		t.Fatalf("the workspace is not the git repository the agent server makes: %v", err)
	}
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644))
	must(os.MkdirAll(filepath.Join(work, "adir"), 0o755))
	must(os.WriteFile(filepath.Join(work, "adir", "notes.txt"), []byte("notes\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(work, "escape")))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(work, "secret-link.txt")))
	must(syscall.Mkfifo(filepath.Join(work, "fifo"), 0o644))
	big, err := os.Create(filepath.Join(work, "big.bin"))
	must(err)
	must(big.Truncate(1 << 30)) // sparse: no disk used
	must(big.Close())

	long := strings.Repeat("d/", 2500)
	invalid := func(param, msg string) string {
		b, _ := json.Marshal(map[string]any{"detail": []map[string]any{{"loc": []string{"query", param}, "msg": msg, "type": "value_error"}}})
		return string(b)
	}
	missing := func(param string) string {
		return `{"detail":[{"loc":["query","` + param + `"],"msg":"Field required","type":"missing"}]}`
	}
	file := func(p string) string { return "/file?" + url.Values{"file_path": {p}}.Encode() }
	diff := func(p string) string { return "/git/diff?" + url.Values{"path": {p}}.Encode() }
	changes := func(p string) string { return "/git/changes?" + url.Values{"path": {p}}.Encode() }
	for _, tc := range []struct {
		name   string
		route  string
		status int
		body   string // exact
	}{
		{"file", file("adir/notes.txt"), 200, `"notes\n"`},
		{"file without file_path", "/file", 422, missing("file_path")},
		{"file symlink out", file("secret-link.txt"), 422, invalid("file_path", "Value error, secret-link.txt leads outside the conversation's workspace")},
		{"file through symlinked dir", file("escape/secret.txt"), 422, invalid("file_path", "Value error, escape/secret.txt leads outside the conversation's workspace")},
		{"file absolute symlink out", file(filepath.Join(work, "secret-link.txt")), 422, invalid("file_path", "Value error, secret-link.txt leads outside the conversation's workspace")},
		{"file NUL byte", file("a\x00b.txt"), 422, invalid("file_path", `Value error, Invalid path "a\x00b.txt": contains a NUL byte`)},
		{"file 5000-byte path", file(long), 422, invalid("file_path", `Value error, Invalid path "`+long[:80]+`…": longer than 4096 bytes`)},
		{"file FIFO", file("fifo"), 422, invalid("file_path", "Value error, Not a regular file: fifo")},
		{"file 1 GiB", file("big.bin"), 413, `{"detail":"big.bin: file larger than 10485760 bytes (10 MiB, the most this route reads); download it from the agent server instead"}`},
		{"file missing", file("nope.txt"), 404, `{"detail":"File not found: nope.txt"}`},
		{"file missing below a directory", file("adir/nope.txt"), 404, `{"detail":"File not found: adir/nope.txt"}`},
		{"file directory", file("adir"), 422, invalid("file_path", "Value error, Path is a directory: adir")},
		{"file workspace", file("."), 422, invalid("file_path", "Value error, Path is a directory: .")},
		{"changes symlinked dir", changes("escape"), 422, invalid("path", "Value error, escape leads outside the conversation's workspace")},
		{"changes NUL byte", changes("a\x00b"), 422, invalid("path", `Value error, Invalid path "a\x00b": contains a NUL byte`)},
		{"changes 5000-byte path", changes(long), 422, invalid("path", `Value error, Invalid path "`+long[:80]+`…": longer than 4096 bytes`)},
		{"diff without path", "/git/diff", 422, missing("path")},
		{"diff symlink out", diff("secret-link.txt"), 422, invalid("path", "Value error, secret-link.txt leads outside the conversation's workspace")},
		{"diff NUL byte", diff("a\x00b.txt"), 422, invalid("path", `Value error, Invalid path "a\x00b.txt": contains a NUL byte`)},
		{"diff 5000-byte path", diff(long), 422, invalid("path", `Value error, Invalid path "`+long[:80]+`…": longer than 4096 bytes`)},
		{"diff FIFO", diff("fifo"), 422, invalid("path", "Value error, Not a regular file: fifo")},
		{"diff 1 GiB", diff("big.bin"), 413, `{"detail":"big.bin: file larger than 5242880 bytes"}`},
		{"diff directory", diff("adir"), 422, invalid("path", "Value error, Path is a directory: adir")},
		{"diff missing file", diff("nope.txt"), 200, `{"modified":null,"original":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *s
			s.t = t
			r := s.admin("GET", "/api/v1/app-conversations/"+conv+tc.route, nil)
			if r.status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tc.status, r.body)
			}
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || !json.Valid(r.body) {
				t.Errorf("not a JSON answer (%s): %s", r.header.Get("Content-Type"), r.body)
			}
			if string(r.body) != tc.body {
				t.Errorf("body %s\nwant %s", r.body, tc.body)
			}
			for _, abs := range []string{dataDir, outside} {
				if strings.Contains(string(r.body), abs) {
					t.Errorf("the answer names the host path %s: %s", abs, r.body)
				}
			}
		})
	}
	// Odd paths, on every review route: never a 5xx, never a host path.
	for _, p := range []string{"", ".", "..", "../..", "/", "//", "%", "~", "a/../../x", "\\", "\n", " ", "é/ü.txt",
		"adir/", "adir/..", "fifo/", "fifo/x", "big.bin/x", "escape", "escape/", "secret-link.txt/..", ".git", ".git/index",
		".git/HEAD", "nope/nope/nope", strings.Repeat("n", 255), strings.Repeat("../", 50) + "etc/passwd", work, work + "/..", outside} {
		for _, route := range []string{file(p), changes(p), diff(p)} {
			r := s.admin("GET", "/api/v1/app-conversations/"+conv+route, nil)
			if r.status >= 500 || !json.Valid(r.body) {
				t.Errorf("%s: HTTP %d: %s", route, r.status, r.body)
			}
			if r.status >= 400 && (strings.Contains(string(r.body), dataDir) || strings.Contains(string(r.body), outside)) {
				t.Errorf("%s: the answer names a host path: %s", route, r.body)
			}
		}
	}
	// The other review routes still read the FIFO's and the large file's
	// repository.
	list, err := s.api(apiKey).GitChanges(t.Context(), conv, "")
	s.ok(err, 200, "git changes")
	hasPath := func(p string) bool {
		return slices.ContainsFunc(list, func(c agentwire.GitChange) bool { return c.Path == p })
	}
	if !hasPath("big.bin") || !hasPath("adir/notes.txt") {
		t.Fatalf("git changes: %+v", list)
	}

	// Git failing on the workspace is the agent server's failure: 502, with
	// no host path in the detail.
	must(os.WriteFile(filepath.Join(work, ".git", "index"), []byte("this is not an index"), 0o644))
	r := s.admin("GET", "/api/v1/app-conversations/"+conv+"/git/changes", nil)
	if r.status != 502 || !strings.HasPrefix(string(r.body), `{"detail":"Agent server error: 500: Git failed: `) {
		t.Fatalf("git changes of a corrupt repository: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), dataDir) {
		t.Fatalf("the answer names the host path: %s", r.body)
	}
}
