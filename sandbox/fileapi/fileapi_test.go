package fileapi_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/fileapi"
)

type env struct {
	base, root, outside string
	srv                 *httptest.Server
}

// setup creates a workspace root, a sibling directory outside it holding
// secret.txt, symbolic links from the root to the outside, and a server
// whose wrap requires an X-Test-Auth header.
func setup(t *testing.T) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{base: base, root: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{e.root, e.outside, filepath.Join(e.root, "adir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(e.outside, "secret.txt"), []byte("secret"))
	writeFile(t, filepath.Join(e.root, "hello.txt"), []byte("hello"))
	for link, target := range map[string]string{
		"escape":          e.outside,
		"secret-link.txt": filepath.Join(e.outside, "secret.txt"),
		"dangling":        filepath.Join(e.outside, "not-yet", "f.txt"),
		"rel-escape":      "../outside",
		"inside-link":     "adir",
	} {
		if err := os.Symlink(target, filepath.Join(e.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	wrap := func(h http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test-Auth") != "ok" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h(w, r)
		})
	}
	fileapi.Routes(mux, func() []string { return []string{e.root} }, wrap)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func queryURL(route, p string) string { return route + "?" + url.Values{"path": {p}}.Encode() }

func legacyURL(route, abs string) string { return route + (&url.URL{Path: abs}).EscapedPath() }

// multipartBody streams a multipart body through a pipe; field "" omits the
// file part and extra adds a plain form field first.
func multipartBody(field string, content []byte, extra bool) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		if extra {
			mw.WriteField("note", "ignored")
		}
		if field != "" {
			fw, err := mw.CreateFormFile(field, "upload.bin")
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := io.Copy(fw, bytes.NewReader(content)); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return pr, mw.FormDataContentType()
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(t *testing.T, method, target string, body io.Reader, contentType string, auth bool) response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+target, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth {
		req.Header.Set("X-Test-Auth", "ok")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func (e *env) upload(t *testing.T, target string, content []byte) response {
	t.Helper()
	body, ct := multipartBody("file", content, false)
	return e.do(t, "POST", target, body, ct, true)
}

func (e *env) download(t *testing.T, target string) response {
	t.Helper()
	return e.do(t, "GET", target, nil, "", true)
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	e := setup(t)
	content := randomBytes(t, 3<<20+12345)
	for _, tc := range []struct {
		name             string
		file             string // relative to the root
		up, down         func(abs string) string
		wantDisposition  string
		wantInsidePrefix string
	}{
		{name: "query", file: "blob.bin", up: func(p string) string { return queryURL("/api/file/upload", p) },
			down: func(p string) string { return queryURL("/api/file/download", p) }, wantDisposition: `attachment; filename="blob.bin"`},
		{name: "legacy", file: "legacy dir/blob 2.bin", up: func(p string) string { return legacyURL("/api/file/upload", p) },
			down: func(p string) string { return legacyURL("/api/file/download", p) }, wantDisposition: `attachment; filename="blob 2.bin"`},
		{name: "parents created", file: "a/b/c/deep.bin", up: func(p string) string { return queryURL("/api/file/upload", p) },
			down: func(p string) string { return queryURL("/api/file/download", p) }, wantDisposition: `attachment; filename="deep.bin"`},
		{name: "unicode name", file: "dir/naïve \"q\".bin", up: func(p string) string { return queryURL("/api/file/upload", p) },
			down:            func(p string) string { return legacyURL("/api/file/download", p) },
			wantDisposition: `attachment; filename="na_ve _q_.bin"; filename*=UTF-8''na%C3%AFve%20%22q%22.bin`},
		{name: "through inside symlink", file: "inside-link/via-link.bin", up: func(p string) string { return queryURL("/api/file/upload", p) },
			down: func(p string) string { return queryURL("/api/file/download", p) }, wantDisposition: `attachment; filename="via-link.bin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			abs := filepath.Join(e.root, tc.file)
			r := e.upload(t, tc.up(abs), content)
			if r.status != 200 || string(r.body) != `{"success":true}` {
				t.Fatalf("upload = %d %s", r.status, r.body)
			}
			onDisk, err := os.ReadFile(abs)
			if err != nil || !bytes.Equal(onDisk, content) {
				t.Fatalf("file on disk differs (err %v, %d bytes)", err, len(onDisk))
			}
			r = e.download(t, tc.down(abs))
			if r.status != 200 {
				t.Fatalf("download = %d %s", r.status, r.body)
			}
			if !bytes.Equal(r.body, content) {
				t.Errorf("downloaded %d bytes, differ from the %d uploaded", len(r.body), len(content))
			}
			if got := r.header.Get("Content-Type"); got != "application/octet-stream" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := r.header.Get("Content-Disposition"); got != tc.wantDisposition {
				t.Errorf("Content-Disposition = %q, want %q", got, tc.wantDisposition)
			}
			if got := r.header.Get("Content-Length"); got != fmt.Sprint(len(content)) {
				t.Errorf("Content-Length = %q", got)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.root, "adir", "via-link.bin")); err != nil {
		t.Errorf("upload through an inside symlink did not land in its target: %v", err)
	}
}

func TestOverwrite(t *testing.T) {
	e := setup(t)
	abs := filepath.Join(e.root, "over.txt")
	writeFile(t, abs, []byte("old content that is longer"))
	if err := os.Chmod(abs, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"second", "third!"} {
		if r := e.upload(t, queryURL("/api/file/upload", abs), []byte(content)); r.status != 200 {
			t.Fatalf("upload = %d %s", r.status, r.body)
		}
		if got, _ := os.ReadFile(abs); string(got) != content {
			t.Errorf("content = %q, want %q", got, content)
		}
	}
	if fi, _ := os.Stat(abs); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want the original 0600 kept", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(e.root)
	for _, en := range entries {
		if strings.Contains(en.Name(), ".upload-") {
			t.Errorf("temporary file left behind: %s", en.Name())
		}
	}
	// A new file gets 0644.
	fresh := filepath.Join(e.root, "fresh.txt")
	e.upload(t, queryURL("/api/file/upload", fresh), []byte("x"))
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode = %v, %v; want 0644", fi, err)
	}
}

func TestErrors(t *testing.T) {
	e := setup(t)
	const (
		forbidden   = `{"detail":"Path is outside the workspace"}`
		notAbsolute = `{"detail":[{"loc":["query","path"],"msg":"Value error, Path must be absolute","type":"value_error"}]}`
	)
	up := func(p string) string { return queryURL("/api/file/upload", p) }
	down := func(p string) string { return queryURL("/api/file/download", p) }
	for _, tc := range []struct {
		name        string
		method      string // GET or POST (multipart with a file part)
		target      string
		field       string // multipart field for POST; "-" sends a non-multipart body
		noAuth      bool
		status      int
		body        string
		contains    string
		mustNotExit string // a path that must not exist afterwards
	}{
		{name: "download missing path", method: "GET", target: "/api/file/download", status: 422, body: `{"detail":[{"loc":["query","path"],"msg":"Field required","type":"missing"}]}`},
		{name: "upload missing path", method: "POST", target: "/api/file/upload", field: "file", status: 422, body: `{"detail":[{"loc":["query","path"],"msg":"Field required","type":"missing"}]}`},
		{name: "download relative", method: "GET", target: down("ws/hello.txt"), status: 422, body: notAbsolute},
		{name: "upload relative", method: "POST", target: up("ws/new.txt"), field: "file", status: 422, body: notAbsolute},
		{name: "download empty path", method: "GET", target: down(""), status: 422, body: notAbsolute},
		{name: "download outside", method: "GET", target: down(filepath.Join(e.outside, "secret.txt")), status: 403, body: forbidden},
		{name: "upload outside", method: "POST", target: up(filepath.Join(e.outside, "new.txt")), field: "file", status: 403, body: forbidden, mustNotExit: filepath.Join(e.outside, "new.txt")},
		{name: "download traversal", method: "GET", target: down(e.root + "/../outside/secret.txt"), status: 403, body: forbidden},
		{name: "upload traversal", method: "POST", target: up(e.root + "/adir/../../outside/t.txt"), field: "file", status: 403, body: forbidden, mustNotExit: filepath.Join(e.outside, "t.txt")},
		{name: "download root prefix sibling", method: "GET", target: down(e.root + "x/f"), status: 403, body: forbidden},
		{name: "download symlinked dir escape", method: "GET", target: down(filepath.Join(e.root, "escape", "secret.txt")), status: 403, body: forbidden},
		{name: "download relative symlink escape", method: "GET", target: down(filepath.Join(e.root, "rel-escape", "secret.txt")), status: 403, body: forbidden},
		{name: "download symlinked file escape", method: "GET", target: down(filepath.Join(e.root, "secret-link.txt")), status: 403, body: forbidden},
		{name: "upload symlinked dir escape", method: "POST", target: up(filepath.Join(e.root, "escape", "planted.txt")), field: "file", status: 403, body: forbidden, mustNotExit: filepath.Join(e.outside, "planted.txt")},
		{name: "upload over escaping file symlink", method: "POST", target: up(filepath.Join(e.root, "secret-link.txt")), field: "file", status: 403, body: forbidden},
		{name: "upload through dangling symlink", method: "POST", target: up(filepath.Join(e.root, "dangling")), field: "file", status: 403, body: forbidden, mustNotExit: filepath.Join(e.outside, "not-yet")},
		{name: "download legacy outside", method: "GET", target: legacyURL("/api/file/download", filepath.Join(e.outside, "secret.txt")), status: 403, body: forbidden},
		{name: "upload legacy outside", method: "POST", target: legacyURL("/api/file/upload", filepath.Join(e.outside, "x.txt")), field: "file", status: 403, body: forbidden},
		{name: "download missing file", method: "GET", target: down(filepath.Join(e.root, "nope.txt")), status: 404, contains: `"detail":"File not found`},
		{name: "download below a file", method: "GET", target: down(filepath.Join(e.root, "hello.txt", "x")), status: 404, contains: `"detail":"File not found`},
		{name: "download legacy missing", method: "GET", target: legacyURL("/api/file/download", filepath.Join(e.root, "nope.txt")), status: 404, contains: `"detail"`},
		{name: "download directory", method: "GET", target: down(filepath.Join(e.root, "adir")), status: 400, contains: `"detail":"Path is a directory`},
		{name: "download root", method: "GET", target: down(e.root), status: 400, contains: `"detail":"Path is a directory`},
		{name: "upload onto directory", method: "POST", target: up(filepath.Join(e.root, "adir")), field: "file", status: 400, contains: `"detail":"Path is a directory`},
		{name: "upload without file part", method: "POST", target: up(filepath.Join(e.root, "nofile.txt")), field: "other", status: 422, body: `{"detail":[{"loc":["body","file"],"msg":"Field required","type":"missing"}]}`, mustNotExit: filepath.Join(e.root, "nofile.txt")},
		{name: "upload not multipart", method: "POST", target: up(filepath.Join(e.root, "nofile.txt")), field: "-", status: 422, contains: `"loc":["body","file"]`},
		{name: "upload unauthenticated", method: "POST", target: up(filepath.Join(e.root, "noauth.txt")), field: "file", noAuth: true, status: 401, mustNotExit: filepath.Join(e.root, "noauth.txt")},
		{name: "download legacy unauthenticated", method: "GET", target: legacyURL("/api/file/download", filepath.Join(e.root, "hello.txt")), noAuth: true, status: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			switch {
			case tc.method == "GET":
				r = e.do(t, "GET", tc.target, nil, "", !tc.noAuth)
			case tc.field == "-":
				r = e.do(t, "POST", tc.target, strings.NewReader("plain"), "text/plain", !tc.noAuth)
			default:
				body, ct := multipartBody(tc.field, []byte("payload"), true)
				r = e.do(t, "POST", tc.target, body, ct, !tc.noAuth)
			}
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", r.status, tc.status, r.body)
			}
			if tc.body != "" && string(r.body) != tc.body {
				t.Errorf("body = %s\nwant   %s", r.body, tc.body)
			}
			if tc.contains != "" && !strings.Contains(string(r.body), tc.contains) {
				t.Errorf("body = %s, want it to contain %s", r.body, tc.contains)
			}
			if tc.status != 401 && !json.Valid(r.body) {
				t.Errorf("body is not JSON: %s", r.body)
			}
			if tc.mustNotExit != "" {
				if _, err := os.Lstat(tc.mustNotExit); err == nil {
					t.Errorf("%s was created", tc.mustNotExit)
				}
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(e.outside, "secret.txt")); string(got) != "secret" {
		t.Errorf("outside file modified: %q", got)
	}
}

func TestUploadTooLarge(t *testing.T) {
	old := fileapi.MaxUpload
	fileapi.MaxUpload = 1000
	root := t.TempDir()
	mux := http.NewServeMux()
	fileapi.Routes(mux, func() []string { return []string{root} }, nil)
	fileapi.MaxUpload = old
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dest := filepath.Join(root, "big.bin")
	writeFile(t, dest, []byte("original"))

	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		status  int
	}{
		{"at the limit", 1000, false, 200},
		{"over, chunked", 1001, true, 413},
		{"far over, chunked", 3 << 20, true, 413},
		{"far over, content length", 3 << 20, false, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := bytes.Repeat([]byte{'z'}, tc.size)
			body, ct := multipartBody("file", content, false)
			if !tc.chunked {
				b, _ := io.ReadAll(body)
				body = bytes.NewReader(b)
			}
			req, _ := http.NewRequest("POST", srv.URL+queryURL("/api/file/upload", dest), body)
			req.Header.Set("Content-Type", ct)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rb, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.status, rb)
			}
			got, _ := os.ReadFile(dest)
			if tc.status == 200 && !bytes.Equal(got, content) {
				t.Errorf("file not written")
			}
			if tc.status == 413 && len(got) != 1000 {
				t.Errorf("file changed by a refused upload: %d bytes", len(got))
			}
		})
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only big.bin (no temporary files)", len(entries))
	}
}

func TestRootsCalledPerRequest(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(b, "f.txt"), []byte("f"))
	roots := []string{a}
	mux := http.NewServeMux()
	fileapi.Routes(mux, func() []string { return roots }, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func() int {
		resp, err := srv.Client().Get(srv.URL + queryURL("/api/file/download", filepath.Join(b, "f.txt")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get(); s != 403 {
		t.Errorf("before: status %d, want 403", s)
	}
	roots = []string{a, b}
	if s := get(); s != 200 {
		t.Errorf("after adding the root: status %d, want 200", s)
	}
	roots = nil
	if s := get(); s != 403 {
		t.Errorf("no roots: status %d, want 403", s)
	}
}
