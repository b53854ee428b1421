// Package gittest runs a real git server on 127.0.0.1 for tests.
//
// The server speaks git's smart HTTP protocol by running `git http-backend`
// as a CGI program (net/http/cgi) over bare repositories kept in a temporary
// directory. Repositories are created with [Server.Create]; private ones
// require the server's [Server.Token], supplied as HTTP basic auth (any
// username) or as an "Authorization: Bearer" header, which lets tests
// exercise credential plumbing such as GIT_ASKPASS end to end.
//
// Typical use:
//
//	srv := gittest.New(t)
//	srv.Create(t, "acme", "widgets", gittest.Repo{
//		Files:   map[string]string{"README.md": "hello\n"},
//		Private: true,
//	})
//	url := srv.URL + "/acme/widgets.git" // or without the .git suffix
//
// git must be installed (scripts/setup.sh installs it).
package gittest

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Commit identity and dates used for every commit, so that object hashes are
// stable across runs and machines.
const (
	authorName  = "ACS Test"
	authorEmail = "test@example.com"
	// mainDate is 2024-01-01T00:00:00Z; branch commits are one hour later.
	mainDate   = "1704067200 +0000"
	branchDate = "1704070800 +0000"
	// DefaultBranch is the branch holding [Repo.Files].
	DefaultBranch = "main"
)

// Server is a git smart-HTTP server on 127.0.0.1. Create it with [New].
type Server struct {
	// URL is the server's base URL without a trailing slash, e.g.
	// "http://127.0.0.1:PORT". Repository <org>/<name> is served at
	// URL/<org>/<name>.git (and URL/<org>/<name>).
	URL string

	t       testing.TB
	backend string // path of git-http-backend
	root    string // GIT_PROJECT_ROOT: <org>/<name>.git bare repositories
	staging string // where repositories are built before being moved into root
	home    string // HOME for every git process, keeping user config out
	token   string
	srv     *httptest.Server

	mu       sync.Mutex
	private  map[string]bool // "<org>/<name>" -> private
	requests []Request
}

// Repo describes a repository for [Server.Create].
type Repo struct {
	// Files are the files (slash-separated paths relative to the repository
	// root -> contents) of the single commit on the default branch "main".
	Files map[string]string
	// Branches maps extra branch names to files added to, or overriding,
	// those of main; each branch gets one commit on top of main's.
	Branches map[string]map[string]string
	// Private repositories refuse every request that does not carry
	// [Server.Token].
	Private bool
}

// Request records one HTTP request handled by the server.
type Request struct {
	Method string // e.g. "GET", "POST"
	Path   string // URL path, e.g. "/acme/widgets.git/info/refs"
	Query  string // raw query, e.g. "service=git-upload-pack"
	// Authenticated reports whether the request carried the valid token.
	Authenticated bool
	// Status is the HTTP status code of the response.
	Status int
}

// New starts a server and registers its shutdown with t.Cleanup. It calls
// t.Fatal if git (or git-http-backend) is not installed.
func New(t testing.TB) *Server {
	t.Helper()
	backend, err := findBackend()
	if err != nil {
		t.Fatalf("gittest: %v (git is installed by scripts/setup.sh)", err)
	}
	dir := t.TempDir()
	s := &Server{
		t:       t,
		backend: backend,
		root:    filepath.Join(dir, "repos"),
		staging: filepath.Join(dir, "staging"),
		home:    filepath.Join(dir, "home"),
		token:   newToken(t),
		private: make(map[string]bool),
	}
	for _, d := range []string{s.root, s.staging, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("gittest: create %s: %v", d, err)
		}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// findBackend returns the path of git-http-backend.
func findBackend() (string, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("git not found in PATH: %w", err)
	}
	out, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return "", fmt.Errorf("git-http-backend not found: %w", err)
	}
	return backend, nil
}

func newToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("gittest: generate token: %v", err)
	}
	return "gittest-" + hex.EncodeToString(b)
}

// Token returns the credential private repositories accept: the password of
// HTTP basic auth with any username (e.g. "x-access-token" or "oauth2"), or
// the token of an "Authorization: Bearer <token>" header.
func (s *Server) Token() string { return s.token }

// Requests returns a copy of the requests handled so far, in the order their
// responses were started. A request is recorded before any of its response
// reaches the client, so once a git command has exited, all of its requests
// are present.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Create makes the bare repository <org>/<name>.git with one commit on main
// holding r.Files and one commit per entry of r.Branches on top of it. Commits
// are authored by "ACS Test <test@example.com>" at fixed dates, so hashes are
// stable. Files are mode 0644, or 0755 when the name ends in ".sh". The
// repository appears on the server atomically, fully built. Create calls
// t.Fatal on invalid input, if the repository exists, or if git fails.
func (s *Server) Create(t testing.TB, org, name string, r Repo) {
	t.Helper()
	name = strings.TrimSuffix(name, ".git")
	for _, part := range []string{org, name} {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, `/\`) || strings.HasPrefix(part, ".") {
			t.Fatalf("gittest: invalid repository %q/%q", org, name)
		}
	}
	if _, ok := r.Branches[DefaultBranch]; ok {
		t.Fatalf("gittest: Branches must not contain %q; use Files", DefaultBranch)
	}
	key := org + "/" + name
	dst := filepath.Join(s.root, org, name+".git")

	s.mu.Lock()
	_, exists := s.private[key]
	if !exists {
		// Registered before the repository appears, so a private repository
		// is never momentarily public.
		s.private[key] = r.Private
	}
	s.mu.Unlock()
	if exists {
		t.Fatalf("gittest: repository %s already exists", key)
	}

	if err := s.build(dst, r); err != nil {
		t.Fatalf("gittest: create %s: %v", key, err)
	}
}

// build creates the repository in the staging directory and renames it to
// dst.
func (s *Server) build(dst string, r Repo) error {
	tmp, err := os.MkdirTemp(s.staging, "build-")
	if err != nil {
		return fmt.Errorf("create staging dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	bare := filepath.Join(tmp, "bare.git")

	if err := s.git(tmp, nil, "init", "--quiet", "-b", DefaultBranch, work); err != nil {
		return err
	}
	if err := s.commit(work, r.Files, mainDate, "Initial commit"); err != nil {
		return err
	}
	for _, b := range slices.Sorted(maps.Keys(r.Branches)) {
		if err := s.git(work, nil, "checkout", "--quiet", "-b", b, DefaultBranch); err != nil {
			return err
		}
		if err := s.commit(work, r.Branches[b], branchDate, "Update "+b); err != nil {
			return err
		}
	}
	if err := s.git(work, nil, "checkout", "--quiet", DefaultBranch); err != nil {
		return err
	}
	if err := s.git(tmp, nil, "init", "--quiet", "--bare", "-b", DefaultBranch, bare); err != nil {
		return err
	}
	if err := s.git(work, nil, "push", "--quiet", bare, "refs/heads/*:refs/heads/*"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create org dir: %w", err)
	}
	if err := os.Rename(bare, dst); err != nil {
		return fmt.Errorf("move repository into place: %w", err)
	}
	return nil
}

// commit writes files into the work tree and commits everything at date.
func (s *Server) commit(work string, files map[string]string, date, msg string) error {
	var scripts []string
	for name, content := range files {
		if !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(name, `\`) {
			return fmt.Errorf("invalid file name %q", name)
		}
		if first, _, _ := strings.Cut(name, "/"); first == ".git" {
			return fmt.Errorf("invalid file name %q", name)
		}
		p := filepath.Join(work, filepath.FromSlash(name))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
			scripts = append(scripts, name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		// WriteFile applies the umask and keeps an existing file's mode.
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", name, err)
		}
	}
	if err := s.git(work, nil, "add", "--all"); err != nil {
		return err
	}
	if len(scripts) > 0 {
		// Record the executable bit even where core.fileMode is false.
		slices.Sort(scripts)
		args := append([]string{"update-index", "--chmod=+x", "--"}, scripts...)
		if err := s.git(work, nil, args...); err != nil {
			return err
		}
	}
	env := []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}
	return s.git(work, env, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", msg)
}

// git runs git in dir with a clean environment (temporary HOME, no system
// config, fixed identity) plus extra.
func (s *Server) git(dir string, extra []string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(s.baseEnv(),
		"GIT_AUTHOR_NAME="+authorName,
		"GIT_AUTHOR_EMAIL="+authorEmail,
		"GIT_COMMITTER_NAME="+authorName,
		"GIT_COMMITTER_EMAIL="+authorEmail,
		"GIT_TERMINAL_PROMPT=0",
	)
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// baseEnv is the environment shared by every git process the server runs.
func (s *Server) baseEnv() []string {
	env := []string{
		"HOME=" + s.home,
		"XDG_CONFIG_HOME=" + filepath.Join(s.home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"LC_ALL=C",
	}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	return env
}

// serveHTTP authorizes a request and hands it to git-http-backend.
func (s *Server) serveHTTP(w http.ResponseWriter, req *http.Request) {
	user, authed := s.authenticate(req)
	rw := &recorder{ResponseWriter: w, s: s, rec: Request{
		Method:        req.Method,
		Path:          req.URL.Path,
		Query:         req.URL.RawQuery,
		Authenticated: authed,
	}}
	defer rw.record(http.StatusOK) // a handler that writes nothing sends 200

	p := req.URL.Path
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if path.Clean(p) != p || len(parts) < 3 {
		http.NotFound(rw, req)
		return
	}
	key := parts[0] + "/" + strings.TrimSuffix(parts[1], ".git")
	s.mu.Lock()
	private := s.private[key]
	s.mu.Unlock()

	push := strings.HasSuffix(p, "/git-receive-pack") || req.URL.Query().Get("service") == "git-receive-pack"
	switch {
	case private && !authed:
		rw.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
		http.Error(rw, "authentication required", http.StatusUnauthorized)
		return
	case !private && push:
		http.Error(rw, "push to public repositories is not allowed", http.StatusForbidden)
		return
	}

	// net/http/cgi refuses chunked request bodies, which git sends for large
	// POSTs (beyond http.postBuffer); buffer them to give a Content-Length.
	if req.ContentLength < 0 || slices.Contains(req.TransferEncoding, "chunked") {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(rw, fmt.Sprintf("read request body: %v", err), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.TransferEncoding = nil
	}

	env := append(s.baseEnv(), "GIT_PROJECT_ROOT="+s.root, "GIT_HTTP_EXPORT_ALL=1")
	if authed {
		// Makes http-backend allow pushes (http.receivepack defaults to
		// enabled for authenticated users).
		env = append(env, "REMOTE_USER="+user)
	}
	logw := &logWriter{t: s.t, prefix: "gittest: git-http-backend " + req.Method + " " + req.URL.RequestURI() + ": "}
	h := &cgi.Handler{
		Path:   s.backend,
		Root:   "/",
		Dir:    s.root,
		Env:    env,
		Logger: log.New(logw, "", 0),
		Stderr: logw,
	}
	h.ServeHTTP(rw, req)
}

// authenticate reports whether req carries the token, and the user name to
// pass to the backend.
func (s *Server) authenticate(req *http.Request) (user string, ok bool) {
	if u, pw, has := req.BasicAuth(); has {
		if u == "" {
			u = "token"
		}
		return u, s.validToken(pw)
	}
	if tok, has := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); has {
		return "token", s.validToken(strings.TrimSpace(tok))
	}
	return "", false
}

func (s *Server) validToken(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) == 1
}

// recorder records a Request when the response starts, i.e. before any of it
// reaches the client.
type recorder struct {
	http.ResponseWriter
	s    *Server
	rec  Request
	done bool
}

func (r *recorder) record(status int) {
	if r.done {
		return
	}
	r.done = true
	r.rec.Status = status
	r.s.mu.Lock()
	r.s.requests = append(r.s.requests, r.rec)
	r.s.mu.Unlock()
}

func (r *recorder) WriteHeader(status int) {
	r.record(status)
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.record(http.StatusOK)
	return r.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (r *recorder) Flush() {
	r.record(http.StatusOK)
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logWriter sends the backend's stderr and CGI errors to the test log. The
// server is closed (waiting for handlers) in t.Cleanup, so this never logs
// after the test has finished.
type logWriter struct {
	t      testing.TB
	prefix string
}

func (l *logWriter) Write(b []byte) (int, error) {
	if msg := strings.TrimSpace(string(b)); msg != "" {
		l.t.Logf("%s%s", l.prefix, msg)
	}
	return len(b), nil
}
