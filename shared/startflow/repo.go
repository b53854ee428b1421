package startflow

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// The repository steps run through the sandbox's agent server (its bash
// API), so they work the same for process sandboxes and pods. Long commands
// (clone, setup script) are started once and polled by later deliveries,
// so no delivery outlives a Lambda or a visibility timeout.

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// workDirs computes the conversation's working directory (the sandbox's, or
// its own subdirectory when grouping) and project directory (where the
// repository is cloned).
func workDirs(sb acs.Sandbox, t acs.StartTask, req v1wire.StartRequest) (work, project string) {
	work = sb.WorkingDir
	if t.OwnWorkDir {
		work = path.Join(work, t.ConversationID)
	}
	project = work
	if req.SelectedRepository != nil {
		_, name, _ := strings.Cut(*req.SelectedRepository, "/")
		project = path.Join(work, name)
	}
	return work, project
}

// gitTokenNames are the secrets a clone's token is taken from, in order.
func gitTokenNames(provider *v1wire.GitProvider) []string {
	p := "github"
	if provider != nil {
		p = string(*provider)
	}
	return []string{strings.ToUpper(p) + "_TOKEN", "GIT_TOKEN"}
}

// runCommand runs a bash command on the sandbox and reports its result
// when it has finished. A command that finishes within inlineWait costs no
// store write; a longer one is recorded on the task (done=false) and polled
// by later deliveries. A delivery that finds a recorded command polls it
// instead of starting another; every step's script is idempotent, so a
// command started twice (a crash before the record) is harmless.
func (w *Worker) runCommand(ctx context.Context, t acs.StartTask, c *client.Agent, req *agentwire.ExecuteBashRequest) (stdout, stderr string, code int, done bool, err error) {
	id := t.Command
	if id == "" {
		if id, err = c.StartBash(ctx, req); err != nil {
			return "", "", 0, false, fmt.Errorf("start command: %w", err)
		}
	}
	deadline := time.Now().Add(inlineWait)
	pause := 2 * time.Millisecond
	for {
		stdout, stderr, code, done, err = c.BashResult(ctx, id)
		if err != nil || done {
			return stdout, stderr, code, done, err
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return "", "", 0, false, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 100*time.Millisecond)
	}
	if t.Command == "" {
		// Still running: record it (unless another delivery recorded one, or
		// the task moved on) so later deliveries poll it.
		if _, err := w.Store.UpdateStartTask(ctx, t.ID, func(tk *acs.StartTask) error {
			if tk.Status == t.Status && tk.Command == "" {
				tk.Command = id
			}
			return nil
		}); err != nil {
			return "", "", 0, false, err
		}
	}
	return "", "", 0, false, nil
}

// inlineWait is how long a delivery waits for a command it started or
// polls before handing the task back to the queue (the delivery's
// visibility is extended meanwhile).
const inlineWait = 10 * time.Second

// tail returns the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// nothingToPrepare reports whether t's working directory is new and empty
// (the conversation's own, or that of the sandbox this start created) with
// no repository selected: nothing to clone, no setup script, hooks or
// project skills. The agent server creates it and makes it a git repository
// when the conversation starts, so the preparation, setup-script and hooks
// steps are recorded together, as one write, with nothing run.
func nothingToPrepare(sb acs.Sandbox, t acs.StartTask, req v1wire.StartRequest) bool {
	return req.SelectedRepository == nil && (t.OwnWorkDir || sb.CreatedByTask == t.ID)
}

// emptyWorkDir is the change that records a preparation with nothing to
// do (nothingToPrepare) on the task: its directories and no project facts.
func emptyWorkDir(sb acs.Sandbox, req v1wire.StartRequest) func(*acs.StartTask) {
	return func(tk *acs.StartTask) {
		work, project := workDirs(sb, *tk, req)
		tk.WorkDir, tk.ProjectDir, tk.Command, tk.Project = work, project, "", &acs.ProjectFacts{}
	}
}

// prepareRepository creates the working directory and clones
// selected_repository from the git host at selected_branch (a branch that
// does not exist is created; without one, a new openhands-workspace-*
// branch), or initialises a git repository when none is selected. The
// token comes from the conversation's secrets (then the user's stored ones)
// through GIT_ASKPASS: it is never in the command, .git/config or the
// workspace.
func (w *Worker) prepareRepository(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest) (time.Duration, bool, error) {
	cfg := w.Config
	sb, c, err := w.client(ctx, dl, t)
	if err != nil {
		return 0, false, err
	}
	if nothingToPrepare(sb, t, req) {
		return 0, false, w.advanceThrough(ctx, t.ID, acs.TaskPreparingRepository, emptyWorkDir(sb, req),
			acs.TaskRunningSetupScript, acs.TaskSettingUpGitHooks, acs.TaskSettingUpSkills)
	}
	work, project := workDirs(sb, t, req)
	script, secrets, err := w.prepareScript(ctx, t, req, work, project)
	if err != nil {
		return 0, false, err
	}
	out, errOut, code, done, err := w.runCommand(ctx, t, c, &agentwire.ExecuteBashRequest{Command: script, Timeout: int(cfg.CloneTimeout.Seconds()), Secrets: secrets})
	if err != nil {
		return 0, false, err
	}
	if !done {
		return cfg.Sandboxes.PollInterval / 4, false, nil
	}
	if code != 0 {
		return 0, false, w.prepareFailed(req, work, code, out, errOut)
	}
	facts := &acs.ProjectFacts{SetupScript: hasLine(out, markSetupScript), PreCommit: hasLine(out, markPreCommit)}
	next := []acs.StartTaskStatus{acs.TaskRunningSetupScript}
	if !facts.SetupScript && !facts.PreCommit {
		// Nothing for the setup-script and hooks steps: recorded with this one.
		next = append(next, acs.TaskSettingUpGitHooks, acs.TaskSettingUpSkills)
	}
	return 0, false, w.advanceThrough(ctx, t.ID, acs.TaskPreparingRepository, func(tk *acs.StartTask) {
		tk.WorkDir, tk.ProjectDir, tk.Command, tk.Project = work, project, "", facts
	}, next...)
}

// prepareScript is the shell script that prepares work and reports what
// project holds, and the secrets it runs with: the git token and user
// name, for a clone.
func (w *Worker) prepareScript(ctx context.Context, t acs.StartTask, req v1wire.StartRequest, work, project string) (string, map[string]string, error) {
	var script strings.Builder
	fmt.Fprintf(&script, "set -e\nmkdir -p %s\ncd %s\n", shellQuote(work), shellQuote(work))
	secrets := map[string]string{}
	if req.SelectedRepository != nil {
		repo := *req.SelectedRepository
		_, name, _ := strings.Cut(repo, "/")
		url := strings.TrimRight(w.Config.GitHost, "/") + "/" + repo + ".git"
		all, err := w.conversationSecrets(ctx, t)
		if err != nil {
			return "", nil, err
		}
		for _, n := range gitTokenNames(req.GitProvider) {
			if v, ok := all[n]; ok {
				secrets["ACS_GIT_TOKEN"] = v
				break
			}
		}
		if u, ok := all["GIT_USERNAME"]; ok {
			secrets["ACS_GIT_USERNAME"] = u
		}
		branch := "openhands-workspace-" + strings.ToLower(t.ID[:8])
		if req.SelectedBranch != nil {
			branch = *req.SelectedBranch
		}
		fmt.Fprintf(&script, cloneScript, shellQuote(name), shellQuote(url), shellQuote(branch))
	} else {
		script.WriteString("[ -d .git ] || git init --quiet || [ -d .git ]\n")
	}
	// What the next steps will find (so they skip the agent server when
	// there is nothing to do).
	fmt.Fprintf(&script, "cd %s\n[ ! -f .openhands/setup.sh ] || echo %s\n[ ! -f .openhands/pre-commit.sh ] || echo %s\n",
		shellQuote(project), markSetupScript, markPreCommit)
	return script.String(), secrets, nil
}

// cloneScript clones repository %[2]s into directory %[1]s, unless a
// clone is there, and checks out branch %[3]s, created when it does not
// exist. The token reaches git through GIT_ASKPASS only.
const cloneScript = `if [ ! -d %[1]s/.git ]; then
  ask=$(mktemp -d)
  trap 'rm -rf "$ask"' EXIT
  cat > "$ask/askpass" <<'ACS_ASKPASS'
#!/bin/sh
case "$1" in
Username*) printf '%%s\n' "${ACS_GIT_USERNAME:-x-access-token}" ;;
*) printf '%%s\n' "${ACS_GIT_TOKEN:-}" ;;
esac
ACS_ASKPASS
  chmod 700 "$ask/askpass"
  GIT_ASKPASS="$ask/askpass" GIT_TERMINAL_PROMPT=0 git -c credential.helper= clone --quiet -- %[2]s "$ask/repo"
  # Another delivery may have cloned meanwhile: keep the first.
  mv -T "$ask/repo" %[1]s 2>/dev/null || [ -d %[1]s/.git ]
  cd %[1]s
  # The clone fetched every branch: the selected one is checked out from
  # its remote-tracking ref (no second round trip to the host, which for a
  # private repository would need the token again).
  if git show-ref --verify --quiet refs/heads/%[3]s; then
    git checkout --quiet %[3]s
  elif git show-ref --verify --quiet refs/remotes/origin/%[3]s; then
    git checkout --quiet -b %[3]s --track origin/%[3]s
  else
    git checkout --quiet -b %[3]s
  fi
fi
`

// prepareFailed is the user's error for a preparation script that exited
// with code, -1 for a timeout.
func (w *Worker) prepareFailed(req v1wire.StartRequest, work string, code int, out, errOut string) error {
	cfg := w.Config
	msg := tail(errOut+"\n"+out, 600)
	if req.SelectedRepository == nil || *req.SelectedRepository == "" {
		return failf("Could not prepare the working directory %s (exit %d): %s", work, code, msg)
	}
	hint := ""
	low := strings.ToLower(msg)
	if strings.Contains(low, "authentication") || strings.Contains(low, "could not read username") || strings.Contains(low, "403") || strings.Contains(low, "401") {
		hint = fmt.Sprintf(" The repository needs credentials: set the %s secret (in the start request's secrets, or stored with %s).", gitTokenNames(req.GitProvider)[0], acs.RouteCreateSecret.Ref())
	}
	if code == -1 {
		msg = "timed out after " + cfg.CloneTimeout.String()
	}
	return failf("Could not clone %s from %s: %s.%s", *req.SelectedRepository, cfg.GitHost, msg, hint)
}

// The lines the preparation script prints for what it found.
const (
	markSetupScript = "ACS_PROJECT_HAS_SETUP_SCRIPT"
	markPreCommit   = "ACS_PROJECT_HAS_PRE_COMMIT"
)

// hasLine reports whether out has line as one of its lines.
func hasLine(out, line string) bool {
	for l := range strings.Lines(out) {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// runSetupScript sources the project's .openhands/setup.sh (when present)
// with the conversation's secrets in its environment.
func (w *Worker) runSetupScript(ctx context.Context, dl *delivery, t acs.StartTask) (time.Duration, bool, error) {
	if t.Project != nil && !t.Project.SetupScript && t.Command == "" {
		return 0, false, w.advance(ctx, t.ID, acs.TaskRunningSetupScript, acs.TaskSettingUpGitHooks, nil)
	}
	cfg := w.Config
	_, c, err := w.client(ctx, dl, t)
	if err != nil {
		return 0, false, err
	}
	secrets, err := w.conversationSecrets(ctx, t)
	if err != nil {
		return 0, false, err
	}
	script := fmt.Sprintf("cd %s || exit 3\nif [ -f .openhands/setup.sh ]; then chmod +x .openhands/setup.sh && . ./.openhands/setup.sh; else echo 'no .openhands/setup.sh'; fi\n",
		shellQuote(t.ProjectDir))
	out, errOut, code, done, err := w.runCommand(ctx, t, c, &agentwire.ExecuteBashRequest{Command: script, Timeout: int(cfg.SetupTimeout.Seconds()), Secrets: envOnly(secrets)})
	if err != nil {
		return 0, false, err
	}
	if !done {
		return cfg.Sandboxes.PollInterval / 2, false, nil
	}
	if code != 0 {
		if code == -1 {
			return 0, false, failf("The repository's .openhands/setup.sh did not finish within %s", cfg.SetupTimeout)
		}
		return 0, false, failf("The repository's .openhands/setup.sh failed (exit %d): %s", code, tail(errOut+"\n"+out, 800))
	}
	return 0, false, w.advance(ctx, t.ID, acs.TaskRunningSetupScript, acs.TaskSettingUpGitHooks, func(tk *acs.StartTask) { tk.Command = "" })
}

// envOnly keeps the secrets whose names are environment variable names.
func envOnly(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v1wire.IsEnvName(k) {
			out[k] = v
		}
	}
	return out
}

const preCommitHook = `#!/bin/sh
# ACS pre-commit hook: runs .openhands/pre-commit.sh, then the previous hook.
root=$(git rev-parse --show-toplevel)
sh "$root/.openhands/pre-commit.sh" || exit $?
if [ -x "$root/.git/hooks/pre-commit.local" ]; then exec "$root/.git/hooks/pre-commit.local" "$@"; fi
`

// setUpGitHooks installs a pre-commit hook running .openhands/pre-commit.sh
// when the project has one; an existing hook is kept as pre-commit.local.
func (w *Worker) setUpGitHooks(ctx context.Context, dl *delivery, t acs.StartTask) error {
	if t.Project != nil && !t.Project.SetupScript && !t.Project.PreCommit {
		// Known absent, and no setup script ran that could have added it.
		return w.advance(ctx, t.ID, acs.TaskSettingUpGitHooks, acs.TaskSettingUpSkills, nil)
	}
	_, c, err := w.client(ctx, dl, t)
	if err != nil {
		return err
	}
	script := fmt.Sprintf(`cd %s || exit 3
if [ -f .openhands/pre-commit.sh ] && [ -d .git ]; then
  mkdir -p .git/hooks
  hook=.git/hooks/pre-commit
  if [ -f "$hook" ] && ! grep -q 'ACS pre-commit hook' "$hook"; then mv "$hook" .git/hooks/pre-commit.local; fi
  cat > "$hook" <<'ACS_HOOK'
%sACS_HOOK
  chmod +x "$hook"
  echo installed
fi
`, shellQuote(t.ProjectDir), preCommitHook)
	out, err := c.ExecuteBash(ctx, &agentwire.ExecuteBashRequest{Command: script, Timeout: 60})
	if err != nil {
		return fmt.Errorf("install git hooks: %w", err)
	}
	if out.ExitCode == nil || *out.ExitCode != 0 {
		msg := ""
		if out.Stderr != nil {
			msg = *out.Stderr
		}
		return failf("Could not install the pre-commit hook: %s", tail(msg, 400))
	}
	detail := ""
	if out.Stdout != nil && strings.Contains(*out.Stdout, "installed") {
		detail = "pre-commit hook installed (.openhands/pre-commit.sh)"
	}
	return w.advance(ctx, t.ID, acs.TaskSettingUpGitHooks, acs.TaskSettingUpSkills, func(tk *acs.StartTask) {
		if detail != "" {
			tk.Steps[len(tk.Steps)-1].Detail = detail
		}
	})
}

// setUpSkills loads the project's skills once on the agent server (a
// warm-up that also surfaces malformed skill files in the step's detail).
func (w *Worker) setUpSkills(ctx context.Context, dl *delivery, t acs.StartTask) error {
	_, c, err := w.client(ctx, dl, t)
	if err != nil {
		return err
	}
	detail, err := loadSkills(ctx, c, t.ProjectDir)
	if err != nil {
		return err
	}
	return w.advance(ctx, t.ID, acs.TaskSettingUpSkills, acs.TaskStartingConversation, skillsDetail(detail))
}

// loadSkills has the agent server load the skills for projectDir and
// returns the step's detail: how many, and the files that failed.
func loadSkills(ctx context.Context, c *client.Agent, projectDir string) (string, error) {
	var resp struct {
		Skills []struct {
			Name string `json:"name"`
		} `json:"skills"`
		Errors []struct {
			File  string `json:"file"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	if err := c.Post(ctx, "/api/skills", map[string]any{"project_dir": projectDir}, &resp); err != nil {
		var he *client.HTTPError
		if !errors.As(err, &he) || he.Status/100 == 5 {
			return "", fmt.Errorf("load skills: %w", err)
		}
		// An agent server without the route (or refusing the directory)
		// does not stop the start.
		resp.Skills = nil
	}
	detail := fmt.Sprintf("%d skills", len(resp.Skills))
	for _, e := range resp.Errors {
		detail += fmt.Sprintf("; %s: %s", e.File, e.Error)
	}
	return detail, nil
}

// skillsDetail records the skills step's detail on the task: on its
// latest SETTING_UP_SKILLS step, so it applies before or after the steps
// are advanced.
func skillsDetail(detail string) func(*acs.StartTask) {
	return func(tk *acs.StartTask) {
		if i := lastStep(*tk, acs.TaskSettingUpSkills); i >= 0 {
			tk.Steps[i].Detail = tail(detail, 1000)
		}
	}
}

// lastStep is the index of t's latest step at status, -1 when none.
func lastStep(t acs.StartTask, status acs.StartTaskStatus) int {
	i := len(t.Steps) - 1
	for i >= 0 && t.Steps[i].Status != status {
		i--
	}
	return i
}
