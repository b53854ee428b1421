package terminal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/tools/terminal"
)

const softTimeout = 300 * time.Millisecond

const softSuffix = "\n[The command has no new output after 0.3 seconds. You may wait longer to see additional output " +
	"by sending empty command '', send other commands to interact with the current process, send keys " +
	"(\"C-c\", \"C-z\", \"C-d\") to interrupt/kill the previous command before sending your new command, " +
	"or use the timeout parameter in terminal for future commands.]"

// newSession starts a session in a fresh temp dir and closes it at the end
// of the test.
func newSession(t testing.TB, opts terminal.Options) *terminal.Session {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	if opts.NoChangeTimeout == 0 {
		opts.NoChangeTimeout = softTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := terminal.New(ctx, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func seconds(v float64) *float64 { return &v }

func exec(t testing.TB, s *terminal.Session, a events.TerminalAction) *events.TerminalObservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	obs, err := s.Execute(ctx, &a)
	if err != nil {
		t.Fatalf("Execute(%+v): %v", a, err)
	}
	if obs == nil {
		t.Fatalf("Execute(%+v): nil observation", a)
	}
	return obs
}

func run(t testing.TB, s *terminal.Session, command string) *events.TerminalObservation {
	t.Helper()
	// A generous hard timeout: completion is what the callers expect, and a
	// loaded machine must not turn it into a soft timeout.
	return exec(t, s, events.TerminalAction{Command: command, Timeout: seconds(30)})
}

func exitCode(obs *events.TerminalObservation) int {
	if obs.ExitCode == nil {
		return -999
	}
	return *obs.ExitCode
}

// output is the observation text without the trailing metadata lines.
func output(obs *events.TerminalObservation) string {
	text := obs.Text()
	if i := strings.Index(text, "\n[Current working directory:"); i >= 0 {
		text = text[:i]
	} else if strings.HasPrefix(text, "[Current working directory:") {
		text = ""
	}
	return text
}

func TestEchoAndExitCodes(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	tests := []struct {
		command  string
		exitCode int
		output   string // exact output, unless contains is set
		contains string
	}{
		{command: "echo hi", exitCode: 0, output: "hi"},
		{command: "echo hi\n", exitCode: 0, output: "hi"},
		{command: "false", exitCode: 1, output: ""},
		{command: "(exit 7)", exitCode: 7, output: ""},
		{command: "definitely_not_a_command_xyz", exitCode: 127, contains: "command not found"},
		{command: "printf 'no newline'", exitCode: 0, output: "no newline"},
		{command: "echo out; echo err >&2", exitCode: 0, output: "out\nerr"},
		{command: "echo 'a \"quoted\" $HOME' \\; done", exitCode: 0, output: "a \"quoted\" $HOME ; done"},
		{command: "echo hi!", exitCode: 0, output: "hi!"}, // history expansion is off
		{command: "printf 'tab\\there'", exitCode: 0, output: "tab\there"},
	}
	for _, tc := range tests {
		obs := run(t, s, tc.command)
		if got := exitCode(obs); got != tc.exitCode {
			t.Errorf("%q: exit code %d, want %d (text %q)", tc.command, got, tc.exitCode, obs.Text())
		}
		if obs.Metadata.ExitCode != tc.exitCode {
			t.Errorf("%q: metadata exit code %d, want %d", tc.command, obs.Metadata.ExitCode, tc.exitCode)
		}
		if obs.IsError || obs.Timeout {
			t.Errorf("%q: IsError=%v Timeout=%v", tc.command, obs.IsError, obs.Timeout)
		}
		got := output(obs)
		if tc.contains != "" {
			if !strings.Contains(got, tc.contains) {
				t.Errorf("%q: output %q does not contain %q", tc.command, got, tc.contains)
			}
		} else if got != tc.output {
			t.Errorf("%q: output %q, want %q", tc.command, got, tc.output)
		}
		if !strings.HasSuffix(obs.Text(), fmt.Sprintf("\n[Command finished with exit code %d]", tc.exitCode)) {
			t.Errorf("%q: text %q lacks the exit code line", tc.command, obs.Text())
		}
		if obs.Command == nil || *obs.Command != strings.TrimSpace(tc.command) {
			t.Errorf("%q: Command = %v", tc.command, obs.Command)
		}
	}
}

func TestExitStatusVisibleToNextCommand(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	run(t, s, "(exit 5)")
	if got := output(run(t, s, "echo $?")); got != "5" {
		t.Errorf("$? after (exit 5) = %q, want 5", got)
	}
	run(t, s, "true")
	if got := output(run(t, s, "echo $?")); got != "0" {
		t.Errorf("$? after true = %q, want 0", got)
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSession(t, terminal.Options{WorkDir: dir})
	obs := run(t, s, "echo x")
	md := obs.Metadata
	if md.WorkingDir == nil || *md.WorkingDir != dir {
		t.Errorf("WorkingDir = %v, want %s", md.WorkingDir, dir)
	}
	if md.Username == nil || *md.Username == "" || md.Hostname == nil || *md.Hostname == "" {
		t.Errorf("Username/Hostname not set: %+v", md)
	}
	if !strings.Contains(obs.Text(), "[Current working directory: "+dir+"]") {
		t.Errorf("text %q lacks the working directory", obs.Text())
	}
}

func TestStatePersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, terminal.Options{WorkDir: dir, Env: []string{"FROM_OPTS=opt-value"}})
	steps := []struct{ command, want string }{
		{"cd 'sub dir'", ""},
		{"pwd", sub},
		{"export X=1", ""},
		{"echo $X", "1"},
		{"Y=local-var", ""},
		{"echo $Y", "local-var"},
		{"greet() { echo hello \"$1\"; }", ""},
		{"greet world", "hello world"},
		{"echo $FROM_OPTS $PAGER $GIT_PAGER", "opt-value cat cat"},
		{"cd /tmp && pwd", "/tmp"},
		{"pwd", "/tmp"},
	}
	for _, st := range steps {
		obs := run(t, s, st.command)
		if exitCode(obs) != 0 {
			t.Fatalf("%q: exit code %d: %q", st.command, exitCode(obs), obs.Text())
		}
		if got := output(obs); got != st.want {
			t.Errorf("%q: output %q, want %q", st.command, got, st.want)
		}
	}
	if wd := run(t, s, "true").Metadata.WorkingDir; wd == nil || *wd != "/tmp" {
		t.Errorf("WorkingDir = %v, want /tmp", wd)
	}
}

func TestMultiLineStatements(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSession(t, terminal.Options{WorkDir: dir})
	long := strings.Repeat("x", 10000) // longer than a tty line
	tests := []struct{ name, command, want string }{
		{"for loop", "for i in 1 2 3\ndo\n  echo \"n=$i\"\ndone", "n=1\nn=2\nn=3"},
		{"if block", "if true; then\n  echo yes\nelse\n  echo no\nfi\n", "yes"},
		{"heredoc", "cat <<'EOF'\nline one\n  $NOT_EXPANDED\nEOF", "line one\n  $NOT_EXPANDED"},
		{"heredoc to file then use", "cat > f.txt <<EOF\nalpha\nbeta\nEOF\nwc -l < f.txt", "2"},
		{"quoted newline", "echo 'a\nb'", "a\nb"},
		{"line continuation", "echo one \\\n  two", "one two"},
		{"chained", "echo a; echo b && echo c || echo d", "a\nb\nc"},
		{"long line", "echo " + long + " | wc -c", "10001"},
		{"function over lines", "f() {\n  echo in-f\n}\nf", ""}, // two statements: rejected below
	}
	for _, tc := range tests[:len(tests)-1] {
		obs := run(t, s, tc.command)
		if obs.IsError || exitCode(obs) != 0 {
			t.Errorf("%s: IsError=%v exit=%d text=%q", tc.name, obs.IsError, exitCode(obs), obs.Text())
			continue
		}
		if got := output(obs); got != tc.want {
			t.Errorf("%s: output %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMultipleStatementsRejected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSession(t, terminal.Options{WorkDir: dir})
	for _, command := range []string{
		"ls\npwd",
		"touch should-not-exist\necho two",
		"echo a;\necho b",
		"f() {\n  echo in-f\n}\nf",
	} {
		obs := run(t, s, command)
		if !obs.IsError {
			t.Errorf("%q: not rejected: %q", command, obs.Text())
		}
		text := obs.Text()
		if !strings.Contains(text, "Cannot execute multiple commands at once") || !strings.Contains(text, "&& or ;") ||
			!strings.Contains(text, "(1) ") || !strings.Contains(text, "(2) ") {
			t.Errorf("%q: unexpected text %q", command, text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "should-not-exist")); err == nil {
		t.Error("a rejected command was executed")
	}
	// Not a parse error: bash reports it, the call is not rejected.
	obs := run(t, s, "echo 'unterminated")
	if obs.IsError || exitCode(obs) == 0 || !strings.Contains(obs.Text(), "unexpected EOF") {
		t.Errorf("unparsable command: IsError=%v exit=%d text=%q", obs.IsError, exitCode(obs), obs.Text())
	}
}

func TestJSONLiteralRejected(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	for _, command := range []string{`[{"command": "ls"}]`, `{"command": "ls"}`} {
		obs := run(t, s, command)
		if !obs.IsError || obs.ExitCode != nil {
			t.Errorf("%q: IsError=%v ExitCode=%v", command, obs.IsError, obs.ExitCode)
		}
		if !strings.Contains(obs.Text(), "JSON") || !strings.Contains(obs.Text(), "NOT executed") {
			t.Errorf("%q: text %q lacks the hint", command, obs.Text())
		}
	}
}

func TestHardTimeoutThenInput(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{NoChangeTimeout: time.Minute})
	start := time.Now()
	obs := exec(t, s, events.TerminalAction{Command: "read x; echo got $x", Timeout: seconds(0.3)})
	if time.Since(start) > 20*time.Second {
		t.Errorf("hard timeout took %v", time.Since(start))
	}
	if exitCode(obs) != -1 || !obs.Timeout || obs.IsError || obs.Metadata.ExitCode != -1 {
		t.Fatalf("exit=%d Timeout=%v IsError=%v", exitCode(obs), obs.Timeout, obs.IsError)
	}
	wantSuffix := "\n[The command timed out after 0.3 seconds. You may wait longer to see additional output by sending " +
		"empty command '', send other commands to interact with the current process, send keys to interrupt/kill " +
		"the command, or use the timeout parameter in terminal for future commands.]"
	if obs.Metadata.Suffix != wantSuffix {
		t.Errorf("suffix %q, want %q", obs.Metadata.Suffix, wantSuffix)
	}
	if strings.Contains(obs.Text(), "Command finished with exit code") {
		t.Errorf("timeout text has an exit code line: %q", obs.Text())
	}

	obs = exec(t, s, events.TerminalAction{Command: "hello there", IsInput: true, Timeout: seconds(30)})
	if exitCode(obs) != 0 || obs.IsError || obs.Timeout {
		t.Fatalf("after input: exit=%d IsError=%v text=%q", exitCode(obs), obs.IsError, obs.Text())
	}
	if got := output(obs); got != "got hello there" {
		t.Errorf("after input: output %q", got)
	}
}

func TestSoftTimeout(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	obs := exec(t, s, events.TerminalAction{Command: "echo started; cat"})
	if exitCode(obs) != -1 || obs.Timeout || obs.IsError || obs.Metadata.ExitCode != -1 {
		t.Fatalf("exit=%d Timeout=%v IsError=%v text=%q", exitCode(obs), obs.Timeout, obs.IsError, obs.Text())
	}
	if obs.Metadata.Suffix != softSuffix {
		t.Errorf("suffix %q, want %q", obs.Metadata.Suffix, softSuffix)
	}
	if want := "started" + softSuffix; obs.Text() != want {
		t.Errorf("text %q, want %q", obs.Text(), want)
	}
	// Feed cat a line, then end it with C-d.
	obs = exec(t, s, events.TerminalAction{Command: "some input", IsInput: true})
	if exitCode(obs) != -1 || !strings.Contains(obs.Text(), "some input") {
		t.Errorf("cat did not echo its input: exit=%d text=%q", exitCode(obs), obs.Text())
	}
	if !strings.HasPrefix(obs.Metadata.Prefix, "[Below is the output of the previous command.]") {
		t.Errorf("continuation prefix %q", obs.Metadata.Prefix)
	}
	obs = exec(t, s, events.TerminalAction{Command: "C-d", IsInput: true, Timeout: seconds(30)})
	if exitCode(obs) != 0 {
		t.Errorf("after C-d: exit=%d text=%q", exitCode(obs), obs.Text())
	}
}

func TestEmptyCommandKeepsWaiting(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	obs := exec(t, s, events.TerminalAction{Command: "echo begin; sleep 1.5; echo finished"})
	if exitCode(obs) != -1 || !strings.Contains(obs.Text(), "begin") {
		t.Fatalf("first call: exit=%d text=%q", exitCode(obs), obs.Text())
	}
	var texts []string
	for i := 0; i < 100 && exitCode(obs) == -1; i++ {
		obs = exec(t, s, events.TerminalAction{Command: ""})
		texts = append(texts, obs.Text())
		if obs.IsError {
			t.Fatalf("empty command: IsError: %q", obs.Text())
		}
	}
	if exitCode(obs) != 0 {
		t.Fatalf("command never completed: %q", texts)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "finished") || strings.Contains(all, "begin") {
		t.Errorf("continuation output %q: want the later output only", all)
	}

	// With a timeout, an empty command waits for completion in one call.
	obs = exec(t, s, events.TerminalAction{Command: "sleep 0.5; echo done2", Timeout: seconds(0.05)})
	if exitCode(obs) == -1 {
		obs = exec(t, s, events.TerminalAction{Command: "", Timeout: seconds(30)})
	}
	if exitCode(obs) != 0 || !strings.Contains(obs.Text(), "done2") {
		t.Errorf("wait with timeout: exit=%d text=%q", exitCode(obs), obs.Text())
	}
}

func TestNothingRunning(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	tests := []struct {
		action events.TerminalAction
		text   string
	}{
		{events.TerminalAction{Command: "", IsInput: false}, "No previous running command to retrieve logs from."},
		{events.TerminalAction{Command: "y", IsInput: true}, "No previous running command to interact with."},
		{events.TerminalAction{Command: "C-c", IsInput: true}, "No previous running command to interact with."},
		{events.TerminalAction{Command: "ls", IsInput: true, Reset: true}, "Cannot use reset=True with is_input=True."},
	}
	for _, tc := range tests {
		obs := exec(t, s, tc.action)
		if !obs.IsError || obs.Text() != tc.text {
			t.Errorf("%+v: IsError=%v text=%q, want %q", tc.action, obs.IsError, obs.Text(), tc.text)
		}
	}
}

func TestRefuseWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSession(t, terminal.Options{WorkDir: dir})
	obs := exec(t, s, events.TerminalAction{Command: "sleep 60"})
	if exitCode(obs) != -1 {
		t.Fatalf("sleep did not time out: %q", obs.Text())
	}
	obs = exec(t, s, events.TerminalAction{Command: "touch refused.txt"})
	want := "[Your command \"touch refused.txt\" is NOT executed. The previous command is still running - You CANNOT " +
		"send new commands until the previous command is completed. By setting `is_input` to `true`, you can " +
		"interact with the current process: You may wait longer to see additional output by sending empty command " +
		"'', send other commands to interact with the current process, send keys (\"C-c\", \"C-z\", \"C-d\") to " +
		"interrupt/kill the previous command before sending your new command.]"
	if !obs.IsError || exitCode(obs) != -1 || obs.Text() != want {
		t.Errorf("IsError=%v exit=%d text=%q", obs.IsError, exitCode(obs), obs.Text())
	}
	if _, err := os.Stat(filepath.Join(dir, "refused.txt")); err == nil {
		t.Error("the refused command ran")
	}
	obs = exec(t, s, events.TerminalAction{Command: "C-c", IsInput: true, Timeout: seconds(30)})
	if exitCode(obs) != 130 {
		t.Errorf("C-c: exit=%d text=%q", exitCode(obs), obs.Text())
	}
	if got := output(run(t, s, "echo free")); got != "free" {
		t.Errorf("after C-c: %q", got)
	}
}

func TestInterruptAndSuspend(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	tests := []struct {
		command, key string
		exitCode     int
	}{
		{"sleep 100", "C-c", 130},
		{"read line", "C-c", 130},
		{"for i in 1 2 3; do sleep 100; done", "C-c", 130},
		{"sleep 101", "C-z", 148},
		{"cat", "C-d", 0},
	}
	for _, tc := range tests {
		obs := exec(t, s, events.TerminalAction{Command: tc.command, Timeout: seconds(0.2)})
		if exitCode(obs) != -1 {
			t.Fatalf("%q: finished early: %q", tc.command, obs.Text())
		}
		start := time.Now()
		obs = exec(t, s, events.TerminalAction{Command: tc.key, IsInput: true, Timeout: seconds(30)})
		if exitCode(obs) != tc.exitCode {
			t.Errorf("%q + %s: exit=%d, want %d (text %q)", tc.command, tc.key, exitCode(obs), tc.exitCode, obs.Text())
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%q + %s took %v", tc.command, tc.key, d)
		}
	}
	if got := output(run(t, s, "jobs")); !strings.Contains(got, "Stopped") || !strings.Contains(got, "sleep 101") {
		t.Errorf("jobs after C-z: %q", got)
	}
	run(t, s, "kill -9 %1")
}

func TestBackgroundJob(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{NoChangeTimeout: time.Minute})
	start := time.Now()
	obs := exec(t, s, events.TerminalAction{Command: "sleep 100 &"})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("background job blocked for %v", d)
	}
	if exitCode(obs) != 0 || obs.Metadata.PID <= 0 {
		t.Fatalf("exit=%d pid=%d text=%q", exitCode(obs), obs.Metadata.PID, obs.Text())
	}
	if !strings.Contains(obs.Text(), strconv.Itoa(obs.Metadata.PID)) {
		t.Errorf("job announcement missing from %q", obs.Text())
	}
	if got := output(run(t, s, "echo still responsive")); got != "still responsive" {
		t.Errorf("after background job: %q", got)
	}
	if got := output(run(t, s, "jobs -p")); got != strconv.Itoa(obs.Metadata.PID) {
		t.Errorf("jobs -p = %q, want %d", got, obs.Metadata.PID)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSession(t, terminal.Options{WorkDir: dir, Env: []string{"KEEP=kept"}})
	run(t, s, "export GONE=1; cd /")
	oldPID := s.PID()
	obs := exec(t, s, events.TerminalAction{Command: "sleep 100"}) // left running
	if exitCode(obs) != -1 {
		t.Fatalf("sleep finished: %q", obs.Text())
	}

	obs = exec(t, s, events.TerminalAction{Reset: true})
	if obs.IsError || exitCode(obs) != 0 || !strings.HasPrefix(obs.Text(), "[Terminal session has been reset.") {
		t.Fatalf("reset: IsError=%v exit=%d text=%q", obs.IsError, exitCode(obs), obs.Text())
	}
	if s.PID() == oldPID {
		t.Error("shell pid unchanged after reset")
	}
	obs = run(t, s, "echo ${GONE:-unset} $KEEP; pwd")
	if got := output(obs); got != "unset kept\n"+dir {
		t.Errorf("after reset: %q", got)
	}

	obs = exec(t, s, events.TerminalAction{Command: "echo fresh", Reset: true, Timeout: seconds(30)})
	if exitCode(obs) != 0 || !strings.HasPrefix(obs.Text(), "[Terminal session has been reset.") ||
		!strings.Contains(obs.Text(), "\nfresh\n") {
		t.Errorf("reset with command: exit=%d text=%q", exitCode(obs), obs.Text())
	}
}

func TestShellExitRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSession(t, terminal.Options{WorkDir: dir})
	run(t, s, "cd /")
	obs := run(t, s, "exit 3")
	if exitCode(obs) != 3 || !strings.Contains(obs.Text(), "shell exited") {
		t.Errorf("exit: exit=%d text=%q", exitCode(obs), obs.Text())
	}
	if got := output(run(t, s, "pwd")); got != dir {
		t.Errorf("pwd after restart = %q, want %s", got, dir)
	}
}

func TestTruncation(t *testing.T) {
	t.Parallel()
	saveDir := filepath.Join(t.TempDir(), "saved")
	s := newSession(t, terminal.Options{MaxOutputChars: 2000, SaveDir: saveDir})
	obs := run(t, s, "seq 1 20000")
	text := obs.Text()
	if n := utf8.RuneCountInString(text); n > 2000 {
		t.Errorf("text has %d characters, limit 2000", n)
	}
	if !strings.HasPrefix(text, "1\n2\n3\n") || !strings.HasSuffix(text, "[Command finished with exit code 0]") {
		t.Errorf("head or tail missing: %q ... %q", text[:20], text[len(text)-60:])
	}
	if !strings.Contains(text, "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.") {
		t.Errorf("no truncation notice in %q", text)
	}
	if obs.FullOutputSaveDir == nil || *obs.FullOutputSaveDir != saveDir {
		t.Fatalf("FullOutputSaveDir = %v, want %s", obs.FullOutputSaveDir, saveDir)
	}
	files, err := filepath.Glob(filepath.Join(saveDir, "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("saved files: %v %v", files, err)
	}
	if !strings.Contains(text, files[0]) {
		t.Errorf("notice does not name %s", files[0])
	}
	full, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(full), "\n10000\n") || !strings.Contains(string(full), "\n20000\n") {
		t.Errorf("saved output incomplete (%d bytes)", len(full))
	}

	small := run(t, s, "echo small")
	if small.FullOutputSaveDir != nil || strings.Contains(small.Text(), "response clipped") {
		t.Errorf("short output truncated: %q", small.Text())
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	saveDir := t.TempDir()
	mask := func(s string) string { return strings.ReplaceAll(s, "hunter2", "<secret>") }
	s := newSession(t, terminal.Options{Mask: mask, MaxOutputChars: 500, SaveDir: saveDir})
	obs := run(t, s, "echo the password is hunter2")
	if strings.Contains(obs.Text(), "hunter2") || !strings.Contains(obs.Text(), "the password is <secret>") {
		t.Errorf("not masked: %q", obs.Text())
	}
	obs = run(t, s, "for i in $(seq 300); do echo line $i hunter2; done")
	if obs.FullOutputSaveDir == nil {
		t.Fatalf("expected truncation: %q", obs.Text())
	}
	if strings.Contains(obs.Text(), "hunter2") {
		t.Errorf("truncated text not masked")
	}
	files, _ := filepath.Glob(filepath.Join(saveDir, "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "hunter2") || !strings.Contains(string(data), "line 300 <secret>") {
			t.Errorf("saved file %s not masked", f)
		}
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	ctx := context.Background()
	value := "s3cr3t 'quoted' \"double\" $dollar\nsecond line"
	if err := s.Export(ctx, "API_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	obs := run(t, s, `printf '%s' "$API_TOKEN"`)
	if got := output(obs); got != value {
		t.Errorf("exported value %q, want %q", got, value)
	}
	obs = run(t, s, "echo next")
	if got := output(obs); got != "next" {
		t.Errorf("export leaked into output: %q", got)
	}
	if got := output(run(t, s, "bash -c 'echo child sees ${API_TOKEN:0:6}'")); got != "child sees s3cr3t" {
		t.Errorf("not exported to children: %q", got)
	}
	if err := s.Export(ctx, "BAD-NAME", "x"); err == nil {
		t.Error("invalid name accepted")
	}

	// While a command runs the export is applied before the next command.
	obs = exec(t, s, events.TerminalAction{Command: "sleep 100", Timeout: seconds(0.1)})
	if exitCode(obs) != -1 {
		t.Fatalf("sleep finished: %q", obs.Text())
	}
	if err := s.Export(ctx, "LATER", "later-value"); err != nil {
		t.Fatal(err)
	}
	exec(t, s, events.TerminalAction{Command: "C-c", IsInput: true, Timeout: seconds(30)})
	if got := output(run(t, s, "echo $LATER")); got != "later-value" {
		t.Errorf("queued export: %q", got)
	}

	// Exports survive a reset.
	exec(t, s, events.TerminalAction{Reset: true})
	if got := output(run(t, s, "echo ${API_TOKEN:0:6} $LATER")); got != "s3cr3t later-value" {
		t.Errorf("after reset: %q", got)
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{NoChangeTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	obs, err := s.Execute(ctx, &events.TerminalAction{Command: "sleep 100"})
	if !errors.Is(err, context.DeadlineExceeded) || obs != nil {
		t.Fatalf("Execute = %v, %v; want context.DeadlineExceeded", obs, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancellation took %v", d)
	}
	// The C-c sent on cancellation ended sleep; the next command runs and
	// reports how the previous one ended.
	obs = run(t, s, "echo ok")
	if got := obs.Text(); !strings.Contains(got, "ok") || !strings.Contains(got, "previous command completed with exit code 130") {
		t.Errorf("after cancel: %q", got)
	}
	// An already cancelled context does nothing.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := s.Execute(cctx, &events.TerminalAction{Command: "echo no"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}

func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// A zombie has exited; it is only waiting for its (new) parent to reap it.
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(string(data[i+1:])), "Z")
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	if !testwait.Until(10*time.Second, func() bool { return processGone(pid) }) {
		t.Errorf("process %d still running", pid)
	}
}

// Not parallel: it counts goroutines.
func TestCloseKillsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := terminal.New(context.Background(), terminal.Options{WorkDir: t.TempDir(), NoChangeTimeout: softTimeout})
	if err != nil {
		t.Fatal(err)
	}
	shellPID := s.PID()
	bg := run(t, s, "sleep 100 &")
	obs := exec(t, s, events.TerminalAction{Command: "sleep 200"}) // foreground, still running
	if exitCode(obs) != -1 {
		t.Fatalf("sleep 200 finished: %q", obs.Text())
	}
	if bg.Metadata.PID <= 0 || syscall.Kill(bg.Metadata.PID, 0) != nil {
		t.Fatalf("background pid %d not running", bg.Metadata.PID)
	}
	members := sessionMembers(shellPID)
	if len(members) < 3 { // bash, the background sleep, the foreground sleep
		t.Fatalf("session members %v: want at least 3", members)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitGone(t, shellPID)
	waitGone(t, bg.Metadata.PID)
	for _, pid := range members {
		waitGone(t, pid)
	}
	if _, err := s.Execute(context.Background(), &events.TerminalAction{Command: "echo x"}); !errors.Is(err, terminal.ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
	if err := s.Export(context.Background(), "A", "b"); !errors.Is(err, terminal.ErrClosed) {
		t.Errorf("Export after Close: %v", err)
	}
	if !testwait.Until(10*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

// sessionMembers lists the live processes of session sid.
func sessionMembers(sid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(data), ')')
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 3 && f[0] != "Z" && f[3] == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestCloseInterruptsExecute(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{NoChangeTimeout: time.Minute})
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(context.Background(), &events.TerminalAction{Command: "sleep 100"})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // legitimate: let Execute start the command before Close
	_ = s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, terminal.ErrClosed) {
			t.Errorf("Execute returned %v, want ErrClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Execute did not return after Close")
	}
}

func TestConcurrentExecuteSerialised(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Go(func() {
			want := fmt.Sprintf("worker-%d", i)
			obs, err := s.Execute(context.Background(), &events.TerminalAction{Command: "echo " + want, Timeout: seconds(30)})
			if err != nil {
				errs <- err.Error()
				return
			}
			if got := output(obs); got != want {
				errs <- fmt.Sprintf("got %q want %q", got, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestOutputCleanup(t *testing.T) {
	t.Parallel()
	s := newSession(t, terminal.Options{})
	tests := []struct{ command, want string }{
		{`printf '\033[31mred\033[0m plain\n'`, "red plain"},
		{`printf '\033]0;title\007after\n'`, "after"},
		{`printf 'progress 10%%\rprogress 100%%\n'`, "progress 100%"},
		{`printf 'abcdef\rXY\n'`, "XYcdef"},
		{`printf 'crlf\r\nline\r\n'`, "crlf\nline"},
		{`printf 'héllo wörld ✓\n'`, "héllo wörld ✓"},
		{`echo '###PS1JSON###'; echo '{"exit_code": "9"}'; echo '###PS1END###'`, "###PS1JSON###\n{\"exit_code\": \"9\"}\n###PS1END###"},
	}
	for _, tc := range tests {
		obs := run(t, s, tc.command)
		if got := output(obs); got != tc.want || exitCode(obs) != 0 {
			t.Errorf("%s: output %q exit %d, want %q", tc.command, got, exitCode(obs), tc.want)
		}
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []terminal.Options{
		{WorkDir: ""},
		{WorkDir: "relative/dir"},
		{WorkDir: "/definitely/not/existing/dir"},
		{WorkDir: file},
		{WorkDir: t.TempDir(), Env: []string{"NOEQUALS"}},
		{WorkDir: t.TempDir(), Shell: "/definitely/not/a/shell"},
	} {
		s, err := terminal.New(context.Background(), opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("New(%+v) succeeded", opts)
		}
	}
}

func BenchmarkEchoRoundTrip(b *testing.B) {
	s := newSession(b, terminal.Options{})
	ctx := context.Background()
	a := &events.TerminalAction{Command: "echo hi"}
	for b.Loop() {
		obs, err := s.Execute(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		if exitCode(obs) != 0 {
			b.Fatalf("exit code %d: %q", exitCode(obs), obs.Text())
		}
	}
}
