package gittest_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acs-project/acs/internal/gittest"
)

// client runs git as a test's git client would: clean config, no terminal
// prompts, plus extra environment.
type client struct {
	t    *testing.T
	home string
}

func newClient(t *testing.T) *client {
	t.Helper()
	return &client{t: t, home: t.TempDir()}
}

// run runs git in dir and returns its combined output and error.
func (c *client) run(dir string, extraEnv []string, args ...string) (string, error) {
	c.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"HOME=" + c.home,
		"XDG_CONFIG_HOME=" + filepath.Join(c.home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		"PATH=" + os.Getenv("PATH"),
		"GIT_AUTHOR_NAME=Client", "GIT_AUTHOR_EMAIL=client@example.com",
		"GIT_COMMITTER_NAME=Client", "GIT_COMMITTER_EMAIL=client@example.com",
	}, extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs git and fails the test if it fails.
func (c *client) must(dir string, extraEnv []string, args ...string) string {
	c.t.Helper()
	out, err := c.run(dir, extraEnv, args...)
	if err != nil {
		c.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// askpass writes a GIT_ASKPASS script answering "Username" prompts with user
// and "Password" prompts with password, and returns the env setting it.
func askpass(t *testing.T, user, password string) []string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "askpass.sh")
	body := "#!/bin/sh\ncase \"$1\" in\nUsername*) printf '%s\\n' '" + user + "' ;;\nPassword*) printf '%s\\n' '" + password + "' ;;\nesac\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"GIT_ASKPASS=" + script}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requestsFor returns the server's requests whose path starts with prefix.
func requestsFor(s *gittest.Server, prefix string) []gittest.Request {
	var out []gittest.Request
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

var testRepo = gittest.Repo{
	Files: map[string]string{
		"README.md":      "# widgets\n",
		"scripts/run.sh": "#!/bin/sh\necho run\n",
		"dir/a.txt":      "a on main\n",
	},
	Branches: map[string]map[string]string{
		"feature": {"dir/a.txt": "a on feature\n", "new.txt": "new\n"},
	},
}

func TestPublicClone(t *testing.T) {
	t.Parallel()
	srv := gittest.New(t)
	srv.Create(t, "acme", "widgets", testRepo)
	c := newClient(t)
	dir := filepath.Join(t.TempDir(), "widgets")

	c.must("", nil, "clone", "--quiet", srv.URL+"/acme/widgets.git", dir)
	if got := readFile(t, filepath.Join(dir, "README.md")); got != "# widgets\n" {
		t.Errorf("README.md = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "dir/a.txt")); got != "a on main\n" {
		t.Errorf("dir/a.txt on main = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt exists on main: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "scripts/run.sh"))
	if err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("scripts/run.sh not executable: %v %v", fi, err)
	}
	if out := c.must(dir, nil, "ls-files", "--stage"); !strings.Contains(out, "100755") || !strings.Contains(out, "100644") {
		t.Errorf("unexpected modes:\n%s", out)
	}
	if out := c.must(dir, nil, "log", "-1", "--format=%an <%ae> %aI %cI"); strings.TrimSpace(out) != "ACS Test <test@example.com> 2024-01-01T00:00:00+00:00 2024-01-01T00:00:00+00:00" {
		t.Errorf("commit = %q", out)
	}

	c.must(dir, nil, "checkout", "--quiet", "feature")
	if got := readFile(t, filepath.Join(dir, "dir/a.txt")); got != "a on feature\n" {
		t.Errorf("dir/a.txt on feature = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "new.txt")); got != "new\n" {
		t.Errorf("new.txt on feature = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "README.md")); got != "# widgets\n" {
		t.Errorf("README.md on feature = %q", got)
	}

	// Without the .git suffix, and straight onto a branch.
	dir2 := filepath.Join(t.TempDir(), "w2")
	c.must("", nil, "clone", "--quiet", "--branch", "feature", srv.URL+"/acme/widgets", dir2)
	if got := readFile(t, filepath.Join(dir2, "new.txt")); got != "new\n" {
		t.Errorf("new.txt in --branch clone = %q", got)
	}

	reqs := requestsFor(srv, "/acme/widgets")
	if len(reqs) == 0 {
		t.Fatal("no requests recorded")
	}
	for _, r := range reqs {
		if r.Authenticated || r.Status != http.StatusOK {
			t.Errorf("public clone request %+v: want anonymous 200", r)
		}
	}
}

func TestPrivateClone(t *testing.T) {
	t.Parallel()
	srv := gittest.New(t)
	repo := testRepo
	repo.Private = true
	srv.Create(t, "acme", "secret", repo)
	url := srv.URL + "/acme/secret.git"

	t.Run("askpass", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		dir := filepath.Join(t.TempDir(), "secret")
		c.must("", askpass(t, "x-access-token", srv.Token()), "clone", "--quiet", url, dir)
		if got := readFile(t, filepath.Join(dir, "README.md")); got != "# widgets\n" {
			t.Errorf("README.md = %q", got)
		}
		c.must(dir, nil, "checkout", "--quiet", "feature")
		if got := readFile(t, filepath.Join(dir, "new.txt")); got != "new\n" {
			t.Errorf("new.txt on feature = %q", got)
		}
	})

	t.Run("bearer", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		dir := filepath.Join(t.TempDir(), "secret")
		c.must("", nil, "-c", "http.extraHeader=Authorization: Bearer "+srv.Token(), "clone", "--quiet", url, dir)
		if got := readFile(t, filepath.Join(dir, "README.md")); got != "# widgets\n" {
			t.Errorf("README.md = %q", got)
		}
	})

	t.Run("no credentials", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		out, err := c.run("", nil, "clone", "--quiet", url, filepath.Join(t.TempDir(), "secret"))
		if err == nil {
			t.Fatalf("clone without credentials succeeded:\n%s", out)
		}
		if !strings.Contains(out, "terminal prompts disabled") {
			t.Errorf("unexpected output:\n%s", out)
		}
	})

	t.Run("wrong token", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		out, err := c.run("", askpass(t, "x-access-token", "not-the-token"), "clone", "--quiet", url, filepath.Join(t.TempDir(), "secret"))
		if err == nil {
			t.Fatalf("clone with wrong token succeeded:\n%s", out)
		}
		if !strings.Contains(out, "Authentication failed") {
			t.Errorf("unexpected output:\n%s", out)
		}
	})

	t.Run("http", func(t *testing.T) {
		t.Parallel()
		get := func(set func(*http.Request)) *http.Response {
			t.Helper()
			req, err := http.NewRequest("GET", url+"/info/refs?service=git-upload-pack", nil)
			if err != nil {
				t.Fatal(err)
			}
			set(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		resp := get(func(*http.Request) {})
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="gittest"` {
			t.Errorf("anonymous: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
		if resp := get(func(r *http.Request) { r.SetBasicAuth("oauth2", "wrong") }); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("wrong basic: %s", resp.Status)
		}
		if resp := get(func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") }); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("wrong bearer: %s", resp.Status)
		}
		if resp := get(func(r *http.Request) { r.SetBasicAuth("oauth2", srv.Token()) }); resp.StatusCode != http.StatusOK {
			t.Errorf("basic: %s", resp.Status)
		}

		// Protocol v2 reaches the backend (via the Git-Protocol header).
		req, err := http.NewRequest("GET", url+"/info/refs?service=git-upload-pack", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Git-Protocol", "version=2")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("version 2")) {
			t.Errorf("protocol v2: %s %v\n%s", resp.Status, err, body)
		}
	})

	// Runs after the parallel subtests above have finished.
	t.Cleanup(func() {
		var authed, unauthorized, authedPack int
		for _, r := range requestsFor(srv, "/acme/secret.git") {
			switch {
			case r.Authenticated && r.Status == http.StatusOK:
				authed++
				if r.Method == "POST" && strings.HasSuffix(r.Path, "/git-upload-pack") {
					authedPack++
				}
			case !r.Authenticated && r.Status == http.StatusUnauthorized:
				unauthorized++
			default:
				t.Errorf("unexpected request %+v", r)
			}
		}
		if authed == 0 || authedPack == 0 || unauthorized == 0 {
			t.Errorf("requests: %d authenticated (%d upload-pack), %d unauthorized; want all > 0", authed, authedPack, unauthorized)
		}
	})
}

func TestNonexistentRepo(t *testing.T) {
	t.Parallel()
	srv := gittest.New(t)
	c := newClient(t)
	out, err := c.run("", nil, "clone", "--quiet", srv.URL+"/acme/missing.git", filepath.Join(t.TempDir(), "missing"))
	if err == nil {
		t.Fatalf("clone of missing repository succeeded:\n%s", out)
	}
	if !strings.Contains(out, "not found") {
		t.Errorf("unexpected output:\n%s", out)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Status != http.StatusNotFound {
		t.Errorf("requests = %+v, want a 404", reqs)
	}
}

func TestPush(t *testing.T) {
	t.Parallel()
	srv := gittest.New(t)
	srv.Create(t, "acme", "public", gittest.Repo{Files: map[string]string{"a": "a\n"}})
	srv.Create(t, "acme", "private", gittest.Repo{Files: map[string]string{"a": "a\n"}, Private: true})
	auth := askpass(t, "x-access-token", srv.Token())

	for _, tc := range []struct {
		name string
		ok   bool
	}{{"public", false}, {"private", true}} {
		c := newClient(t)
		dir := filepath.Join(t.TempDir(), tc.name)
		url := srv.URL + "/acme/" + tc.name + ".git"
		c.must("", auth, "clone", "--quiet", url, dir)
		// Incompressible and larger than http.postBuffer, so git sends the
		// pack as a chunked request body.
		big := make([]byte, 64<<10)
		if _, err := rand.Read(big); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "b"), big, 0o644); err != nil {
			t.Fatal(err)
		}
		c.must(dir, nil, "add", "b")
		c.must(dir, nil, "commit", "--quiet", "-m", "b")
		out, err := c.run(dir, auth, "-c", "http.postBuffer=4096", "push", "--quiet", "origin", "HEAD:refs/heads/pushed")
		if (err == nil) != tc.ok {
			t.Errorf("push to %s: err = %v, want ok = %v\n%s", tc.name, err, tc.ok, out)
		}
		if tc.ok {
			out := c.must("", auth, "ls-remote", url, "refs/heads/pushed")
			if !strings.Contains(out, "refs/heads/pushed") {
				t.Errorf("pushed branch missing from ls-remote:\n%s", out)
			}
		}
	}
}

func TestConcurrentClones(t *testing.T) {
	t.Parallel()
	srv := gittest.New(t)
	srv.Create(t, "acme", "public", testRepo)
	repo := testRepo
	repo.Private = true
	srv.Create(t, "acme", "private", repo)
	auth := askpass(t, "oauth2", srv.Token())

	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 12 {
		name := []string{"public", "private"}[i%2]
		c := newClient(t)
		dir := filepath.Join(t.TempDir(), name)
		wg.Go(func() {
			out, err := c.run("", auth, "clone", "--quiet", "--branch", "feature", srv.URL+"/acme/"+name+".git", dir)
			if err != nil {
				errs <- name + ": " + err.Error() + "\n" + out
				return
			}
			if b, err := os.ReadFile(filepath.Join(dir, "new.txt")); err != nil || string(b) != "new\n" {
				errs <- name + ": new.txt = " + string(b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestStableHashes(t *testing.T) {
	t.Parallel()
	var refs []string
	for range 2 {
		srv := gittest.New(t)
		srv.Create(t, "acme", "widgets", testRepo)
		refs = append(refs, newClient(t).must("", nil, "ls-remote", srv.URL+"/acme/widgets.git"))
	}
	if refs[0] != refs[1] || !strings.Contains(refs[0], "refs/heads/feature") || !strings.Contains(refs[0], "HEAD") {
		t.Errorf("ls-remote differs or is incomplete:\n%s\n---\n%s", refs[0], refs[1])
	}
	if bytes.Count([]byte(refs[0]), []byte("\n")) != 3 { // HEAD, feature, main
		t.Errorf("unexpected refs:\n%s", refs[0])
	}
}
