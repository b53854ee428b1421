package agentserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// badPathWorkspace fills the workspace of e with the inputs a client gets
// wrong: symbolic links leading out of it (to outside), a FIFO, a sparse
// 1 GiB file (no real disk use), a directory and a plain file.
func badPathWorkspace(t *testing.T, work, outside string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644))
	must(os.MkdirAll(filepath.Join(work, "adir"), 0o755))
	must(os.WriteFile(filepath.Join(work, "notes.txt"), []byte("notes\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(work, "escape")))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(work, "secret-link.txt")))
	must(syscall.Mkfifo(filepath.Join(work, "fifo"), 0o644))
	big, err := os.Create(filepath.Join(work, "big.bin"))
	must(err)
	must(big.Truncate(1 << 30))
	must(big.Close())
}

// TestFileAndGitRoutesRefuseBadPathsAs4xx: the agent server's file and git
// routes answer every bad path with the client error it is (422 for a path
// no file can have, 403 outside the workspace, 404 missing, 400 a directory
// or a FIFO, 413 too large to diff), a JSON body, a detail naming the path
// relative to the workspace and never its absolute location; a FIFO never
// blocks a handler and a 1 GiB file is streamed, not read into memory.
// Missing required query parameters are 422 "missing" on every route.
func TestFileAndGitRoutesRefuseBadPathsAs4xx(t *testing.T) {
	e := newEnv(t)
	conv := e.create(nil) // makes the workspace a git repository
	outside := t.TempDir()
	badPathWorkspace(t, e.work, outside)
	ws := func(p string) string { return filepath.Join(e.work, p) }
	long := e.work + "/" + strings.Repeat("d/", 2500)
	longName := ws(strings.Repeat("n", 300))
	nul := ws("a\x00b.txt")
	const forbidden = `{"detail":"Path is outside the workspace"}`
	invalid := func(reason string) string {
		return `{"detail":[{"loc":["query","path"],"msg":"Value error, Invalid path: ` + reason + `","type":"value_error"}]}`
	}
	missing := func(name string) string {
		return `{"detail":[{"loc":["query","` + name + `"],"msg":"Field required","type":"missing"}]}`
	}
	q := func(route, p string) string { return route + "?" + url.Values{"path": {p}}.Encode() }
	for _, tc := range []struct {
		name   string
		target string
		status int
		body   string // exact, when set
	}{
		{"download without path", "/api/file/download", 422, missing("path")},
		{"download symlink out", q("/api/file/download", ws("secret-link.txt")), 403, forbidden},
		{"download through symlinked dir", q("/api/file/download", ws("escape/secret.txt")), 403, forbidden},
		{"download NUL byte", q("/api/file/download", nul), 422, invalid("contains a NUL byte")},
		{"download 5000-byte path", q("/api/file/download", long), 422, invalid("longer than 4096 bytes")},
		{"download 300-byte name", q("/api/file/download", longName), 422, invalid("a name is longer than 255 bytes")},
		{"download FIFO", q("/api/file/download", ws("fifo")), 400, `{"detail":"Not a regular file: fifo"}`},
		{"download missing file", q("/api/file/download", ws("nope.txt")), 404, `{"detail":"File not found: nope.txt"}`},
		{"download below a file", q("/api/file/download", ws("notes.txt/x")), 404, `{"detail":"File not found: notes.txt/x"}`},
		{"download directory", q("/api/file/download", ws("adir")), 400, `{"detail":"Path is a directory: adir"}`},
		{"download workspace", q("/api/file/download", e.work), 400, `{"detail":"Path is a directory: ."}`},
		{"download legacy missing", "/api/file/download" + (&url.URL{Path: ws("nope.txt")}).EscapedPath(), 404, `{"detail":"File not found: nope.txt"}`},
		{"changes without path", "/api/git/changes", 422, missing("path")},
		{"changes symlinked dir", q("/api/git/changes", ws("escape")), 403, forbidden},
		{"changes NUL byte", q("/api/git/changes", nul), 422, invalid("contains a NUL byte")},
		{"changes 5000-byte path", q("/api/git/changes", long), 422, invalid("longer than 4096 bytes")},
		{"diff without path", "/api/git/diff", 422, missing("path")},
		{"diff symlink out", q("/api/git/diff", ws("secret-link.txt")), 403, forbidden},
		{"diff NUL byte", q("/api/git/diff", nul), 422, invalid("contains a NUL byte")},
		{"diff 5000-byte path", q("/api/git/diff", long), 422, invalid("longer than 4096 bytes")},
		{"diff 300-byte name", q("/api/git/diff", longName), 422, invalid("a name is longer than 255 bytes")},
		{"diff FIFO", q("/api/git/diff", ws("fifo")), 400, `{"detail":"Not a regular file: fifo"}`},
		{"diff 1 GiB file", q("/api/git/diff", ws("big.bin")), 413, `{"detail":"big.bin: file larger than 5242880 bytes"}`},
		{"diff directory", q("/api/git/diff", ws("adir")), 400, `{"detail":"Path is a directory: adir"}`},
		{"diff missing file", q("/api/git/diff", ws("nope.txt")), 200, `{"modified":null,"original":null}`},
		{"changes FIFO", q("/api/git/changes", ws("fifo")), 200, ""},
		{"batch conversations without ids", "/api/conversations", 422, missing("ids")},
		{"batch events without event_ids", "/api/conversations/" + conv + "/events", 422, missing("event_ids")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("GET", tc.target, nil)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.body != "" && string(r.body) != tc.body {
				t.Errorf("body %s\nwant %s", r.body, tc.body)
			}
			if !json.Valid(r.body) {
				t.Errorf("body is not JSON: %s", r.body)
			}
			if r.status >= 400 {
				for _, abs := range []string{e.work, e.dir, outside} {
					if strings.Contains(string(r.body), abs) {
						t.Errorf("the detail names the absolute path %s: %s", abs, r.body)
					}
				}
			}
		})
	}

	// The 1 GiB file is streamed: its download answers at once with its
	// size (X-File-Size: the secret masking drops Content-Length), and the
	// client stops reading after the header.
	req, _ := http.NewRequest("GET", e.http.URL+q("/api/file/download", ws("big.bin")), nil)
	req.Header.Set("X-Session-API-Key", testKey)
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("X-File-Size") != "1073741824" {
		t.Fatalf("1 GiB download: %d, X-File-Size %q", res.StatusCode, res.Header.Get("X-File-Size"))
	}
	// The event batch still works with ids, in the query or the body.
	if r := e.call("GET", "/api/conversations/"+conv+"/events?event_ids=nope", nil); r.status != 200 || string(r.body) != "[null]" {
		t.Fatalf("event batch with ids: %d %s", r.status, r.body)
	}
	if r := e.call("GET", "/api/conversations/"+conv+"/events", []string{"nope"}); r.status != 200 || string(r.body) != "[null]" {
		t.Fatalf("event batch with a body: %d %s", r.status, r.body)
	}
}

// TestGitFailureIsAServerError: git failing on the workspace (here a corrupt
// index) is the agent server's failure, 500, not the client's, and its
// detail still names no absolute path.
func TestGitFailureIsAServerError(t *testing.T) {
	e := newEnv(t)
	e.create(nil)
	if err := os.WriteFile(filepath.Join(e.work, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.work, ".git", "index"), []byte("this is not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.call("GET", "/api/git/changes?"+url.Values{"path": {e.work}}.Encode(), nil)
	if r.status != 500 || !json.Valid(r.body) || !strings.Contains(string(r.body), `"detail":"Git failed: `) {
		t.Fatalf("changes on a corrupt repository: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), e.dir) {
		t.Fatalf("the detail names the absolute path: %s", r.body)
	}
}
