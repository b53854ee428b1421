package agentserver_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/agentserver"
)

type installedSkill struct {
	Name        string  `json:"name"`
	Version     string  `json:"version"`
	Description string  `json:"description"`
	Enabled     bool    `json:"enabled"`
	Source      string  `json:"source"`
	ResolvedRef *string `json:"resolved_ref"`
	RepoPath    *string `json:"repo_path"`
	InstalledAt string  `json:"installed_at"`
	InstallPath string  `json:"install_path"`
}

func writeSkill(t *testing.T, dir, name, description, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestInstalledSkills walks OpenHands' installed-skills routes: install
// from a local directory and from a git repository, list, get, disable,
// refresh (the new content, the enabled state kept), uninstall; and every
// bad input is a 4xx with a detail.
func TestInstalledSkills(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "pdf")
	writeSkill(t, src, "pdf-tools", "Work with PDFs", "Use pdftotext.")

	var sk installedSkill
	r := e.call("POST", "/api/skills/install", map[string]any{"source": src})
	if r.status != 200 {
		t.Fatalf("install: %d %s", r.status, r.body)
	}
	r.json(t, &sk)
	if sk.Name != "pdf-tools" || !sk.Enabled || sk.Source != src || sk.Description != "Work with PDFs" || sk.InstalledAt == "" || sk.ResolvedRef != nil {
		t.Fatalf("installed %s", r.body)
	}
	if !strings.Contains(string(r.body), `"resolved_ref":null`) || !strings.Contains(string(r.body), `"repo_path":null`) || !strings.Contains(string(r.body), `"version":""`) {
		t.Fatalf("installed skill lacks OpenHands' null fields: %s", r.body)
	}
	if b, err := os.ReadFile(filepath.Join(sk.InstallPath, "SKILL.md")); err != nil || !strings.Contains(string(b), "pdftotext") {
		t.Fatalf("installed copy: %q %v", b, err)
	}
	if r := e.call("POST", "/api/skills/install", map[string]any{"source": src}); r.status != 409 {
		t.Fatalf("install twice: %d %s", r.status, r.body)
	}
	if r := e.call("PATCH", "/api/skills/installed/pdf-tools", map[string]any{"enabled": false}); r.status != 200 || string(r.body) != `{"enabled":false,"name":"pdf-tools"}` {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/skills/install", map[string]any{"source": src, "force": true}); r.status != 200 {
		t.Fatalf("install with force: %d %s", r.status, r.body)
	} else if r.json(t, &sk); sk.Enabled {
		t.Fatalf("force lost the disabled state: %s", r.body)
	}

	// Refresh fetches the source again.
	writeSkill(t, src, "pdf-tools", "Work with PDF files", "Use qpdf.")
	r = e.call("POST", "/api/skills/installed/pdf-tools/refresh", nil)
	var upd struct {
		Message string         `json:"message"`
		Skill   installedSkill `json:"skill"`
	}
	if r.status != 200 {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	r.json(t, &upd)
	if upd.Message != "Skill 'pdf-tools' updated" || upd.Skill.Description != "Work with PDF files" || upd.Skill.Enabled {
		t.Fatalf("refresh: %s", r.body)
	}
	if b, _ := os.ReadFile(filepath.Join(upd.Skill.InstallPath, "SKILL.md")); !strings.Contains(string(b), "qpdf") {
		t.Fatalf("refreshed copy %q", b)
	}

	// From a git repository (a monorepo path), pinned to the commit.
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q")
	writeSkill(t, filepath.Join(repo, "skills", "gitty"), "gitty", "From git", "Version one.")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-qm", "one")
	first := gitRun(t, repo, "rev-parse", "HEAD")
	r = e.call("POST", "/api/skills/install", map[string]any{"source": "file://" + repo, "repo_path": "skills/gitty"})
	if r.status != 200 {
		t.Fatalf("install from git: %d %s", r.status, r.body)
	}
	r.json(t, &sk)
	if sk.Name != "gitty" || sk.ResolvedRef == nil || *sk.ResolvedRef != first || sk.RepoPath == nil || *sk.RepoPath != "skills/gitty" {
		t.Fatalf("git install: %s", r.body)
	}
	if _, err := os.Stat(filepath.Join(sk.InstallPath, ".git")); err == nil {
		t.Fatal("the installed copy holds .git")
	}
	writeSkill(t, filepath.Join(repo, "skills", "gitty"), "gitty", "From git", "Version two.")
	gitRun(t, repo, "commit", "-qam", "two")
	second := gitRun(t, repo, "rev-parse", "HEAD")
	r = e.call("POST", "/api/skills/installed/gitty/refresh", nil)
	if r.status != 200 {
		t.Fatalf("refresh from git: %d %s", r.status, r.body)
	}
	r.json(t, &upd)
	if upd.Skill.ResolvedRef == nil || *upd.Skill.ResolvedRef != second {
		t.Fatalf("refresh did not fetch the new commit: %s", r.body)
	}

	var list struct {
		Skills []installedSkill `json:"skills"`
	}
	e.call("GET", "/api/skills/installed", nil).json(t, &list)
	if len(list.Skills) != 2 || list.Skills[0].Name != "gitty" || list.Skills[1].Name != "pdf-tools" || list.Skills[1].Enabled {
		t.Fatalf("list %+v", list)
	}
	if r := e.call("GET", "/api/skills/installed/gitty", nil); r.status != 200 {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if r := e.call("DELETE", "/api/skills/installed/gitty", nil); r.status != 200 || string(r.body) != `{"message":"Skill 'gitty' uninstalled"}` {
		t.Fatalf("uninstall: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(sk.InstallPath); err == nil {
		t.Fatal("uninstall left the files")
	}
	// A directory removed by hand is forgotten.
	if err := os.RemoveAll(upd.Skill.InstallPath); err == nil {
		if err := os.RemoveAll(filepath.Join(filepath.Dir(upd.Skill.InstallPath), "pdf-tools")); err != nil {
			t.Fatal(err)
		}
	}
	e.call("GET", "/api/skills/installed", nil).json(t, &list)
	if len(list.Skills) != 0 {
		t.Fatalf("list after removal %+v", list)
	}
}

func TestInstalledSkillsBadInput(t *testing.T) {
	e := newEnv(t)
	empty := t.TempDir()
	noName := filepath.Join(t.TempDir(), "x")
	writeSkill(t, noName, "Not_A_Name", "bad", "body")
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		detail             string
	}{
		{"refresh unknown", "POST", "/api/skills/installed/nope/refresh", nil, 404, "Skill 'nope' is not installed"},
		{"get unknown", "GET", "/api/skills/installed/nope", nil, 404, "Skill 'nope' is not installed"},
		{"patch unknown", "PATCH", "/api/skills/installed/nope", map[string]any{"enabled": true}, 404, "Skill 'nope' is not installed"},
		{"delete unknown", "DELETE", "/api/skills/installed/nope", nil, 404, "Skill 'nope' is not installed"},
		{"bad name", "POST", "/api/skills/installed/Bad_Name/refresh", nil, 422, ""},
		{"bad name get", "GET", "/api/skills/installed/a..b", nil, 422, ""},
		{"patch no body", "PATCH", "/api/skills/installed/nope", nil, 422, ""},
		{"patch not bool", "PATCH", "/api/skills/installed/nope", map[string]any{"enabled": "yes"}, 422, ""},
		{"install no body", "POST", "/api/skills/install", nil, 422, ""},
		{"install empty source", "POST", "/api/skills/install", map[string]any{"source": ""}, 422, ""},
		{"install unknown field", "POST", "/api/skills/install", map[string]any{"source": empty, "zap": 1}, 422, ""},
		{"install missing dir", "POST", "/api/skills/install", map[string]any{"source": "/nonexistent/skill"}, 400, "Failed to fetch skill source. Check that the source is valid."},
		{"install relative", "POST", "/api/skills/install", map[string]any{"source": "skills/x"}, 400, ""},
		{"install no SKILL.md", "POST", "/api/skills/install", map[string]any{"source": empty}, 422, "Invalid skill. Ensure the source contains a valid SKILL.md."},
		{"install bad skill name", "POST", "/api/skills/install", map[string]any{"source": noName}, 422, ""},
		{"install unreachable git", "POST", "/api/skills/install", map[string]any{"source": "https://user:tok-9d8c7b6a@127.0.0.1:1/x.git"}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, tc.body)
			var body struct{ Detail any }
			if r.status != tc.status || json.Unmarshal(r.body, &body) != nil || body.Detail == nil {
				t.Fatalf("%d %s, want %d with a detail", r.status, r.body, tc.status)
			}
			if tc.detail != "" && body.Detail != tc.detail {
				t.Fatalf("detail %v, want %q", body.Detail, tc.detail)
			}
			if strings.Contains(string(r.body), "tok-9d8c7b6a") {
				t.Fatalf("the answer holds the source's credentials: %s", r.body)
			}
		})
	}
}

// TestInstalledSkillsLoadAsUserSkills: an enabled installed skill is a user
// skill (POST /api/skills with load_user), a disabled one is not, and a
// user skill of the same name wins.
func TestInstalledSkillsLoadAsUserSkills(t *testing.T) {
	user := t.TempDir()
	e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) { c.SkillDirs.User = user }})
	src := filepath.Join(t.TempDir(), "s")
	writeSkill(t, src, "lint-rules", "Installed lint rules", "Run the linter.")
	if r := e.call("POST", "/api/skills/install", map[string]any{"source": src}); r.status != 200 {
		t.Fatalf("install: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(user, "installed", "lint-rules", "SKILL.md")); err != nil {
		t.Fatalf("not installed under the user skills directory: %v", err)
	}
	find := func() (string, bool) {
		t.Helper()
		var resp struct {
			Skills []struct {
				Name, Source, Description string
			} `json:"skills"`
		}
		e.call("POST", "/api/skills", map[string]any{"load_public": false, "load_org": false, "load_project": false}).json(t, &resp)
		for _, s := range resp.Skills {
			if s.Name == "lint-rules" {
				return s.Source + ":" + s.Description, true
			}
		}
		return "", false
	}
	if got, ok := find(); !ok || got != "user:Installed lint rules" {
		t.Fatalf("enabled installed skill: %q %v", got, ok)
	}
	if r := e.call("PATCH", "/api/skills/installed/lint-rules", map[string]any{"enabled": false}); r.status != 200 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if got, ok := find(); ok {
		t.Fatalf("disabled installed skill still loads: %q", got)
	}
	if r := e.call("PATCH", "/api/skills/installed/lint-rules", map[string]any{"enabled": true}); r.status != 200 {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	writeSkill(t, filepath.Join(user, "lint-rules"), "lint-rules", "The user's own", "Mine.")
	if got, _ := find(); got != "user:The user's own" {
		t.Fatalf("a user skill of the same name does not win: %q", got)
	}
}
