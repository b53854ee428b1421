package skills_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/skills"
)

// write creates files (relative path -> content) under root.
func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func byName(sks []skills.Skill) map[string]skills.Skill {
	m := map[string]skills.Skill{}
	for _, s := range sks {
		m[s.Name] = s
	}
	return m
}

func names(sks []skills.Skill) []string {
	var out []string
	for _, s := range sks {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func TestFrontMatterVariants(t *testing.T) {
	tests := []struct {
		name     string
		file     string // under skills/
		content  string
		want     skills.Skill // Path and Source are checked separately
		wantDesc string
	}{
		{
			name:    "no front matter is a repo skill named after the file",
			file:    "style.md",
			content: "Use tabs.\n",
			want:    skills.Skill{Name: "style", Type: "repo", Content: "Use tabs.", Triggers: []string{}},
		},
		{
			name:    "triggers make a knowledge skill",
			file:    "git.md",
			content: "---\ntriggers:\n  - git\n  - version control\n---\n\n# Git\nAlways rebase.\n",
			want:    skills.Skill{Name: "git", Type: "knowledge", Content: "# Git\nAlways rebase.", Triggers: []string{"git", "version control"}},
		},
		{
			name:    "name, description and explicit type",
			file:    "f.md",
			content: "---\nname: docker-helper\ndescription: Docker tips\ntype: knowledge\ntriggers: [docker]\nversion: 1.0.0\nagent: CodeActAgent\ninputs:\n  - name: X\n---\nbody",
			want:    skills.Skill{Name: "docker-helper", Type: "knowledge", Content: "body", Triggers: []string{"docker"}, Description: "Docker tips"},
		},
		{
			name:    "singular trigger as a string",
			file:    "one.md",
			content: "---\ntrigger: npm\n---\nnpm body",
			want:    skills.Skill{Name: "one", Type: "knowledge", Content: "npm body", Triggers: []string{"npm"}},
		},
		{
			name:    "keywords alias, merged and deduplicated with triggers",
			file:    "kw.md",
			content: "---\nkeywords: [k8s, kubernetes]\ntriggers: [kubernetes, helm]\n---\nk body",
			want:    skills.Skill{Name: "kw", Type: "knowledge", Content: "k body", Triggers: []string{"k8s", "kubernetes", "helm"}},
		},
		{
			name:    "explicit repo type keeps triggers but stays always-on",
			file:    "r.md",
			content: "---\ntype: repo\ntriggers: [x]\n---\nrepo body",
			want:    skills.Skill{Name: "r", Type: "repo", Content: "repo body", Triggers: []string{"x"}},
		},
		{
			name:    "knowledge without triggers stays knowledge",
			file:    "k.md",
			content: "---\ntype: knowledge\n---\nk",
			want:    skills.Skill{Name: "k", Type: "knowledge", Content: "k", Triggers: []string{}},
		},
		{
			name:    "empty front matter and unknown keys",
			file:    "e.md",
			content: "---\n---\nplain",
			want:    skills.Skill{Name: "e", Type: "repo", Content: "plain", Triggers: []string{}},
		},
		{
			name:    "unknown keys ignored, CRLF and BOM handled, numeric trigger kept as text",
			file:    "crlf.md",
			content: "\ufeff---\r\nfoo: {a: 1}\r\ntriggers:\r\n  - 42\r\n---\r\nline1\r\nline2\r\n",
			want:    skills.Skill{Name: "crlf", Type: "knowledge", Content: "line1\nline2", Triggers: []string{"42"}},
		},
		{
			name:    "disable-model-invocation",
			file:    "d.md",
			content: "---\ndisable-model-invocation: true\n---\nd",
			want:    skills.Skill{Name: "d", Type: "repo", Content: "d", Triggers: []string{}, DisableModelInvocation: true},
		},
		{
			name:    "legacy task type is keyword-activated",
			file:    "task.md",
			content: "---\ntype: task\ntriggers: [/deploy]\n---\ndeploy it",
			want:    skills.Skill{Name: "task", Type: "knowledge", Content: "deploy it", Triggers: []string{"/deploy"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"skills/" + tt.file: tt.content})
			got, probs := skills.LoadDir(dir, "user")
			if len(probs) != 0 {
				t.Fatalf("problems: %+v", probs)
			}
			if len(got) != 1 {
				t.Fatalf("got %d skills: %+v", len(got), got)
			}
			g := got[0]
			if g.Source != "user" {
				t.Errorf("Source = %q", g.Source)
			}
			wantPath := filepath.Join(dir, "skills", tt.file)
			if g.Path != wantPath {
				t.Errorf("Path = %q, want %q", g.Path, wantPath)
			}
			g.Path, g.Source = "", ""
			if !reflect.DeepEqual(g, tt.want) {
				t.Errorf("got  %+v\nwant %+v", g, tt.want)
			}
		})
	}
}

func TestThirdPartyFiles(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  map[string]string // skill name -> content
	}{
		{
			name:  "upper-case names",
			files: map[string]string{"AGENTS.md": "agents rules", "CLAUDE.md": "claude rules", "GEMINI.md": "gemini rules", ".cursorrules": "cursor rules"},
			want:  map[string]string{"agents": "agents rules", "claude": "claude rules", "gemini": "gemini rules", "cursorrules": "cursor rules"},
		},
		{
			name:  "mixed and lower case",
			files: map[string]string{"Agents.md": "a", "claude.md": "c", ".CursorRules": "r"},
			want:  map[string]string{"agents": "a", "claude": "c", "cursorrules": "r"},
		},
		{
			name:  "agent.md is the agents skill",
			files: map[string]string{"agent.md": "singular"},
			want:  map[string]string{"agents": "singular"},
		},
		{
			name:  "AGENTS.md wins over agent.md",
			files: map[string]string{"AGENTS.md": "plural", "agent.md": "singular"},
			want:  map[string]string{"agents": "plural"},
		},
		{
			name:  "front matter in a third-party file is content",
			files: map[string]string{"AGENTS.md": "---\ntriggers: [x]\n---\nbody"},
			want:  map[string]string{"agents": "---\ntriggers: [x]\n---\nbody"},
		},
		{
			name:  "other markdown at the project root is not a skill",
			files: map[string]string{"README.md": "readme", "NOTES.md": "notes"},
			want:  map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tt.files)
			got, probs := skills.LoadDir(dir, "project")
			if len(probs) != 0 {
				t.Fatalf("problems: %+v", probs)
			}
			m := map[string]string{}
			for _, s := range got {
				if s.Type != "repo" || s.Source != "project" || len(s.Triggers) != 0 {
					t.Errorf("skill %s: type %q source %q triggers %v", s.Name, s.Type, s.Source, s.Triggers)
				}
				m[s.Name] = s.Content
			}
			if !reflect.DeepEqual(m, tt.want) {
				t.Errorf("got %v, want %v", m, tt.want)
			}
		})
	}
}

func TestProjectLayout(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "sub", "proj")
	write(t, root, map[string]string{
		".git/HEAD":                                  "ref: refs/heads/main\n",
		"AGENTS.md":                                  "root agents",
		".openhands/skills/rootonly.md":              "from git root",
		".openhands/skills/shared.md":                "root version",
		"sub/proj/CLAUDE.md":                         "claude here",
		"sub/proj/AGENTS.md":                         "project agents",
		"sub/proj/.openhands/skills/shared.md":       "project version",
		"sub/proj/.openhands/skills/README.md":       "not a skill",
		"sub/proj/.openhands/microagents/old.md":     "---\ntriggers: [legacy]\n---\nold style",
		"sub/proj/.agents/skills/new.md":             "agents dir",
		"sub/proj/.agents/skills/pdf-tools/SKILL.md": "---\nname: pdf-tools\ndescription: Extract PDF text.\ntriggers: [pdf]\n---\n# PDF\nUse pdftotext.",
		"sub/proj/.openhands/skills/lint/SKILL.md":   "Run the linter.",
		"sub/proj/.openhands/skills/lint/notes.md":   "not loaded",
		"sub/proj/.agents/skills/nodir/other.md":     "no SKILL.md here",
	})
	got, probs := skills.LoadDir(proj, "project")
	if len(probs) != 0 {
		t.Fatalf("problems: %+v", probs)
	}
	wantNames := []string{"agents", "claude", "lint", "new", "old", "pdf-tools", "rootonly", "shared"}
	if n := names(got); !reflect.DeepEqual(n, wantNames) {
		t.Fatalf("names = %v, want %v", n, wantNames)
	}
	m := byName(got)
	if c := m["shared"].Content; c != "project version" {
		t.Errorf("shared: project dir should win over git root, got %q", c)
	}
	if c := m["agents"].Content; c != "project agents" {
		t.Errorf("agents = %q", c)
	}
	if s := m["old"]; s.Type != "knowledge" || !reflect.DeepEqual(s.Triggers, []string{"legacy"}) {
		t.Errorf("legacy microagent: %+v", s)
	}
	pdf := m["pdf-tools"]
	if pdf.Type != "agentskills" || !pdf.IsAgentSkillsFormat || pdf.Description != "Extract PDF text." ||
		!reflect.DeepEqual(pdf.Triggers, []string{"pdf"}) || pdf.Content != "# PDF\nUse pdftotext." {
		t.Errorf("pdf-tools: %+v", pdf)
	}
	if want := filepath.Join(proj, ".agents", "skills", "pdf-tools", "SKILL.md"); pdf.Path != want {
		t.Errorf("pdf-tools path = %q, want %q", pdf.Path, want)
	}
	lint := m["lint"]
	if lint.Name != "lint" || lint.Type != "agentskills" || lint.Content != "Run the linter." {
		t.Errorf("lint (name from directory): %+v", lint)
	}
	for _, s := range got {
		if s.Source != "project" {
			t.Errorf("%s: source %q", s.Name, s.Source)
		}
	}
}

func TestNonProjectLayout(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"skills/a.md":            "a",
		"skills/b/SKILL.md":      "b",
		"microagents/c.md":       "c",
		"microagents/a.md":       "shadowed by skills/a.md",
		"d.md":                   "d",
		"e/SKILL.md":             "e",
		"README.md":              "skipped",
		"skills/README.md":       "skipped",
		".openhands/skills/x.md": "project layout only",
	})
	got, probs := skills.LoadDir(dir, "public")
	if len(probs) != 0 {
		t.Fatalf("problems: %+v", probs)
	}
	if n := names(got); !reflect.DeepEqual(n, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("names = %v", n)
	}
	if c := byName(got)["a"].Content; c != "a" {
		t.Errorf("a = %q: skills/ should win over microagents/", c)
	}
}

func TestMissingDirectory(t *testing.T) {
	for _, src := range []string{"project", "user", ""} {
		got, probs := skills.LoadDir(filepath.Join(t.TempDir(), "nope"), src)
		if len(got) != 0 || len(probs) != 0 {
			t.Errorf("source %q: got %v %v", src, got, probs)
		}
	}
	got, probs := skills.LoadDir("", "user")
	if got != nil || probs != nil {
		t.Errorf("empty dir: %v %v", got, probs)
	}
}

func TestProblems(t *testing.T) {
	big := "---\ntriggers: [x]\n---\n" + strings.Repeat("a", skills.MaxFileSize)
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{"malformed YAML", "---\ntriggers: [unclosed\n---\nbody", "invalid YAML front matter"},
		{"bad indentation", "---\nname: a\n  b: c\n---\nbody", "invalid YAML front matter"},
		{"unclosed front matter", "---\nname: a\nbody", "never closed"},
		{"triggers is a string", "---\ntriggers: git\n---\nbody", "triggers must be a list of strings"},
		{"triggers is a mapping", "---\ntriggers: {a: b}\n---\nbody", "triggers must be a list of strings"},
		{"trigger item is a list", "---\ntriggers:\n  - [a, b]\n---\nbody", "triggers[0] must be a string"},
		{"null trigger item", "---\nkeywords:\n  -\n---\nbody", "keywords[0] must be a string"},
		{"empty trigger", "---\ntriggers: ['  ']\n---\nbody", "triggers[0] is empty"},
		{"front matter is a list", "---\n- a\n- b\n---\nbody", "must be a YAML mapping"},
		{"name is a list", "---\nname: [a]\n---\nbody", "name must be a string"},
		{"unknown type", "---\ntype: magic\n---\nbody", `type must be "repo" or "knowledge"`},
		{"bad disable flag", "---\ndisable-model-invocation: maybe\n---\nbody", "must be true or false"},
		{"empty body", "---\ntriggers: [x]\n---\n\n  \n", "empty body"},
		{"empty file", "", "empty body"},
		{"oversized", big, "too large"},
		{"not UTF-8", "---\nname: x\n---\n\xff\xfe", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{
				"skills/bad.md":    tt.content,
				"skills/good.md":   "---\ntriggers: [ok]\n---\ngood",
				"skills/zzz.md":    "also good",
				"microagents/m.md": "legacy good",
			})
			got, probs := skills.LoadDir(dir, "user")
			if n := names(got); !reflect.DeepEqual(n, []string{"good", "m", "zzz"}) {
				t.Errorf("other files should still load, got %v", n)
			}
			if len(probs) != 1 {
				t.Fatalf("problems = %+v", probs)
			}
			if want := filepath.Join(dir, "skills", "bad.md"); probs[0].File != want {
				t.Errorf("File = %q, want %q", probs[0].File, want)
			}
			if !strings.Contains(probs[0].Error, tt.wantErr) {
				t.Errorf("Error = %q, want it to contain %q", probs[0].Error, tt.wantErr)
			}
		})
	}
}

func TestProblemEmptyThirdPartyAndSkillMD(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"AGENTS.md":                    "  \n",
		".openhands/skills/x/SKILL.md": "---\nname: [bad\n---\nbody",
		".openhands/skills/ok.md":      "fine",
	})
	got, probs := skills.LoadDir(dir, "project")
	if n := names(got); !reflect.DeepEqual(n, []string{"ok"}) {
		t.Errorf("names = %v", n)
	}
	files := map[string]bool{}
	for _, p := range probs {
		files[p.File] = true
	}
	for _, f := range []string{filepath.Join(dir, "AGENTS.md"), filepath.Join(dir, ".openhands", "skills", "x", "SKILL.md")} {
		if !files[f] {
			t.Errorf("no problem for %s: %+v", f, probs)
		}
	}
}

func TestOversizedThirdParty(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"CLAUDE.md": strings.Repeat("x", skills.MaxFileSize+1), "GEMINI.md": strings.Repeat("y", skills.MaxFileSize)})
	got, probs := skills.LoadDir(dir, "project")
	if n := names(got); !reflect.DeepEqual(n, []string{"gemini"}) {
		t.Errorf("a file of exactly 256 KiB loads: names = %v", n)
	}
	if len(probs) != 1 || probs[0].File != filepath.Join(dir, "CLAUDE.md") || !strings.Contains(probs[0].Error, "too large") {
		t.Errorf("problems = %+v", probs)
	}
}

func TestMerge(t *testing.T) {
	mk := func(name, source, content string) skills.Skill {
		return skills.Skill{Name: name, Source: source, Content: content, Type: "repo"}
	}
	tests := []struct {
		name string
		sets [][]skills.Skill
		want map[string]string // name -> content
	}{
		{
			name: "project beats user beats public beats sandbox",
			sets: [][]skills.Skill{
				{mk("a", "project", "project-a"), mk("b", "user", "user-b")},
				{mk("a", "user", "user-a"), mk("b", "public", "public-b"), mk("c", "sandbox", "sandbox-c")},
				{mk("a", "public", "public-a"), mk("c", "public", "public-c")},
			},
			want: map[string]string{"a": "project-a", "b": "user-b", "c": "public-c"},
		},
		{
			name: "org between user and project, inline highest",
			sets: [][]skills.Skill{
				{mk("x", "inline", "inline-x"), mk("y", "org", "org-y")},
				{mk("x", "project", "project-x"), mk("y", "user", "user-y")},
			},
			want: map[string]string{"x": "inline-x", "y": "org-y"},
		},
		{
			name: "same rank: later wins",
			sets: [][]skills.Skill{{mk("a", "user", "first")}, {mk("a", "user", "second")}},
			want: map[string]string{"a": "second"},
		},
		{
			name: "nothing",
			sets: nil,
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := skills.Merge(tt.sets...)
			m := map[string]string{}
			for _, s := range got {
				m[s.Name] = s.Content
			}
			if !reflect.DeepEqual(m, tt.want) {
				t.Errorf("got %v, want %v", m, tt.want)
			}
			if !slices.IsSortedFunc(got, func(a, b skills.Skill) int { return strings.Compare(a.Name, b.Name) }) {
				t.Errorf("not sorted: %v", names(got))
			}
		})
	}
}

func TestMergeAcrossLoadedSources(t *testing.T) {
	userDir, projDir := t.TempDir(), t.TempDir()
	write(t, userDir, map[string]string{"skills/git.md": "---\ntriggers: [git]\n---\nuser git", "skills/u.md": "user only"})
	write(t, projDir, map[string]string{".openhands/skills/git.md": "---\ntriggers: [git]\n---\nproject git"})
	u, _ := skills.LoadDir(userDir, "user")
	p, _ := skills.LoadDir(projDir, "project")
	for _, order := range [][][]skills.Skill{{u, p}, {p, u}} {
		m := byName(skills.Merge(order...))
		if m["git"].Content != "project git" || m["git"].Source != "project" || m["u"].Content != "user only" {
			t.Errorf("merge: %+v", m)
		}
	}
}
