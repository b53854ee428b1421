package main_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	acscli "github.com/acs-project/acs/client/cli"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/netdrop"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/v1wire"
)

// cliRun is one finished run of the acs command line.
type cliRun struct {
	stdout, stderr string
	code           int
}

// cli runs the acs command line with a config directory of its own
// (XDG_CONFIG_HOME=configHome), without the test's ACS_* variables, plus
// env; stdin is given to the command.
func cli(t *testing.T, configHome, stdin string, env []string, args ...string) cliRun {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), testbin.ACS(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ACS_") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+configHome)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run acs %v: %v", args, err)
	}
	return cliRun{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// ok fails unless the run exited 0.
func (r cliRun) ok(t *testing.T, what string) cliRun {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
	}
	return r
}

// contains fails unless stdout holds every want, in this order.
func (r cliRun) contains(t *testing.T, what string, want ...string) {
	t.Helper()
	rest := r.stdout
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s: output lacks %q (in order)\nstdout:\n%s\nstderr:\n%s", what, w, r.stdout, r.stderr)
		}
		rest = rest[i+len(w):]
	}
}

// cliScript is script() then a follow-up: a command and a finish.
func cliScript() []llmtest.Reply {
	return append(script(),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "wc -l < notes/result.md", "security_risk": "LOW", "summary": "count lines"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "The notes have 3 lines."}}}},
	)
}

// The command line against acs serve: login, start (steps live, then the
// conversation followed to its end), ls and show as JSON, watch, watch
// --json, send --watch, diff, download, settings, keys, secrets and
// sandboxes; errors as one line with the right exit code.
func TestCLIEndToEnd(t *testing.T) {
	llm := llmtest.New(cliScript()...)
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	home := t.TempDir()

	// login checks the key and saves it for the user only.
	if r := cli(t, home, "", nil, "login", "--url", s.url, "--api-key", "wrong-key-0123456789"); r.code != 1 ||
		r.stderr != "acs: 401 invalid API key\n" {
		t.Fatalf("login with a bad key: %+v", r)
	}
	// Without --api-key and a terminal, the key is stdin's first line, so
	// it never needs to be in argv.
	if r := cli(t, home, "", nil, "login", "--url", s.url); r.code != 2 || !strings.Contains(r.stderr, "pipe it to stdin") {
		t.Fatalf("login with nothing on stdin: %+v", r)
	}
	cli(t, home, apiKey+"\n", nil, "login", "--url", s.url).ok(t, "login").contains(t, "login", "Logged in to "+s.url+" as ")
	fi, err := os.Stat(filepath.Join(home, "acs", "config.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", fi, err)
	}

	// start shows each step, where the conversation went, then the
	// conversation: the command and its output, the file created as a
	// diff, the agent's reply, finished.
	r := cli(t, home, "", nil, "start", "Say hi in the shell and write notes/result.md").ok(t, "start")
	r.contains(t, "start", "Starting (task ", "WORKING", "WAITING_FOR_SANDBOX", "PREPARING_REPOSITORY", "RUNNING_SETUP_SCRIPT",
		"SETTING_UP_GIT_HOOKS", "SETTING_UP_SKILLS", "STARTING_CONVERSATION", "READY", "total ", "is READY in sandbox ",
		"Placement: ", "user: Say hi in the shell", "agent $ echo shell says hi && pwd", "shell says hi",
		"+++ b/", "notes/result.md", "+The agent was here.", "agent (done): Ran a command and wrote notes/result.md.", "— finished")
	if regexp.MustCompile(`✓ STARTING_CONVERSATION\s+\d+(ms|\.\ds)`).FindString(r.stdout) == "" {
		t.Fatalf("start: no step time:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("start: colors when piped:\n%q", r.stdout)
	}

	// ls and show --json are the V1 records.
	var list []v1wire.Conversation
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "ls", "--json").ok(t, "ls").stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("ls --json: %v %+v", err, list)
	}
	id := list[0].ID
	var shown v1wire.Conversation
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "show", id, "--json").ok(t, "show").stdout), &shown); err != nil ||
		shown.ID != id || deref(shown.ExecutionStatus) != "finished" || shown.SandboxStatus != "RUNNING" {
		t.Fatalf("show --json: %v %+v", err, shown)
	}
	cli(t, home, "", nil, "ls").ok(t, "ls").contains(t, "ls", "ID", "TITLE", "STATUS", "SANDBOX", "REPO", "MODEL", "UPDATED",
		id, "RUNNING/finished", shown.SandboxID, "openai/e2e-model")
	if r := cli(t, home, "", nil, "search", "no such title").ok(t, "search"); r.stdout != "No conversations.\n" {
		t.Fatalf("search: %q", r.stdout)
	}

	// watch of a finished conversation prints its history and exits 0.
	cli(t, home, "", nil, "watch", id).ok(t, "watch").contains(t, "watch", "user: Say hi in the shell",
		"agent $ echo shell says hi && pwd", "shell says hi", "agent (done): Ran a command", "— finished")
	// --json: one event a line, each once.
	lines := strings.Split(strings.TrimSpace(cli(t, home, "", nil, "watch", id, "--json").ok(t, "watch --json").stdout), "\n")
	seen := map[string]bool{}
	var kinds []string
	for _, l := range lines {
		ev, err := events.Decode([]byte(l))
		if err != nil {
			t.Fatalf("watch --json line %q: %v", l, err)
		}
		if seen[ev.EventBase().ID] {
			t.Fatalf("watch --json: event %s twice", ev.EventBase().ID)
		}
		seen[ev.EventBase().ID] = true
		kinds = append(kinds, ev.Kind())
	}
	if k := strings.Join(kinds, ","); !strings.Contains(k, "MessageEvent") || strings.Count(k, "ActionEvent") != 3 || strings.Count(k, "ObservationEvent") != 3 {
		t.Fatalf("watch --json kinds: %v", kinds)
	}

	// send --watch follows the new run only.
	r = cli(t, home, "", nil, "send", id, "How long are the notes?", "--watch").ok(t, "send")
	r.contains(t, "send", "Sent to "+id, "user: How long are the notes?", "agent $ wc -l < notes/result.md", "3",
		"agent (done): The notes have 3 lines.", "— finished")
	if strings.Contains(r.stdout, "Say hi in the shell") {
		t.Fatalf("send --watch repeats the history:\n%s", r.stdout)
	}

	// diff: the workspace's changes.
	cli(t, home, "", nil, "diff", id).ok(t, "diff").contains(t, "diff", "ADDED", "notes/result.md", "--- /dev/null",
		"+++ b/notes/result.md", "+# Result", "+The agent was here.")
	var diffs []struct{ Status, Path, Diff string }
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "diff", id, "--json").ok(t, "diff --json").stdout), &diffs); err != nil ||
		len(diffs) != 1 || diffs[0].Path != "notes/result.md" || !strings.Contains(diffs[0].Diff, "+The agent was here.") {
		t.Fatalf("diff --json: %v %+v", err, diffs)
	}

	// download: a zip archive.
	zipFile := filepath.Join(t.TempDir(), "conv.zip")
	cli(t, home, "", nil, "download", id, "-o", zipFile).ok(t, "download")
	if fi, err := os.Stat(zipFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("download: the zip is %v (%v), want readable by the user only (0600)", fi.Mode().Perm(), err)
	}
	if zr, err := zip.OpenReader(zipFile); err != nil || len(zr.File) == 0 {
		t.Fatalf("download: not a zip: %v", err)
	} else {
		zr.Close()
	}

	// settings, keys, secrets.
	var st v1wire.Settings
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "settings", "set", "sandbox_grouping_strategy=LEAST_RECENTLY_USED", "--json").ok(t, "settings set").stdout), &st); err != nil ||
		st.SandboxGroupingStrategy != "LEAST_RECENTLY_USED" {
		t.Fatalf("settings set: %v %+v", err, st)
	}
	cli(t, home, "", nil, "settings").ok(t, "settings").contains(t, "settings", "sandbox_grouping_strategy", "LEAST_RECENTLY_USED")
	var key v1wire.NewKey
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "keys", "create", "laptop", "--json").ok(t, "keys create").stdout), &key); err != nil || key.Key == "" {
		t.Fatalf("keys create: %v %+v", err, key)
	}
	cli(t, home, "", []string{"ACS_API_KEY=" + key.Key}, "keys", "ls").ok(t, "keys ls with the new key").contains(t, "keys ls", key.ID, "laptop")
	cli(t, home, "", nil, "keys", "revoke", key.ID).ok(t, "keys revoke")
	if r := cli(t, home, "", []string{"ACS_API_KEY=" + key.Key}, "keys", "ls"); r.code != 1 || !strings.HasPrefix(r.stderr, "acs: 401 ") {
		t.Fatalf("revoked key still works: %+v", r)
	}
	cli(t, home, "s3cr3t-value\n", nil, "secrets", "set", "CLI_TOKEN").ok(t, "secrets set").contains(t, "secrets set", "Stored secret CLI_TOKEN.")
	cli(t, home, "", nil, "secrets", "set", "CLI_TOKEN=other").ok(t, "secrets replace").contains(t, "secrets replace", "Replaced secret CLI_TOKEN.")
	if r := cli(t, home, "", nil, "secrets", "ls").ok(t, "secrets ls"); !strings.Contains(r.stdout, "CLI_TOKEN") ||
		strings.Contains(r.stdout, "s3cr3t") || strings.Contains(r.stdout, "other") {
		t.Fatalf("secrets ls: %s", r.stdout)
	}
	cli(t, home, "", nil, "secrets", "delete", "CLI_TOKEN").ok(t, "secrets delete")

	// sandboxes: pause (watch then says the agent is not running), resume
	// through the conversation.
	var sbs []v1wire.Sandbox
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "sandboxes", "ls", "--json").ok(t, "sandboxes ls").stdout), &sbs); err != nil ||
		len(sbs) != 1 || sbs[0].ID != shown.SandboxID || sbs[0].Conversations != 1 {
		t.Fatalf("sandboxes ls: %v %+v", err, sbs)
	}
	cli(t, home, "", nil, "sandboxes", "pause", shown.SandboxID).ok(t, "sandboxes pause")
	s.waitConv(apiKey, id, "PAUSED", func(c *convInfo) bool { return c.SandboxStatus == "PAUSED" })
	cli(t, home, "", nil, "watch", id).ok(t, "watch a paused conversation").contains(t, "watch paused", "agent $ echo shell says hi",
		"is PAUSED: its agent is not running")
	cli(t, home, "", nil, "resume", id).ok(t, "resume").contains(t, "resume", "Resumed "+id+": sandbox RUNNING, agent finished.")

	// Errors: one line with the server's detail, exit 1; usage errors exit 2.
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stderr string // the whole of stderr (a prefix when it ends with "…")
	}{
		{"unknown conversation", nil, []string{"show", "0123456789abcdef0123456789abcdef"}, 1, "acs: 404 Conversation not found\n"},
		{"watch unknown", nil, []string{"watch", "0123456789abcdef0123456789abcdef"}, 1, "acs: 404 Conversation not found\n"},
		{"bad key", []string{"ACS_API_KEY=not-a-key-0123456789"}, []string{"ls"}, 1, "acs: 401 invalid API key\n"},
		{"invalid repository", nil, []string{"start", "hi", "--repo", "not a repo"}, 1, "acs: 422 …"},
		{"not logged in", []string{"XDG_CONFIG_HOME=" + t.TempDir()}, []string{"ls"}, 1, "acs: not logged in: run \"acs login\" (or set ACS_URL and ACS_API_KEY)\n"},
		{"extra argument", nil, []string{"show", id, "extra"}, 2, "acs show: unexpected argument \"extra\"\n…"},
		{"missing argument", nil, []string{"watch"}, 2, "acs watch: missing argument …"},
		{"unknown flag", nil, []string{"ls", "--bogus"}, 2, "acs ls: flag provided but not defined: -bogus\n…"},
		{"branch without repo", nil, []string{"start", "hi", "--branch", "main"}, 2, "acs start: --branch needs --repo\n…"},
		{"unknown subcommand", nil, []string{"keys", "frobnicate"}, 2, "acs keys: unknown subcommand \"frobnicate\"\n…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, home, "", tc.env, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %+v", r.code, tc.code, r)
			}
			if want, prefix := strings.CutSuffix(tc.stderr, "…"); prefix && !strings.HasPrefix(r.stderr, want) || !prefix && r.stderr != tc.stderr {
				t.Fatalf("stderr %q, want %q", r.stderr, tc.stderr)
			}
			if tc.code == 1 && strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("error not one line: %q", r.stderr)
			}
		})
	}

	// delete, then the conversation is gone.
	cli(t, home, "", nil, "delete", id).ok(t, "delete")
	if r := cli(t, home, "", nil, "show", id); r.code != 1 || r.stderr != "acs: 404 Conversation not found\n" {
		t.Fatalf("show after delete: %+v", r)
	}
	cli(t, home, "", nil, "logout").ok(t, "logout")
	if _, err := os.Stat(filepath.Join(home, "acs", "config.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("config after logout: %v", err)
	}
}

// A start that fails shows its steps and the error detail, exit 1.
func TestCLIStartFailure(t *testing.T) {
	llm := llmtest.New()
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	home := t.TempDir()
	env := []string{"ACS_URL=" + s.url, "ACS_API_KEY=" + apiKey}
	// An explicit sandbox that does not exist fails the start task.
	r := cli(t, home, "", env, "start", "hi", "--sandbox", "nope")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "acs: start failed: ") || !strings.Contains(r.stderr, "Sandbox not found") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("start in an unknown sandbox: %+v", r)
	}
	r.contains(t, "failed start", "Starting (task ", "WORKING", "✗ ERROR", "total ")

	// --json: the start task, one line, and the same one-line error.
	r = cli(t, home, "", env, "start", "hi", "--sandbox", "nope", "--json")
	var tk v1wire.StartTask
	if err := json.Unmarshal([]byte(r.stdout), &tk); err != nil || r.code != 1 || tk.Status != "ERROR" ||
		!strings.Contains(deref(tk.Detail), "Sandbox not found") || strings.Count(r.stdout, "\n") != 1 ||
		!strings.HasPrefix(r.stderr, "acs: start failed: ") {
		t.Fatalf("start --json: %v %+v", err, r)
	}
}

// acs watch resumes after its connections drop: what the agent did while
// the network was down is shown once it is back, each event once, and
// watch exits 0 when the agent finishes.
func TestCLIWatchResumesAfterADroppedConnection(t *testing.T) {
	release := make(chan struct{})
	llm := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo before-the-drop", "security_risk": "LOW", "summary": "one"}}}},
		llmtest.Reply{Respond: func(*llmtest.Request) llmtest.Reply {
			<-release // the agent waits here until the network is down
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
				"command": "echo during-the-drop", "security_risk": "LOW", "summary": "two"}}}}
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Done despite the network."}}}},
	)
	defer llm.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	s := startServe(t, t.TempDir(), llm.URL)
	tk := s.start(apiKey, map[string]any{"initial_message": msg("Echo twice")})
	if tk.Status != "READY" {
		t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
	}
	id := *tk.AppConversationID

	d := &netdrop.Net{}
	out, errOut := &testwait.Buffer{}, &testwait.Buffer{}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- acscli.Main(ctx, []string{"watch", id}, acscli.IO{Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut,
			Getenv: func(k string) string {
				return map[string]string{"ACS_URL": s.url, "ACS_API_KEY": apiKey}[k]
			}, ConfigDir: t.TempDir(), HTTPClient: d.Client()})
	}()
	testwait.For(t, 60*time.Second, "watch to show the first command's output", func() bool {
		return strings.Contains(out.String(), "  before-the-drop\n")
	})
	up := d.Down()
	unblock()
	s.waitConv(apiKey, id, "finished", func(c *convInfo) bool { return deref(c.ExecutionStatus) == "finished" })
	if strings.Contains(out.String(), "during-the-drop") {
		t.Fatalf("watch saw events while the network was down:\n%s", out)
	}
	up()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("watch exited %d\nstdout:\n%s\nstderr:\n%s", c, out, errOut)
		}
	case <-ctx.Done():
		t.Fatalf("watch did not exit after the agent finished\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
	got := out.String()
	for _, want := range []string{"agent $ echo before-the-drop", "  before-the-drop\n", "agent $ echo during-the-drop",
		"  during-the-drop\n", "agent (done): Done despite the network."} {
		if strings.Count(got, want) != 1 {
			t.Fatalf("%q appears %d times, want once:\n%s\n%s", want, strings.Count(got, want), got, errOut)
		}
	}
	if !strings.HasSuffix(got, "agent (done): Done despite the network.\n— finished\n") {
		t.Fatalf("watch does not end with the agent's reply and finished:\n%s", got)
	}
	if i, j := strings.Index(got, "before-the-drop"), strings.Index(got, "during-the-drop"); i > j {
		t.Fatalf("events out of order:\n%s", got)
	}
	dials := d.Dials()
	if dials < 2 {
		t.Fatalf("%d dials: watch never reconnected", dials)
	}
}

// onTerminal runs the acs command line on a pseudo-terminal (stdin and
// stdout), typing each of input after the prompt it waits for, and
// returns everything the terminal showed and the exit code.
func onTerminal(t *testing.T, configHome string, env []string, input [][2]string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), testbin.ACS(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ACS_") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "TERM=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{"XDG_CONFIG_HOME=" + configHome, "TERM=xterm"}, env...)...)
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	out := &testwait.Buffer{}
	copied := make(chan struct{})
	go func() { io.Copy(out, tty); close(copied) }() // ends with EIO when the command exits
	for _, in := range input {
		testwait.For(t, 30*time.Second, "the prompt "+in[0], func() bool { return strings.Contains(out.String(), in[0]) })
		if _, err := tty.WriteString(in[1] + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
	}
	return out.String(), code
}

// On a terminal: login asks for the URL and the key (not echoed), start
// draws its progress in place, output is colored unless NO_COLOR is set.
func TestCLIOnATerminal(t *testing.T) {
	llm := llmtest.New(script()...)
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	home := t.TempDir()

	shown, code := onTerminal(t, home, nil, [][2]string{{"Server URL [http://127.0.0.1:3000]: ", s.url}, {"API key: ", apiKey}}, "login")
	if code != 0 || !strings.Contains(shown, "Logged in to "+s.url) {
		t.Fatalf("interactive login: exit %d\n%s", code, shown)
	}
	if strings.Contains(shown, apiKey) {
		t.Fatalf("the key was echoed:\n%s", shown)
	}

	shown, code = onTerminal(t, home, nil, nil, "start", "Say hi in the shell and write notes/result.md")
	if code != 0 || !strings.Contains(shown, "\r\x1b[K") || !strings.Contains(shown, "\x1b[") || !strings.Contains(shown, "Ran a command and wrote notes/result.md.") {
		t.Fatalf("start on a terminal: exit %d\n%q", code, shown)
	}
	var list []v1wire.Conversation
	if err := json.Unmarshal([]byte(cli(t, home, "", nil, "ls", "--json").ok(t, "ls").stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("ls --json: %v %+v", err, list)
	}
	shown, code = onTerminal(t, home, []string{"NO_COLOR=1"}, nil, "watch", list[0].ID)
	if code != 0 || strings.Contains(shown, "\x1b[") || !strings.Contains(shown, "agent (done): Ran a command") {
		t.Fatalf("watch with NO_COLOR: exit %d\n%q", code, shown)
	}
}

// acs pause stops the agent after its step in flight; watch then says it
// is paused; acs resume runs it on to the end.
func TestCLIPauseAndResume(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	llm := llmtest.New(
		llmtest.Reply{Respond: func(*llmtest.Request) llmtest.Reply {
			<-release
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
				"command": "echo first-step", "security_risk": "LOW", "summary": "one"}}}}
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Finished after the pause."}}}},
	)
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	home := t.TempDir()
	env := []string{"ACS_URL=" + s.url, "ACS_API_KEY=" + apiKey}
	r := cli(t, home, "", env, "start", "Take two steps", "--detach").ok(t, "start --detach")
	id := regexp.MustCompile(`acs watch (\S+)`).FindStringSubmatch(r.stdout)
	if id == nil {
		t.Fatalf("start --detach names no conversation:\n%s", r.stdout)
	}
	testwait.For(t, 30*time.Second, "the agent to call the LLM", func() bool { return len(llm.Requests()) >= 1 })
	cli(t, home, "", env, "pause", id[1]).ok(t, "pause").contains(t, "pause", "Paused "+id[1]+".")
	unblock()
	s.waitConv(apiKey, id[1], "paused", func(c *convInfo) bool { return deref(c.ExecutionStatus) == "paused" })
	cli(t, home, "", env, "watch", id[1]).ok(t, "watch paused").contains(t, "watch paused", "— paused",
		"the agent is paused (continue with \"acs resume "+id[1]+"\")")
	cli(t, home, "", env, "resume", id[1]).ok(t, "resume").contains(t, "resume", "Resumed "+id[1]+": sandbox RUNNING, agent running.")
	cli(t, home, "", env, "watch", id[1]).ok(t, "watch after resume").contains(t, "watch after resume",
		"agent (done): Finished after the pause.", "— finished")
}
