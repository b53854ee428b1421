package gitreview_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/gitreview"
)

// TestMain isolates git from the user's and the system's configuration and
// stops repository discovery at the temporary directory.
func TestMain(m *testing.M) {
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Println("git not installed; skipping gitreview tests")
		os.Exit(0)
	}
	cfgDir, err := os.MkdirTemp("", "gitreview-config")
	if err != nil {
		panic(err)
	}
	tmp, _ := filepath.EvalSymlinks(os.TempDir())
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":       filepath.Join(cfgDir, "gitconfig"),
		"GIT_CONFIG_NOSYSTEM":     "1",
		"GIT_AUTHOR_NAME":         "Test",
		"GIT_AUTHOR_EMAIL":        "test@example.com",
		"GIT_COMMITTER_NAME":      "Test",
		"GIT_COMMITTER_EMAIL":     "test@example.com",
		"GIT_CEILING_DIRECTORIES": tmp,
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(cfgDir)
	os.Exit(code)
}

var ctx = context.Background()

func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := gitreview.Init(ctx, dir); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return dir
}

func sorted(cs []agentwire.GitChange) []agentwire.GitChange {
	out := append([]agentwire.GitChange(nil), cs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func ptr(s string) *string { return &s }

func show(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *p)
}

func sameDiff(t *testing.T, got, want agentwire.GitDiff) {
	t.Helper()
	if show(got.Original) != show(want.Original) || show(got.Modified) != show(want.Modified) {
		t.Errorf("diff = {original %s, modified %s}, want {original %s, modified %s}",
			show(got.Original), show(got.Modified), show(want.Original), show(want.Modified))
	}
}

func TestEmptyRepoUntracked(t *testing.T) {
	dir := newRepo(t)
	write(t, filepath.Join(dir, "a.txt"), "A\n")
	write(t, filepath.Join(dir, "sub", "deep", "b.txt"), "B\n")
	write(t, filepath.Join(dir, "with space.txt"), "S\n")
	write(t, filepath.Join(dir, "staged.txt"), "staged\n")
	gitCmd(t, dir, "add", "staged.txt")

	got, err := gitreview.Changes(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []agentwire.GitChange{
		{Status: "ADDED", Path: "a.txt"},
		{Status: "ADDED", Path: "staged.txt"},
		{Status: "ADDED", Path: "sub/deep/b.txt"},
		{Status: "ADDED", Path: "with space.txt"},
	}
	if !reflect.DeepEqual(sorted(got), want) {
		t.Errorf("Changes = %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		name string
		path string
		want agentwire.GitDiff
	}{
		{"untracked", filepath.Join(dir, "a.txt"), agentwire.GitDiff{Modified: ptr("A\n")}},
		{"staged", filepath.Join(dir, "staged.txt"), agentwire.GitDiff{Modified: ptr("staged\n")}},
		{"nested", filepath.Join(dir, "sub", "deep", "b.txt"), agentwire.GitDiff{Modified: ptr("B\n")}},
		{"missing", filepath.Join(dir, "nope", "x.txt"), agentwire.GitDiff{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := gitreview.FileDiff(ctx, tc.path, "", "")
			if err != nil {
				t.Fatal(err)
			}
			sameDiff(t, d, tc.want)
		})
	}
}

// committedRepo builds a repository with two commits and a dirty work tree.
// It returns the repository and the first commit's id.
func committedRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := newRepo(t)
	write(t, filepath.Join(dir, ".gitignore"), "*.log\nbuild/\n")
	write(t, filepath.Join(dir, "keep.txt"), "keep\n")
	write(t, filepath.Join(dir, "mod.txt"), "v1\n")
	write(t, filepath.Join(dir, "del.txt"), "delete me\n")
	write(t, filepath.Join(dir, "old name.txt"), "rename me, long enough to be similar\n")
	write(t, filepath.Join(dir, "src", "gone", "x.go"), "package gone\n")
	write(t, filepath.Join(dir, "src", "lib.go"), "package src\n")
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-q", "-m", "one")
	first := gitCmd(t, dir, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "mod.txt"), "v2\n")
	gitCmd(t, dir, "commit", "-q", "-am", "two")

	// Work-tree changes. keep.txt only gets a new mtime, which is no change.
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "keep.txt"), later, later)
	write(t, filepath.Join(dir, "mod.txt"), "v3\n")
	os.Remove(filepath.Join(dir, "del.txt"))
	os.RemoveAll(filepath.Join(dir, "src", "gone"))
	gitCmd(t, dir, "mv", "old name.txt", "neu ñame.txt")
	write(t, filepath.Join(dir, "new file ü.txt"), "new\n")
	write(t, filepath.Join(dir, "dir", "日本 語.md"), "unicode\n")
	write(t, filepath.Join(dir, "line\nbreak.txt"), "newline\n")
	write(t, filepath.Join(dir, "debug.log"), "ignored\n")
	write(t, filepath.Join(dir, "build", "out.bin"), "ignored\n")
	write(t, filepath.Join(dir, "src", "trace.log"), "ignored\n")
	return dir, first
}

func TestChangesCommitted(t *testing.T) {
	dir, first := committedRepo(t)
	wantHead := []agentwire.GitChange{
		{Status: "DELETED", Path: "del.txt"},
		{Status: "ADDED", Path: "dir/日本 語.md"},
		{Status: "ADDED", Path: "line\nbreak.txt"},
		{Status: "UPDATED", Path: "mod.txt"},
		{Status: "MOVED", Path: "neu ñame.txt"},
		{Status: "ADDED", Path: "new file ü.txt"},
		{Status: "DELETED", Path: "src/gone/x.go"},
	}
	for _, tc := range []struct {
		name string
		path string
		ref  string
		want []agentwire.GitChange
	}{
		{"root", dir, "", wantHead},
		{"explicit HEAD", dir, "HEAD", wantHead},
		{"nested dir", filepath.Join(dir, "src"), "", wantHead},
		{"file path", filepath.Join(dir, "keep.txt"), "", wantHead},
		{"deleted dir path", filepath.Join(dir, "src", "gone", "x.go"), "", wantHead},
		{"first commit", dir, first, wantHead},
		{"previous commit", dir, "HEAD~1", wantHead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gitreview.Changes(ctx, tc.path, tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sorted(got), tc.want) {
				t.Errorf("Changes = %q\nwant      %q", got, tc.want)
			}
		})
	}

	t.Run("committed work tree is clean", func(t *testing.T) {
		clean := newRepo(t)
		write(t, filepath.Join(clean, "f.txt"), "f\n")
		gitCmd(t, clean, "add", "-A")
		gitCmd(t, clean, "commit", "-q", "-m", "c")
		got, err := gitreview.Changes(ctx, clean, "")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("Changes = %#v, %v; want empty non-nil list", got, err)
		}
	})
	t.Run("unknown ref", func(t *testing.T) {
		if _, err := gitreview.Changes(ctx, dir, "no-such-branch"); err == nil {
			t.Error("want an error")
		}
	})
	t.Run("option-like ref", func(t *testing.T) {
		_, err := gitreview.Changes(ctx, dir, "--output=/tmp/x")
		if !errors.Is(err, gitreview.ErrInvalidRef) {
			t.Errorf("err = %v, want ErrInvalidRef", err)
		}
	})
}

func TestFileDiff(t *testing.T) {
	dir, first := committedRepo(t)
	big := filepath.Join(dir, "big.bin")
	write(t, big, strings.Repeat("x", gitreview.MaxContentBytes+1))
	for _, tc := range []struct {
		name         string
		path         string
		ref, commit  string
		want         agentwire.GitDiff
		wantErr      error
		wantAnyError bool
	}{
		{name: "modified", path: "mod.txt", want: agentwire.GitDiff{Original: ptr("v2\n"), Modified: ptr("v3\n")}},
		{name: "unchanged", path: "keep.txt", want: agentwire.GitDiff{Original: ptr("keep\n"), Modified: ptr("keep\n")}},
		{name: "deleted", path: "del.txt", want: agentwire.GitDiff{Original: ptr("delete me\n")}},
		{name: "deleted with its directory", path: "src/gone/x.go", want: agentwire.GitDiff{Original: ptr("package gone\n")}},
		{name: "nested", path: "src/lib.go", want: agentwire.GitDiff{Original: ptr("package src\n"), Modified: ptr("package src\n")}},
		{name: "renamed new path", path: "neu ñame.txt", want: agentwire.GitDiff{Modified: ptr("rename me, long enough to be similar\n")}},
		{name: "renamed old path", path: "old name.txt", want: agentwire.GitDiff{Original: ptr("rename me, long enough to be similar\n")}},
		{name: "untracked unicode", path: "new file ü.txt", want: agentwire.GitDiff{Modified: ptr("new\n")}},
		{name: "newline in name", path: "line\nbreak.txt", want: agentwire.GitDiff{Modified: ptr("newline\n")}},
		{name: "ref", path: "mod.txt", ref: "HEAD~1", want: agentwire.GitDiff{Original: ptr("v1\n"), Modified: ptr("v3\n")}},
		{name: "commit", path: "mod.txt", commit: first, want: agentwire.GitDiff{Original: ptr("v1\n"), Modified: ptr("v3\n")}},
		{name: "glob-like name is literal", path: "*.txt", want: agentwire.GitDiff{}},
		{name: "ref and commit", path: "mod.txt", ref: "HEAD", commit: first, wantErr: gitreview.ErrRefAndCommit},
		{name: "unknown ref", path: "mod.txt", ref: "nope", wantAnyError: true},
		{name: "directory", path: "src", wantErr: gitreview.ErrIsDirectory},
		{name: "too large", path: "big.bin", wantErr: gitreview.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := gitreview.FileDiff(ctx, filepath.Join(dir, tc.path), tc.ref, tc.commit)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("err = %v, want %v", err, tc.wantErr)
				}
				return
			case tc.wantAnyError:
				if err == nil {
					t.Error("want an error")
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			sameDiff(t, d, tc.want)
		})
	}
}

func TestFileDiffOriginalTooLarge(t *testing.T) {
	dir := newRepo(t)
	big := filepath.Join(dir, "big.bin")
	write(t, big, strings.Repeat("y", gitreview.MaxContentBytes+1))
	gitCmd(t, dir, "add", "big.bin")
	gitCmd(t, dir, "commit", "-q", "-m", "big")
	write(t, big, "small now")
	if _, err := gitreview.FileDiff(ctx, big, "", ""); !errors.Is(err, gitreview.ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
	write(t, big, strings.Repeat("y", gitreview.MaxContentBytes))
	gitCmd(t, dir, "commit", "-q", "-am", "at the limit")
	d, err := gitreview.FileDiff(ctx, big, "", "")
	if err != nil || d.Original == nil || len(*d.Original) != gitreview.MaxContentBytes || d.Modified == nil {
		t.Errorf("at the limit: err %v", err)
	}
}

func TestGitignoreRespected(t *testing.T) {
	dir := newRepo(t)
	write(t, filepath.Join(dir, ".gitignore"), "node_modules/\n*.tmp\n!keep.tmp\n")
	write(t, filepath.Join(dir, "sub", ".gitignore"), "local.txt\n")
	write(t, filepath.Join(dir, "node_modules", "x", "index.js"), "x")
	write(t, filepath.Join(dir, "a.tmp"), "x")
	write(t, filepath.Join(dir, "keep.tmp"), "x")
	write(t, filepath.Join(dir, "sub", "local.txt"), "x")
	write(t, filepath.Join(dir, "sub", "shared.txt"), "x")
	write(t, filepath.Join(dir, ".git", "info", "exclude"), "secret.env\n")
	write(t, filepath.Join(dir, "secret.env"), "x")
	os.MkdirAll(filepath.Join(dir, "empty", "dir"), 0o755)
	got, err := gitreview.Changes(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []agentwire.GitChange{
		{Status: "ADDED", Path: ".gitignore"},
		{Status: "ADDED", Path: "keep.tmp"},
		{Status: "ADDED", Path: "sub/.gitignore"},
		{Status: "ADDED", Path: "sub/shared.txt"},
	}
	if !reflect.DeepEqual(sorted(got), want) {
		t.Errorf("Changes = %q\nwant      %q", got, want)
	}
}

func TestNotARepository(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "f")
	for _, p := range []string{dir, filepath.Join(dir, "f.txt"), filepath.Join(dir, "missing", "x")} {
		got, err := gitreview.Changes(ctx, p, "")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("Changes(%s) = %#v, %v; want empty non-nil list", p, got, err)
		}
		d, err := gitreview.FileDiff(ctx, filepath.Join(dir, "f.txt"), "", "")
		if err != nil || d.Original != nil || d.Modified != nil {
			t.Errorf("FileDiff = %+v, %v; want both nil", d, err)
		}
	}
	// Inside the .git directory is not a work tree either.
	repo := newRepo(t)
	if got, err := gitreview.Changes(ctx, filepath.Join(repo, ".git"), ""); err != nil || len(got) != 0 {
		t.Errorf("Changes(.git) = %#v, %v; want empty", got, err)
	}
}

func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "ws")
	for i := 0; i < 2; i++ {
		if err := gitreview.Init(ctx, dir); err != nil {
			t.Fatalf("Init #%d: %v", i+1, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		t.Fatalf(".git missing: %v", err)
	}
	if head := gitCmd(t, dir, "symbolic-ref", "HEAD"); head != "refs/heads/main" {
		t.Errorf("HEAD = %q, want refs/heads/main", head)
	}
	// A work tree's repository, though .git holds no config.
	if bare := gitCmd(t, dir, "rev-parse", "--is-bare-repository"); bare != "false" {
		t.Errorf("--is-bare-repository = %q, want false", bare)
	}
	safeDirs := func(dir string) (n int) {
		cmd := exec.Command("git", "config", "--global", "--get-all", "safe.directory")
		out, _ := cmd.Output() // exit 1: none listed
		for _, v := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if v == filepath.ToSlash(dir) {
				n++
			}
		}
		return n
	}
	// A work tree of this user's needs no safe.directory entry.
	if n := safeDirs(dir); n != 0 {
		t.Errorf("safe.directory lists %s, which this user owns, %d times, want 0", dir, n)
	}
	if err := gitreview.Init(ctx, dir); err != nil {
		t.Fatal(err)
	}
	// One owned by another user is listed, once (only root can make one).
	if os.Geteuid() == 0 {
		other := filepath.Join(t.TempDir(), "theirs")
		if err := os.MkdirAll(other, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := gitreview.Init(ctx, other); err != nil {
				t.Fatalf("Init of another user's directory #%d: %v", i+1, err)
			}
		}
		if n := safeDirs(other); n != 1 {
			t.Errorf("safe.directory lists %s, owned by another user, %d times, want 1", other, n)
		}
		if head := gitCmd(t, other, "symbolic-ref", "HEAD"); head != "refs/heads/main" {
			t.Errorf("HEAD of another user's repository = %q, want refs/heads/main", head)
		}
	}

	// Inside an existing work tree Init is a no-op.
	write(t, filepath.Join(dir, "f.txt"), "f")
	gitCmd(t, dir, "add", "f.txt")
	gitCmd(t, dir, "commit", "-q", "-m", "c")
	sub := filepath.Join(dir, "pkg", "sub")
	if err := gitreview.Init(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sub, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Init created a nested repository: %v", err)
	}
	if err := gitreview.Init(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, dir, "rev-list", "--count", "HEAD"); got != "1" {
		t.Errorf("history changed: %s commits", got)
	}
}

func TestInitWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := gitreview.Init(ctx, t.TempDir())
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Init without git = %v, want an error wrapping exec.ErrNotFound", err)
	}
}

// server serves the routes for one workspace root. The wrap requires an
// X-Test-Auth header so the tests see that every route is wrapped.
func server(t *testing.T, root string) *httptest.Server {
	t.Helper()
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
	gitreview.Routes(mux, func() []string { return []string{root} }, wrap)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, target string, auth bool) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+target, nil)
	if auth {
		req.Header.Set("X-Test-Auth", "ok")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func query(route string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return route + "?" + v.Encode()
}

func legacy(route, abs string) string {
	return route + (&url.URL{Path: abs}).EscapedPath()
}

func TestHTTP(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	if err := gitreview.Init(ctx, root); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "a file.txt"), "one\n")
	gitCmd(t, root, "add", "-A")
	gitCmd(t, root, "commit", "-q", "-m", "c")
	write(t, filepath.Join(root, "a file.txt"), "two\n")
	write(t, filepath.Join(root, "new.txt"), "new\n")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "secret.txt"), "secret\n")
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret-link.txt")); err != nil {
		t.Fatal(err)
	}
	srv := server(t, root)

	changes := `[{"status":"UPDATED","path":"a file.txt"},{"status":"ADDED","path":"escape"},{"status":"ADDED","path":"new.txt"},{"status":"ADDED","path":"secret-link.txt"}]`
	const forbidden = `{"detail":"Path is outside the workspace"}`
	for _, tc := range []struct {
		name   string
		target string
		noAuth bool
		status int
		body   string // exact JSON when set
		detail string // substring of the body when set
	}{
		{name: "changes", target: query("/api/git/changes", "path", root), status: 200, body: changes},
		{name: "changes nested", target: query("/api/git/changes", "path", filepath.Join(root, "a file.txt")), status: 200, body: changes},
		{name: "changes legacy", target: legacy("/api/git/changes", root), status: 200, body: changes},
		{name: "diff", target: query("/api/git/diff", "path", filepath.Join(root, "a file.txt")), status: 200, body: `{"modified":"two\n","original":"one\n"}`},
		{name: "diff new file", target: query("/api/git/diff", "path", filepath.Join(root, "new.txt")), status: 200, body: `{"modified":"new\n","original":null}`},
		{name: "diff legacy", target: legacy("/api/git/diff", filepath.Join(root, "a file.txt")), status: 200, body: `{"modified":"two\n","original":"one\n"}`},
		{name: "diff ref", target: query("/api/git/diff", "path", filepath.Join(root, "a file.txt"), "ref", "HEAD"), status: 200, body: `{"modified":"two\n","original":"one\n"}`},
		{name: "diff ref and commit", target: query("/api/git/diff", "path", filepath.Join(root, "a file.txt"), "ref", "HEAD", "commit", "HEAD"), status: 422, body: `{"detail":[{"loc":["query","commit"],"msg":"Value error, ref and commit are mutually exclusive","type":"value_error"}]}`},
		{name: "diff option-like commit", target: query("/api/git/diff", "path", filepath.Join(root, "a file.txt"), "commit", "--output=/tmp/x"), status: 422, body: `{"detail":[{"loc":["query","commit"],"msg":"Value error, invalid ref","type":"value_error"}]}`},
		{name: "changes option-like ref", target: query("/api/git/changes", "path", root, "ref", "-p"), status: 422, body: `{"detail":[{"loc":["query","ref"],"msg":"Value error, invalid ref","type":"value_error"}]}`},
		{name: "changes unknown ref", target: query("/api/git/changes", "path", root, "ref", "nope"), status: 400, detail: "detail"},
		{name: "diff unknown commit", target: query("/api/git/diff", "path", filepath.Join(root, "a file.txt"), "commit", "nope"), status: 400, detail: "detail"},
		{name: "changes missing path", target: "/api/git/changes", status: 422, body: `{"detail":[{"loc":["query","path"],"msg":"Field required","type":"missing"}]}`},
		{name: "diff missing path", target: "/api/git/diff?ref=HEAD", status: 422, body: `{"detail":[{"loc":["query","path"],"msg":"Field required","type":"missing"}]}`},
		{name: "changes relative", target: query("/api/git/changes", "path", "ws"), status: 422, body: `{"detail":[{"loc":["query","path"],"msg":"Value error, Path must be absolute","type":"value_error"}]}`},
		{name: "diff relative", target: query("/api/git/diff", "path", "ws/a file.txt"), status: 422, detail: `"loc":["query","path"]`},
		{name: "changes outside", target: query("/api/git/changes", "path", outside), status: 403, body: forbidden},
		{name: "diff outside", target: query("/api/git/diff", "path", filepath.Join(outside, "secret.txt")), status: 403, body: forbidden},
		{name: "changes legacy outside", target: legacy("/api/git/changes", outside), status: 403, body: forbidden},
		{name: "changes traversal", target: query("/api/git/changes", "path", root+"/../outside"), status: 403, body: forbidden},
		{name: "diff traversal", target: query("/api/git/diff", "path", root+"/../outside/secret.txt"), status: 403, body: forbidden},
		{name: "diff deep traversal", target: query("/api/git/diff", "path", root+"/../../../../etc/passwd"), status: 403, body: forbidden},
		{name: "changes symlinked dir escape", target: query("/api/git/changes", "path", filepath.Join(root, "escape")), status: 403, body: forbidden},
		{name: "diff symlinked dir escape", target: query("/api/git/diff", "path", filepath.Join(root, "escape", "secret.txt")), status: 403, body: forbidden},
		{name: "diff symlinked file escape", target: query("/api/git/diff", "path", filepath.Join(root, "secret-link.txt")), status: 403, body: forbidden},
		{name: "root prefix is not a root", target: query("/api/git/changes", "path", root+"x"), status: 403, body: forbidden},
		{name: "wrapped", target: query("/api/git/changes", "path", root), noAuth: true, status: 401},
		{name: "legacy wrapped", target: legacy("/api/git/diff", filepath.Join(root, "a file.txt")), noAuth: true, status: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, srv, tc.target, !tc.noAuth)
			if status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", status, tc.status, body)
			}
			if tc.body != "" && string(body) != tc.body {
				t.Errorf("body = %s\nwant   %s", body, tc.body)
			}
			if tc.detail != "" && !strings.Contains(string(body), tc.detail) {
				t.Errorf("body = %s, want it to contain %q", body, tc.detail)
			}
			if tc.status >= 400 && tc.status != 401 && !json.Valid(body) {
				t.Errorf("error body is not JSON: %s", body)
			}
		})
	}
}

func TestHTTPNotARepository(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "f.txt"), "f")
	srv := server(t, root)
	if status, body := get(t, srv, query("/api/git/changes", "path", root), true); status != 200 || string(body) != "[]" {
		t.Errorf("changes = %d %s, want 200 []", status, body)
	}
	if status, body := get(t, srv, query("/api/git/diff", "path", filepath.Join(root, "f.txt")), true); status != 200 || string(body) != `{"modified":null,"original":null}` {
		t.Errorf("diff = %d %s, want 200 with both null", status, body)
	}
}
