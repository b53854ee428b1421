package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/hooks"
)

// cmd is a command hook with a timeout in seconds (0 = default).
func cmd(command string, timeout int) hooks.Hook {
	return hooks.Hook{Type: "command", Command: command, Timeout: timeout}
}

func runner(t *testing.T, cfg *hooks.Config) *hooks.Runner {
	t.Helper()
	return &hooks.Runner{Config: cfg, WorkDir: t.TempDir(), SessionID: "sess-1"}
}

func pre(hs ...hooks.Hook) *hooks.Config {
	return &hooks.Config{PreToolUse: []hooks.Matcher{{Matcher: "*", Hooks: hs}}}
}

// ctxHook prints additional context naming itself.
func ctxHook(name string) hooks.Hook {
	return cmd(`printf '{"additionalContext":"`+name+`"}'`, 0)
}

// gone reports whether pid has exited (no process, or a zombie awaiting
// its reaper).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	if !testwait.Until(15*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("no pid in %s", path)
	}
	return pid
}

func TestMatchers(t *testing.T) {
	t.Parallel()
	cfg := &hooks.Config{
		PreToolUse: []hooks.Matcher{
			{Matcher: "*", Hooks: []hooks.Hook{ctxHook("star")}},
			{Matcher: "terminal", Hooks: []hooks.Hook{ctxHook("terminal")}},
			{Matcher: "file_.*", Hooks: []hooks.Hook{ctxHook("regex")}},
			{Matcher: "/br(owser|ief)/", Hooks: []hooks.Hook{ctxHook("slashed")}},
			{Matcher: "nothing", Hooks: []hooks.Hook{ctxHook("nothing")}},
		},
		UserPromptSubmit: []hooks.Matcher{
			{Matcher: "terminal", Hooks: []hooks.Hook{ctxHook("a")}},
			{Matcher: "*", Hooks: []hooks.Hook{ctxHook("b")}},
		},
	}
	r := runner(t, cfg)
	tests := []struct {
		event hooks.EventType
		tool  string
		want  string
	}{
		{hooks.PreToolUse, "terminal", "star\nterminal"},
		{hooks.PreToolUse, "file_editor", "star\nregex"},
		{hooks.PreToolUse, "browser", "star\nslashed"},
		{hooks.PreToolUse, "brief", "star\nslashed"},
		{hooks.PreToolUse, "terminal2", "star"},
		{hooks.PreToolUse, "xfile_editor", "star"},
		{hooks.UserPromptSubmit, "", "a\nb"},
		{hooks.PostToolUse, "terminal", ""},
	}
	for _, tt := range tests {
		res := r.Run(context.Background(), tt.event, hooks.Input{ToolName: tt.tool})
		if res.AdditionalContext != tt.want || res.Blocked {
			t.Errorf("%s %q: context %q blocked %v, want %q", tt.event, tt.tool, res.AdditionalContext, res.Blocked, tt.want)
		}
	}
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		command     string
		wantBlocked bool
		wantReason  string
		wantContext string
		wantExit    int
		wantErr     string
	}{
		{"exit 0", "echo fine", false, "", "", 0, ""},
		{"exit 2 blocks with stderr reason", "echo '  rm -rf is not allowed ' >&2; exit 2", true, "rm -rf is not allowed", "", 2, ""},
		{"exit 2 without stderr", "exit 2", true, "Blocked by hook", "", 2, ""},
		{"exit 2 JSON reason wins", `echo '{"reason":"json says no"}'; echo stderr >&2; exit 2`, true, "json says no", "", 2, ""},
		{"exit 1 is a non-blocking failure", "echo oops >&2; exit 1", false, "", "", 1, "exit code 1"},
		{"exit 3 non-blocking", "exit 3", false, "", "", 3, "exit code 3"},
		{"decision deny", `echo '{"decision":"deny","reason":"protected file"}'`, true, "protected file", "", 0, ""},
		{"decision block, uppercase", `echo '{"decision":"BLOCK"}'; echo why >&2`, true, "why", "", 0, ""},
		{"decision allow", `echo '{"decision":"allow","reason":"ok","additionalContext":"ctx"}'`, false, "ok", "ctx", 0, ""},
		{"continue false", `echo '{"continue":false,"stopReason":"halt"}'`, true, "halt", "", 0, ""},
		{"continue true", `echo '{"continue":true}'`, false, "", "", 0, ""},
		{"hookSpecificOutput context", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"nested"}}'`, false, "", "nested", 0, ""},
		{"hookSpecificOutput deny", `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"policy"}}'`, true, "policy", "", 0, ""},
		{"not JSON", `echo 'decision: deny'`, false, "", "", 0, ""},
		{"JSON array is ignored", `echo '[{"decision":"deny"}]'`, false, "", "", 0, ""},
		{"JSON with non-string reason", `echo '{"decision":"deny","reason":{"code":7}}'`, true, `{"code":7}`, "", 0, ""},
		{"command not found", "definitely-not-a-command-4711 --flag", false, "", "", 127, "command not found"},
		{"not executable", "f=$(mktemp) && chmod -x $f && $f", false, "", "", 126, "not executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runner(t, pre(cmd(tt.command, 0)))
			res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "terminal"})
			if len(res.Executions) != 1 {
				t.Fatalf("executions: %+v", res.Executions)
			}
			ex := res.Executions[0]
			if res.Blocked != tt.wantBlocked || ex.Blocked != tt.wantBlocked || res.Reason != tt.wantReason && tt.wantBlocked ||
				ex.Reason != tt.wantReason || res.AdditionalContext != tt.wantContext || ex.ExitCode != tt.wantExit {
				t.Errorf("got blocked=%v reason=%q ctx=%q exit=%d err=%q stdout=%q stderr=%q",
					res.Blocked, ex.Reason, res.AdditionalContext, ex.ExitCode, ex.Error, ex.Stdout, ex.Stderr)
			}
			if tt.wantErr == "" && ex.Error != "" || !strings.Contains(ex.Error, tt.wantErr) {
				t.Errorf("Error = %q, want %q", ex.Error, tt.wantErr)
			}
			if ex.TimedOut || ex.Async || ex.Command != tt.command {
				t.Errorf("execution: %+v", ex)
			}
		})
	}
}

func TestFirstBlockStops(t *testing.T) {
	t.Parallel()
	r := runner(t, &hooks.Config{PreToolUse: []hooks.Matcher{
		{Matcher: "*", Hooks: []hooks.Hook{ctxHook("first"), cmd("exit 1", 0), cmd("echo no >&2; exit 2", 0), cmd("touch later", 0)}},
		{Matcher: "terminal", Hooks: []hooks.Hook{cmd("touch later2", 0)}},
	}})
	res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "terminal"})
	if !res.Blocked || res.Reason != "no" || len(res.Executions) != 3 || res.AdditionalContext != "first" {
		t.Fatalf("result: %+v", res)
	}
	for _, f := range []string{"later", "later2"} {
		if _, err := os.Stat(filepath.Join(r.WorkDir, f)); err == nil {
			t.Errorf("hook after the block ran (%s)", f)
		}
	}
}

func TestStdinIsInput(t *testing.T) {
	t.Parallel()
	r := runner(t, &hooks.Config{PostToolUse: []hooks.Matcher{{Matcher: "terminal", Hooks: []hooks.Hook{cmd("cat > stdin.json", 0)}}}})
	in := hooks.Input{
		EventType:    hooks.Stop, // overridden by Run
		ToolName:     "terminal",
		ToolInput:    json.RawMessage(`{"command":"ls && echo <done>"}`),
		ToolResponse: json.RawMessage(`"file1\nfile2"`),
		Message:      "hi",
		Metadata:     map[string]any{"k": "v"},
	}
	res := r.Run(context.Background(), hooks.PostToolUse, in)
	if len(res.Executions) != 1 || res.Executions[0].Error != "" {
		t.Fatalf("result: %+v", res)
	}
	raw, err := os.ReadFile(filepath.Join(r.WorkDir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "ls && echo <done>") {
		t.Errorf("stdin JSON escapes HTML: %s", raw)
	}
	var got hooks.Input
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("stdin %q: %v", raw, err)
	}
	want := in
	want.EventType = hooks.PostToolUse
	want.SessionID = "sess-1"
	want.WorkingDir = r.WorkDir
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stdin = %+v\nwant    %+v", got, want)
	}
}

func TestInvalidRawInputSentAsString(t *testing.T) {
	t.Parallel()
	r := runner(t, pre(cmd("cat > stdin.json", 0)))
	r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x", ToolInput: json.RawMessage(`{not json`)})
	raw, _ := os.ReadFile(filepath.Join(r.WorkDir, "stdin.json"))
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil || got["tool_input"] != "{not json" {
		t.Errorf("stdin %s: %v", raw, err)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("HOOKTEST_API_KEY", "server-secret")
	t.Setenv("HOOKTEST_PLAIN", "inherited")
	r := runner(t, pre(cmd(`printf '%s\n' "$OPENHANDS_PROJECT_DIR" "$OPENHANDS_SESSION_ID" "$OPENHANDS_EVENT_TYPE" "$OPENHANDS_TOOL_NAME" "$CLAUDE_PROJECT_DIR" "$EXTRA_VAR" "$HOOKTEST_PLAIN" "${HOOKTEST_API_KEY:-withheld}" "$(pwd -P)"`, 0)))
	r.Env = []string{"EXTRA_VAR=extra value", "OPENHANDS_EVENT_TYPE=spoofed"}
	res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "file_editor", SessionID: "from-input"})
	if len(res.Executions) != 1 {
		t.Fatalf("%+v", res)
	}
	wd, _ := filepath.EvalSymlinks(r.WorkDir)
	want := strings.Join([]string{r.WorkDir, "from-input", "PreToolUse", "file_editor", r.WorkDir, "extra value", "inherited", "withheld", wd}, "\n") + "\n"
	if got := res.Executions[0].Stdout; got != want {
		t.Errorf("env:\n%s\nwant:\n%s", got, want)
	}
}

// TestEnvFuncReadEachRun checks that EnvFunc is called at every Run (a
// value that changes between runs is seen) and wins over Env.
func TestEnvFuncReadEachRun(t *testing.T) {
	r := runner(t, pre(cmd(`printf '%s|%s' "$LIVE_VAR" "$BOTH_VAR"`, 0)))
	r.Env = []string{"BOTH_VAR=from Env"}
	val := "first"
	r.EnvFunc = func() []string { return []string{"LIVE_VAR=" + val, "BOTH_VAR=from EnvFunc"} }
	for _, want := range []string{"first", "second"} {
		val = want
		res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "terminal"})
		if len(res.Executions) != 1 || res.Executions[0].Stdout != want+"|from EnvFunc" {
			t.Fatalf("want %q, got %+v", want+"|from EnvFunc", res)
		}
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	r := runner(t, pre(cmd("sleep 300 & echo $! > bg.pid; echo started; sleep 300", 1), ctxHook("next")))
	start := time.Now()
	res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "terminal"})
	elapsed := time.Since(start)
	if elapsed > 20*time.Second {
		t.Errorf("Run took %v with a 1s timeout", elapsed)
	}
	if len(res.Executions) != 2 {
		t.Fatalf("executions: %+v", res.Executions)
	}
	ex := res.Executions[0]
	if !ex.TimedOut || ex.Blocked || res.Blocked || ex.ExitCode != -1 || !strings.Contains(ex.Error, "timed out") || ex.Stdout != "started\n" {
		t.Errorf("timed-out execution: %+v", ex)
	}
	if res.AdditionalContext != "next" {
		t.Errorf("a timeout must not stop later hooks: %+v", res)
	}
	pid := readPID(t, filepath.Join(r.WorkDir, "bg.pid"))
	if !testwait.Until(15*time.Second, func() bool { return gone(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("background child %d survived the timeout", pid)
	}
}

func TestHugeOutputIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		stderr  bool
		timeout int
	}{
		{"stdout 50 MB", "yes | head -c 50000000", false, 60},
		{"stderr 50 MB", "yes | head -c 50000000 >&2", true, 60},
		{"endless stdout until timeout", "yes", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runner(t, pre(cmd(tt.command, tt.timeout)))
			start := time.Now()
			res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "terminal"})
			if d := time.Since(start); d > 45*time.Second {
				t.Errorf("took %v", d)
			}
			ex := res.Executions[0]
			out := ex.Stdout
			if tt.stderr {
				out = ex.Stderr
			}
			if len(out) > hooks.MaxOutputChars+200 || !strings.HasPrefix(out, "y\ny\n") || !strings.Contains(out, "[output truncated: showing the first 50000 characters of") {
				t.Errorf("output (%d bytes) tail %q", len(out), out[max(0, len(out)-120):])
			}
			if tt.timeout == 60 {
				if ex.ExitCode != 0 || ex.TimedOut || !strings.Contains(out, "of 50000000 bytes]") {
					t.Errorf("execution: exit %d timedOut %v error %q", ex.ExitCode, ex.TimedOut, ex.Error)
				}
			} else if !ex.TimedOut {
				t.Errorf("endless output should time out: %+v", ex.Error)
			}
		})
	}
}

func TestAsync(t *testing.T) {
	t.Parallel()
	t.Run("not waited for", func(t *testing.T) {
		t.Parallel()
		r := runner(t, pre(hooks.Hook{Command: "sleep 5; touch done", Timeout: 60, Async: true}, ctxHook("sync")))
		start := time.Now()
		res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x"})
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("Run waited %v for an async hook", d)
		}
		if len(res.Executions) != 2 || !res.Executions[0].Async || res.Executions[0].ExitCode != -1 || res.Executions[0].Error != "" || res.AdditionalContext != "sync" {
			t.Fatalf("result: %+v", res)
		}
		if _, err := os.Stat(filepath.Join(r.WorkDir, "done")); err == nil {
			t.Error("async hook finished before Run returned")
		}
		if !testwait.Until(30*time.Second, func() bool { _, err := os.Stat(filepath.Join(r.WorkDir, "done")); return err == nil }) {
			t.Error("async hook never finished")
		}
	})
	t.Run("killed at its timeout", func(t *testing.T) {
		t.Parallel()
		r := runner(t, pre(hooks.Hook{Command: "echo $$ > pid; sleep 30; touch late", Timeout: 1, Async: true}))
		r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x"})
		pid := readPID(t, filepath.Join(r.WorkDir, "pid"))
		if !testwait.Until(20*time.Second, func() bool { return gone(pid) }) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatal("async hook outlived its timeout")
		}
		if _, err := os.Stat(filepath.Join(r.WorkDir, "late")); err == nil {
			t.Error("async hook ran to completion")
		}
	})
}

func TestContextCancellation(t *testing.T) {
	t.Parallel()
	r := runner(t, pre(cmd("sleep 30 & echo $! > bg.pid; sleep 30", 60), cmd("touch later", 0)))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPID(t, filepath.Join(r.WorkDir, "bg.pid"))
		cancel()
	}()
	start := time.Now()
	res := r.Run(ctx, hooks.PreToolUse, hooks.Input{ToolName: "x"})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run took %v after cancellation", d)
	}
	if len(res.Executions) != 1 || res.Blocked || !strings.Contains(res.Executions[0].Error, "cancelled") || res.Executions[0].TimedOut {
		t.Fatalf("result: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(r.WorkDir, "later")); err == nil {
		t.Error("hook after cancellation ran")
	}
	pid := readPID(t, filepath.Join(r.WorkDir, "bg.pid"))
	if !testwait.Until(15*time.Second, func() bool { return gone(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Error("background child survived cancellation")
	}

	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if res := r.Run(done, hooks.PreToolUse, hooks.Input{ToolName: "x"}); len(res.Executions) != 0 {
		t.Errorf("cancelled context ran hooks: %+v", res)
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret", "<hidden>") }
	tests := []struct {
		name    string
		command string
		check   func(hooks.Result) bool
	}{
		{"stdout stderr and stderr reason", "echo out s3cret; echo err s3cret >&2; exit 2", func(r hooks.Result) bool {
			ex := r.Executions[0]
			return ex.Stdout == "out <hidden>\n" && ex.Stderr == "err <hidden>\n" && ex.Reason == "err <hidden>" && r.Reason == "err <hidden>"
		}},
		{"JSON reason and context", `echo '{"decision":"deny","reason":"r s3cret","additionalContext":"c s3cret"}'`, func(r hooks.Result) bool {
			ex := r.Executions[0]
			return r.Reason == "r <hidden>" && r.AdditionalContext == "c <hidden>" && !strings.Contains(ex.Stdout, "s3cret")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runner(t, pre(cmd(tt.command, 0)))
			r.Mask = mask
			res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x"})
			if !tt.check(res) {
				t.Errorf("result: %+v", res)
			}
		})
	}
}

func TestStartFailuresAndUnsupported(t *testing.T) {
	t.Parallel()
	r := runner(t, pre(
		hooks.Hook{Type: "prompt", Command: ""},
		hooks.Hook{Type: "agent"},
		cmd("true", 0),
	))
	res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x"})
	if len(res.Executions) != 3 || res.Blocked {
		t.Fatalf("result: %+v", res)
	}
	for i := 0; i < 2; i++ {
		if ex := res.Executions[i]; !strings.Contains(ex.Error, "unsupported hook type") || ex.ExitCode != -1 {
			t.Errorf("execution %d: %+v", i, ex)
		}
	}
	if ex := res.Executions[2]; ex.Error != "" || ex.ExitCode != 0 {
		t.Errorf("command hook after unsupported ones: %+v", ex)
	}

	bad := &hooks.Runner{Config: pre(cmd("true", 0), ctxHook("next")), WorkDir: filepath.Join(t.TempDir(), "missing")}
	res = bad.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x"})
	if len(res.Executions) != 2 || res.Blocked || !strings.Contains(res.Executions[0].Error, "cannot start hook") || res.Executions[0].ExitCode != -1 {
		t.Errorf("start failure: %+v", res)
	}
}

func TestNoHooks(t *testing.T) {
	t.Parallel()
	var nilRunner *hooks.Runner
	for _, r := range []*hooks.Runner{nilRunner, {}, {Config: &hooks.Config{}}} {
		res := r.Run(context.Background(), hooks.Stop, hooks.Input{})
		if res.Blocked || len(res.Executions) != 0 || res.Executions == nil {
			t.Errorf("%+v", res)
		}
	}
}

func TestLeftoverBackgroundChildDoesNotDelay(t *testing.T) {
	t.Parallel()
	// The hook exits at once but leaves a child holding stdout open: Run
	// returns after a short drain delay, reporting the hook's own exit.
	r := runner(t, pre(cmd("(sleep 20; echo late) & echo $! > bg.pid; echo now", 30)))
	start := time.Now()
	res := r.Run(context.Background(), hooks.PreToolUse, hooks.Input{ToolName: "x"})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %v", d)
	}
	ex := res.Executions[0]
	if ex.ExitCode != 0 || ex.TimedOut || ex.Error != "" || ex.Stdout != "now\n" {
		t.Errorf("execution: %+v", ex)
	}
	pid := readPID(t, filepath.Join(r.WorkDir, "bg.pid"))
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
