package main_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/gittest"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// TestStartFlowRepositories runs every start step against a real git server
// on 127.0.0.1: a public repository at a branch, a new working branch, a
// private repository cloned with the token from the conversation's or the
// user's secrets, and the failures a user must be able to act on.
func TestStartFlowRepositories(t *testing.T) {
	git := gittest.New(t)
	git.Create(t, "acme", "widgets", gittest.Repo{
		Files: map[string]string{
			"README.md":                 "# widgets\n",
			"AGENTS.md":                 "Project rule: run make check before committing.\n",
			".openhands/setup.sh":       "echo setup ran > .setup-done\necho \"token seen: ${GITHUB_TOKEN:+yes}\" >> .setup-done\n",
			".openhands/pre-commit.sh":  "exit 0\n",
			".openhands/skills/ship.md": "---\nname: ship\ntriggers: [ship]\n---\nShip with ./release.sh\n",
		},
		Branches: map[string]map[string]string{"feature": {"feature.txt": "on the feature branch\n"}},
	})
	git.Create(t, "acme", "secret-sauce", gittest.Repo{Private: true, Files: map[string]string{"README.md": "private\n"}})
	git.Create(t, "acme", "broken-setup", gittest.Repo{Files: map[string]string{".openhands/setup.sh": "echo about to fail >&2\nexit 7\n"}})

	llm := llmtest.New(
		// The code-host-user case: the agent clones after the start, with
		// the token from the conversation's secrets (never in the command).
		llmtest.Reply{MatchText: "clone it yourself", ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": `git -c credential.helper='!f() { echo username=x-access-token; echo "password=$GITHUB_TOKEN"; }; f' clone -q ` +
				git.URL + `/acme/secret-sauce.git cloned-later && cat cloned-later/README.md`}}}},
		llmtest.Reply{MatchText: "private", ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "cloned"}}}},
		llmtest.Reply{Repeat: true, Text: "Done."})
	defer llm.Close()
	dataDir := t.TempDir()
	s := startServe(t, dataDir, llm.URL, "ACS_GIT_HOST="+git.URL)
	token := git.Token()
	workspace := func(tk taskInfo) string { return filepath.Join(dataDir, "sandboxes", *tk.SandboxID, "workspace") }
	gitOut := func(dir string, args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("public repository at a branch, with setup, hooks and skills", func(t *testing.T) {
		tk := s.start(apiKey, map[string]any{"selected_repository": "acme/widgets", "selected_branch": "feature",
			"initial_message": msg("hello")})
		if tk.Status != "READY" {
			t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
		}
		var steps []string
		for _, st := range tk.Steps {
			steps = append(steps, st.Status)
		}
		if strings.Join(steps, ",") != "WORKING,WAITING_FOR_SANDBOX,PREPARING_REPOSITORY,RUNNING_SETUP_SCRIPT,SETTING_UP_GIT_HOOKS,SETTING_UP_SKILLS,STARTING_CONVERSATION,READY" {
			t.Fatalf("steps %v", steps)
		}
		project := filepath.Join(workspace(tk), "widgets")
		if b, err := os.ReadFile(filepath.Join(project, "feature.txt")); err != nil || string(b) != "on the feature branch\n" {
			t.Fatalf("feature branch not checked out: %q %v", b, err)
		}
		if br := gitOut(project, "rev-parse", "--abbrev-ref", "HEAD"); br != "feature" {
			t.Fatalf("branch %s", br)
		}
		if b, _ := os.ReadFile(filepath.Join(project, ".setup-done")); !strings.HasPrefix(string(b), "setup ran") {
			t.Fatalf("setup.sh did not run: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(project, ".git", "hooks", "pre-commit")); !strings.Contains(string(b), "ACS pre-commit hook") {
			t.Fatalf("pre-commit hook not installed: %q", b)
		}
		var skills string
		for _, st := range tk.Steps {
			if st.Status == "SETTING_UP_SKILLS" {
				skills = deref(st.Detail)
			}
		}
		if !strings.HasPrefix(skills, "2 skills") {
			t.Fatalf("skills step detail %q", skills)
		}
		c := s.waitConv(apiKey, *tk.AppConversationID, "finished", func(c *convInfo) bool {
			return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished"
		})
		if deref(c.SelectedRepository) != "acme/widgets" || deref(c.SelectedBranch) != "feature" {
			t.Fatalf("record %+v", c)
		}
		if sys := llm.Requests()[0].SystemText(); !strings.Contains(sys, "Project rule: run make check") {
			t.Fatalf("the repository's AGENTS.md is not in the system prompt:\n%s", sys)
		}
	})

	t.Run("a new working branch when none is selected", func(t *testing.T) {
		tk := s.start(apiKey, map[string]any{"selected_repository": "acme/widgets"})
		if tk.Status != "READY" {
			t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
		}
		br := gitOut(filepath.Join(workspace(tk), "widgets"), "rev-parse", "--abbrev-ref", "HEAD")
		if !strings.HasPrefix(br, "openhands-workspace-") {
			t.Fatalf("branch %s", br)
		}
	})

	t.Run("a private repository with the conversation's token", func(t *testing.T) {
		tk := s.start(apiKey, map[string]any{"selected_repository": "acme/secret-sauce", "secrets": map[string]string{"GITHUB_TOKEN": token}})
		if tk.Status != "READY" {
			t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
		}
		var stored struct {
			Secrets map[string]any `json:"secrets"`
		}
		if err := json.Unmarshal(tk.Request, &stored); err != nil {
			t.Fatal(err)
		}
		if got := stored.Secrets["GITHUB_TOKEN"]; got != "**********" {
			t.Fatalf("the task shows the secret: %v", got)
		}
		project := filepath.Join(workspace(tk), "secret-sauce")
		if b, _ := os.ReadFile(filepath.Join(project, "README.md")); string(b) != "private\n" {
			t.Fatalf("private clone: %q", b)
		}
		// The token is nowhere in the sandbox's files (git config, workspace,
		// the agent server's state).
		filepath.WalkDir(filepath.Join(dataDir, "sandboxes", *tk.SandboxID), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
					t.Errorf("the token is written in %s", p)
				}
			}
			return nil
		})
	})

	t.Run("a private repository without a token", func(t *testing.T) {
		tk := s.start(apiKey, map[string]any{"selected_repository": "acme/secret-sauce"})
		if tk.Status != "ERROR" || !strings.Contains(deref(tk.Detail), "GITHUB_TOKEN") || !strings.Contains(deref(tk.Detail), "acme/secret-sauce") {
			t.Fatalf("want an ERROR naming the repository and the secret to set: %s %s", tk.Status, deref(tk.Detail))
		}
	})

	t.Run("stored secrets, overridden by the conversation's", func(t *testing.T) {
		s.admin("POST", "/api/v1/secrets", map[string]any{"name": "GITHUB_TOKEN", "value": token}).want(201)
		tk := s.start(apiKey, map[string]any{"selected_repository": "acme/secret-sauce"})
		if tk.Status != "READY" {
			t.Fatalf("with the stored token: %s %s", tk.Status, deref(tk.Detail))
		}
		tk = s.start(apiKey, map[string]any{"selected_repository": "acme/secret-sauce", "secrets": map[string]string{"GITHUB_TOKEN": "wrong-token-value"}})
		if tk.Status != "ERROR" {
			t.Fatalf("the conversation's (wrong) token must win over the stored one: %s", tk.Status)
		}
		s.admin("DELETE", "/api/v1/secrets/GITHUB_TOKEN", nil).want(200)
	})

	t.Run("failures a user can act on", func(t *testing.T) {
		for _, tc := range []struct{ repo, want string }{
			{"acme/nonexistent", "Could not clone acme/nonexistent"},
			{"acme/broken-setup", "setup.sh failed (exit 7): about to fail"},
		} {
			tk := s.start(apiKey, map[string]any{"selected_repository": tc.repo})
			if tk.Status != "ERROR" || !strings.Contains(deref(tk.Detail), tc.want) {
				t.Errorf("%s: %s %q", tc.repo, tk.Status, deref(tk.Detail))
			}
			if last := tk.Steps[len(tk.Steps)-1]; last.Status != "ERROR" {
				t.Errorf("%s: the ERROR step is not recorded", tc.repo)
			}
		}
	})

	t.Run("start without a repository, clone after the start with the secret", func(t *testing.T) {
		tk := s.start(apiKey, map[string]any{"secrets": map[string]string{"GITHUB_TOKEN": token},
			"initial_message": msg("clone it yourself")})
		if tk.Status != "READY" {
			t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
		}
		s.waitConv(apiKey, *tk.AppConversationID, "finished", func(c *convInfo) bool {
			return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished"
		})
		if b, err := os.ReadFile(filepath.Join(workspace(tk), "cloned-later", "README.md")); err != nil || string(b) != "private\n" {
			t.Fatalf("the agent's clone: %q %v", b, err)
		}
	})

	t.Run("a suggested task writes the message and picks the repository", func(t *testing.T) {
		tk := s.start(apiKey, map[string]any{"suggested_task": map[string]any{"task_type": "OPEN_ISSUE", "repo": "acme/widgets",
			"issue_number": 7, "title": "Widgets wobble"}})
		if tk.Status != "READY" {
			t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
		}
		c := s.conv(apiKey, *tk.AppConversationID)
		if deref(c.SelectedRepository) != "acme/widgets" {
			t.Fatalf("repository %+v", c)
		}
		// READY means the message was sent and the run started; the LLM
		// call follows asynchronously.
		testwait.For(t, 20*time.Second, "the agent to get the suggested task's prompt", func() bool {
			return lcSawMessage(llm, `Resolve issue #7 in acme/widgets ("Widgets wobble")`)
		})
	})

	t.Run("a secret value in the initial message is refused", func(t *testing.T) {
		r := s.admin("POST", "/api/v1/app-conversations", map[string]any{"secrets": map[string]string{"API_TOKEN": "tok-visible-123"},
			"initial_message": msg("use tok-visible-123 please")})
		if r.status != 422 || !strings.Contains(string(r.body), "API_TOKEN") {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}
