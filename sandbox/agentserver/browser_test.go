package agentserver_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

const frontend = "http://127.0.0.1:3000"

// newBrowserEnv is an agent server that lets the origins call it from a
// browser (OH_ALLOW_CORS_ORIGINS_n).
func newBrowserEnv(t *testing.T, origins ...string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), llm: llmtest.New()}
	t.Cleanup(e.llm.Close)
	e.work = filepath.Join(e.dir, "workspace")
	e.cfg = agentserver.Config{SessionKeys: []string{testKey}, ConversationsDir: filepath.Join(e.dir, "conversations"),
		WorkspaceDir: e.work, CORSOrigins: origins, BuildSHA: "unknown", BuildRef: "unknown"}
	e.start()
	return e
}

// browserRequest sends what a browser would: the Origin and, for a
// preflight, the method and headers it asks for.
func browserRequest(t *testing.T, e *env, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, e.http.URL+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestCORSLetsTheFrontendsOriginIn: a preflight from an allowed origin (or
// the same loopback port under another name) is answered 204 with the
// methods and the headers the frontend sends (X-Session-API-Key among
// them); the actual answers carry Access-Control-Allow-Origin. Another
// origin gets no CORS header, so its browser refuses the answer.
func TestCORSLetsTheFrontendsOriginIn(t *testing.T) {
	e := newBrowserEnv(t, frontend)
	id := e.create(nil)
	preflight := func(origin, method string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "content-type,x-session-api-key"}
	}
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		status             int
		allowOrigin        string
	}{
		{"preflight pause", "OPTIONS", "/api/conversations/" + id + "/pause", preflight(frontend, "POST"), 204, frontend},
		{"preflight changes", "OPTIONS", "/api/git/changes?path=/workspace/project", preflight(frontend, "GET"), 204, frontend},
		{"preflight from localhost", "OPTIONS", "/api/conversations/" + id + "/events/count", preflight("http://localhost:3000", "GET"), 204, "http://localhost:3000"},
		{"preflight from another origin", "OPTIONS", "/api/conversations/" + id + "/pause", preflight("https://evil.example", "POST"), 401, ""},
		{"preflight from another port", "OPTIONS", "/api/conversations/" + id + "/pause", preflight("http://127.0.0.1:3001", "POST"), 401, ""},
		{"preflight from another scheme", "OPTIONS", "/api/conversations/" + id + "/pause", preflight("https://127.0.0.1:3000", "POST"), 401, ""},
		{"count", "GET", "/api/conversations/" + id + "/events/count", map[string]string{"Origin": frontend, "X-Session-API-Key": testKey}, 200, frontend},
		{"count from another origin", "GET", "/api/conversations/" + id + "/events/count", map[string]string{"Origin": "https://evil.example", "X-Session-API-Key": testKey}, 200, ""},
		{"count without the key", "GET", "/api/conversations/" + id + "/events/count", map[string]string{"Origin": frontend}, 401, frontend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := browserRequest(t, e, tc.method, tc.path, tc.hdr)
			h := res.Header
			if res.StatusCode != tc.status || h.Get("Access-Control-Allow-Origin") != tc.allowOrigin {
				t.Fatalf("HTTP %d, Access-Control-Allow-Origin %q; want %d, %q", res.StatusCode, h.Get("Access-Control-Allow-Origin"), tc.status, tc.allowOrigin)
			}
			if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Fatalf("no Vary: Origin: %v", h)
			}
			if tc.status != 204 {
				return
			}
			allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
			if !strings.Contains(allowed, "x-session-api-key") || !strings.Contains(allowed, "content-type") ||
				!strings.Contains(h.Get("Access-Control-Allow-Methods"), tc.hdr["Access-Control-Request-Method"]) ||
				h.Get("Access-Control-Allow-Credentials") != "true" {
				t.Fatalf("preflight answer %v", h)
			}
		})
	}
	// Without configured origins no CORS header is ever sent.
	plain := newEnv(t)
	res := browserRequest(t, plain, "GET", "/alive", map[string]string{"Origin": frontend})
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS header with no origin configured: %v", res.Header)
	}
}

// TestSocketsCheckTheOrigin: browsers apply no CORS to WebSockets, so every
// socket route the server registers admits only the allowed origins (and
// clients that send no Origin, and the server's own origin); any other
// origin is a 403 before the upgrade, with the session key or without.
func TestSocketsCheckTheOrigin(t *testing.T) {
	e := newBrowserEnv(t, frontend)
	id := e.create(nil)
	var routes []string
	for _, p := range e.srv.Patterns() {
		if path, ok := strings.CutPrefix(p, "GET /"); ok && strings.HasPrefix(path, "sockets/") {
			routes = append(routes, path)
		}
	}
	if len(routes) < 2 {
		t.Fatalf("socket routes %v: want the event and the bash-events sockets", routes)
	}
	self := strings.Replace(e.http.URL, "https", "http", 1)
	tests := []struct {
		origin string
		ok     bool
	}{
		{frontend, true},
		{"http://localhost:3000", true},
		{"", true},
		{self, true},
		{"http://evil.example", false},
		{"https://evil.example", false},
		{"http://127.0.0.1:3001", false},
	}
	for _, route := range routes {
		for _, tc := range tests {
			t.Run(route+" from "+tc.origin, func(t *testing.T) {
				hdr := http.Header{}
				if tc.origin != "" {
					hdr.Set("Origin", tc.origin)
				}
				u := "ws" + strings.TrimPrefix(e.http.URL, "http") + "/" + strings.ReplaceAll(route, "{id}", id) +
					"?resend_all=true&session_api_key=" + testKey
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				conn, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr})
				if !tc.ok {
					if err == nil {
						conn.CloseNow()
					}
					if err == nil || res == nil || res.StatusCode != 403 {
						t.Fatalf("socket from %s: %v %v, want 403", tc.origin, res, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("socket from %q: %v", tc.origin, err)
				}
				defer conn.CloseNow()
				if strings.HasPrefix(route, "sockets/events/") {
					if _, data, err := conn.Read(ctx); err != nil || !strings.Contains(string(data), `"kind":"ConversationStateUpdateEvent"`) {
						t.Fatalf("first frame %s %v", data, err)
					}
				}
			})
		}
	}
}

// TestCanonicalWorkspacePath: OpenHands clients name the workspace
// /workspace/project; the git and file routes take it (and paths under
// it, in the query and in the legacy path forms) as the conversation's
// working directory, still confined to it: ".." and symbolic links do not
// lead out.
func TestCanonicalWorkspacePath(t *testing.T) {
	if _, err := os.Stat(agentserver.CanonicalWorkspace); err == nil {
		t.Fatalf("%s exists on this machine: the test needs it not to", agentserver.CanonicalWorkspace)
	}
	e := newEnv(t)
	proj := filepath.Join(e.work, "proj")
	e.create(map[string]any{"workspace": map[string]any{"working_dir": proj}})
	outside := t.TempDir()
	badPathWorkspace(t, proj, outside)
	if err := os.WriteFile(filepath.Join(proj, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := func(route, p string) string { return route + "?path=" + url.QueryEscape(p) }
	const forbidden = `{"detail":"Path is outside the workspace"}`
	tests := []struct {
		name, path string
		status     int
		body       string // exact, or a part when prefixed with ~
	}{
		{"changes", q("/api/git/changes", "/workspace/project"), 200, "~" + `{"status":"ADDED","path":"hello.txt"}`},
		{"changes with a slash", q("/api/git/changes", "/workspace/project/"), 200, "~" + `"path":"hello.txt"`},
		{"changes legacy", "/api/git/changes/workspace/project", 200, "~" + `"path":"hello.txt"`},
		{"diff", q("/api/git/diff", "/workspace/project/hello.txt"), 200, `{"modified":"hello\n","original":null}`},
		{"diff legacy", "/api/git/diff/workspace/project/hello.txt", 200, `{"modified":"hello\n","original":null}`},
		{"download", q("/api/file/download", "/workspace/project/hello.txt"), 200, "hello\n"},
		{"download legacy", "/api/file/download/workspace/project/adir/../hello.txt", 200, "hello\n"},
		{"missing file", q("/api/file/download", "/workspace/project/nope.txt"), 404, `{"detail":"File not found: proj/nope.txt"}`},
		{"dot-dot out", q("/api/file/download", "/workspace/project/../../etc/passwd"), 403, forbidden},
		{"dot-dot out of the project", q("/api/file/download", "/workspace/project/../project/../../"+filepath.Base(outside)+"/secret.txt"), 403, forbidden},
		{"symlink out", q("/api/file/download", "/workspace/project/escape/secret.txt"), 403, forbidden},
		{"file symlink out", q("/api/git/diff", "/workspace/project/secret-link.txt"), 403, forbidden},
		{"a sibling is not the project", q("/api/file/download", "/workspace/projectx/hello.txt"), 403, forbidden},
		{"relative", q("/api/file/download", "workspace/project/hello.txt"), 422, "~Path must be absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("GET", tc.path, nil)
			body := string(r.body)
			ok := body == tc.body
			if strings.HasPrefix(tc.body, "~") {
				ok = strings.Contains(body, tc.body[1:])
			}
			if r.status != tc.status || !ok {
				t.Fatalf("HTTP %d %s; want %d %s", r.status, body, tc.status, tc.body)
			}
			if strings.Contains(body, e.dir) || strings.Contains(body, outside) {
				t.Fatalf("answer names a real path: %s", body)
			}
		})
	}
	// An upload to the canonical path lands in the working directory.
	body := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"new.txt\"\r\n\r\nuploaded\n\r\n--B--\r\n"
	r := e.rawRequest("POST", q("/api/file/upload", "/workspace/project/up/new.txt"), body, "multipart/form-data; boundary=B")
	if r.status != 200 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "up", "new.txt")); err != nil || string(b) != "uploaded\n" {
		t.Fatalf("uploaded file %q %v", b, err)
	}
}

// TestCanonicalWorkspaceWithSeveralConversations: with conversations in
// their own directories (grouped in one sandbox), /workspace/project is
// the directory holding them all; with none, the workspace.
func TestCanonicalWorkspaceWithSeveralConversations(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.work, "top.txt"), []byte("top\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	download := func(p string) resp { return e.call("GET", "/api/file/download?path="+url.QueryEscape(p), nil) }
	if r := download("/workspace/project/top.txt"); r.status != 200 || string(r.body) != "top\n" {
		t.Fatalf("no conversation: %d %s", r.status, r.body)
	}
	for _, d := range []string{"a", "b"} {
		e.create(map[string]any{"workspace": map[string]any{"working_dir": filepath.Join(e.work, "convs", d)}})
		if err := os.WriteFile(filepath.Join(e.work, "convs", d, "f.txt"), []byte(d+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := download("/workspace/project/a/f.txt"); r.status != 200 || string(r.body) != "a\n" {
		t.Fatalf("two conversations: %d %s", r.status, r.body)
	}
	if r := download("/workspace/project/../top.txt"); r.status != 403 {
		t.Fatalf("above the shared directory: %d %s", r.status, r.body)
	}
}
