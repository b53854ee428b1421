package skills_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/skills"
)

func TestMatch(t *testing.T) {
	knowledge := func(name string, triggers ...string) skills.Skill {
		return skills.Skill{Name: name, Type: "knowledge", Content: name + " content", Triggers: triggers}
	}
	all := []skills.Skill{
		knowledge("git", "git"),
		knowledge("github", "github", "gh"),
		knowledge("pr", "pull request"),
		knowledge("cpp", "c++"),
		knowledge("deploy", "/deploy"),
		knowledge("node", "node.js"),
		knowledge("k8s", "kubernetes", "k8s"),
		knowledge("lfs", "git-lfs"),
		{Name: "repo", Type: "repo", Content: "always", Triggers: []string{"always"}},
		{Name: "pdf", Type: "agentskills", Content: "pdf", Triggers: []string{"pdf"}, IsAgentSkillsFormat: true},
		{Name: "plain-agentskill", Type: "agentskills", Content: "x", Triggers: []string{}},
	}
	tests := []struct {
		name      string
		text      string
		activated map[string]bool
		want      []string // "skill=trigger"
	}{
		{"git does not fire on github", "Please open github.com", nil, []string{"github=github"}},
		{"Git at sentence end", "I use Git.", nil, []string{"git=git"}},
		{"git in parentheses", "a tool (git) here", nil, []string{"git=git"}},
		{"case-insensitive", "GIT and GitHub", nil, []string{"git=git", "github=github"}},
		{"github second occurrence of git", "github first, then git", nil, []string{"git=git", "github=github"}},
		{"second trigger of a skill", "run gh pr list", nil, []string{"github=gh"}},
		{"multi-word phrase", "Open a Pull   Request, please", nil, []string{"pr=pull request"}},
		{"multi-word across newline", "make a pull\nrequest", nil, []string{"pr=pull request"}},
		{"multi-word needs whole tokens", "pull requests pending", nil, nil},
		{"multi-word needs adjacency", "pull the request", nil, []string{}},
		{"hyphen joins tokens", "install git-lfs", nil, []string{"lfs=git-lfs"}},
		{"underscore joins tokens", "the git_helper module", nil, nil},
		{"digits join tokens", "git2 library", nil, nil},
		{"symbol trigger", "I write C++ daily", nil, []string{"cpp=c++"}},
		{"symbol trigger inside a word", "abc++ is not c++?", nil, []string{"cpp=c++"}},
		{"symbol trigger not inside a word", "abc++", nil, nil},
		{"slash trigger", "please /deploy now", nil, []string{"deploy=/deploy"}},
		{"dotted trigger", "upgrade Node.js.", nil, []string{"node=node.js"}},
		{"dotted trigger bounded", "node.jsx", nil, nil},
		{"already activated skipped", "git and k8s", map[string]bool{"git": true}, []string{"k8s=k8s"}},
		{"repo skills never match", "always", nil, nil},
		{"agentskills with triggers match", "read the PDF", nil, []string{"pdf=pdf"}},
		{"nothing", "", nil, nil},
		{"unicode letters are token characters", "gitä", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := skills.Match(all, tt.text, tt.activated)
			var g []string
			for _, a := range got {
				g = append(g, a.Skill.Name+"="+a.Trigger)
			}
			if len(g) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Match(%q) = %v, want %v", tt.text, g, tt.want)
			}
		})
	}
}

func TestMatchDuplicateNamesOnce(t *testing.T) {
	sks := []skills.Skill{
		{Name: "a", Type: "knowledge", Triggers: []string{"x"}},
		{Name: "a", Type: "knowledge", Triggers: []string{"x"}},
	}
	if got := skills.Match(sks, "x", nil); len(got) != 1 {
		t.Errorf("got %d activations", len(got))
	}
}

func TestExtraInfo(t *testing.T) {
	acts := []skills.Activation{
		{Skill: skills.Skill{Name: "git", Content: "Use rebase.", Path: "/u/skills/git.md"}, Trigger: "git"},
		{Skill: skills.Skill{Name: "gen", Content: "Generated."}, Trigger: "gen"},
	}
	want := "<EXTRA_INFO>\n" +
		"The following information has been included based on a keyword match for \"git\".\n" +
		"It may or may not be relevant to the user's request.\n" +
		"Skill location: /u/skills/git.md\n" +
		"Use rebase.\n" +
		"</EXTRA_INFO>\n" +
		"<EXTRA_INFO>\n" +
		"The following information has been included based on a keyword match for \"gen\".\n" +
		"It may or may not be relevant to the user's request.\n" +
		"Generated.\n" +
		"</EXTRA_INFO>"
	if got := skills.ExtraInfo(acts); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := skills.ExtraInfo(nil); got != "" {
		t.Errorf("empty: %q", got)
	}
}

func TestSystemPrompt(t *testing.T) {
	tests := []struct {
		name string
		in   []skills.Skill
		want string
	}{
		{"none", nil, ""},
		{"only knowledge", []skills.Skill{{Name: "k", Type: "knowledge", Content: "k", Triggers: []string{"k"}}}, ""},
		{
			name: "repo skills",
			in: []skills.Skill{
				{Name: "agents", Type: "repo", Content: "Run make test."},
				{Name: "k", Type: "knowledge", Content: "hidden"},
				{Name: "style", Type: "repo", Content: "Tabs."},
			},
			want: "<REPO_CONTEXT>\n" +
				"The following information has been included based on several files defined in user's repository.\n" +
				"Please follow them while working.\n" +
				"\n[BEGIN context from [agents]]\nRun make test.\n[END Context]\n" +
				"\n[BEGIN context from [style]]\nTabs.\n[END Context]\n" +
				"</REPO_CONTEXT>",
		},
		{
			name: "agentskills listed, escaped, description fallback, disabled hidden",
			in: []skills.Skill{
				{Name: "pdf-tools", Type: "agentskills", IsAgentSkillsFormat: true, Description: "PDFs & <text>", Path: "/s/pdf-tools/SKILL.md", Content: "x"},
				{Name: "nodesc", Type: "agentskills", IsAgentSkillsFormat: true, Content: "# Title\n\nFirst line.\nSecond."},
				{Name: "secret", Type: "agentskills", IsAgentSkillsFormat: true, DisableModelInvocation: true, Content: "x"},
			},
			want: "<AVAILABLE_SKILLS>\n" +
				"The following skills are available. When one is relevant to your task, read the file at its location for its full instructions.\n" +
				"<skill>\n<name>pdf-tools</name>\n<description>PDFs &amp; &lt;text&gt;</description>\n<location>/s/pdf-tools/SKILL.md</location>\n</skill>\n" +
				"<skill>\n<name>nodesc</name>\n<description>First line.</description>\n</skill>\n" +
				"</AVAILABLE_SKILLS>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skills.SystemPrompt(tt.in); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSystemPromptBoth(t *testing.T) {
	got := skills.SystemPrompt([]skills.Skill{
		{Name: "a", Type: "agentskills", Description: "d", Content: "x"},
		{Name: "r", Type: "repo", Content: "rc"},
	})
	i, j := strings.Index(got, "<REPO_CONTEXT>"), strings.Index(got, "<AVAILABLE_SKILLS>")
	if i != 0 || j < 0 || !strings.Contains(got, "</REPO_CONTEXT>\n\n<AVAILABLE_SKILLS>") {
		t.Errorf("sections: %q", got)
	}
}
