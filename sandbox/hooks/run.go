package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/sandbox/procenv"
)

// Input is the event a hook receives as JSON on stdin.
type Input struct {
	EventType    EventType       `json:"event_type"`
	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	Message      string          `json:"message,omitempty"`
	SessionID    string          `json:"session_id"`
	WorkingDir   string          `json:"working_dir"`
	Metadata     map[string]any  `json:"metadata,omitempty"`
}

// Execution reports one hook run.
type Execution struct {
	Command string `json:"command"`
	// ExitCode is the command's exit status, or -1 when there is none (the
	// hook did not start, timed out, was cancelled, was killed by a signal,
	// is async, or is not a command hook).
	ExitCode int `json:"exit_code"`
	// Stdout and Stderr hold at most MaxOutputChars characters each (masked),
	// followed by a truncation note when the output was longer.
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMs int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out"`
	// Error describes a failure: a non-zero exit other than 2, a timeout, a
	// cancellation, a start failure or an unsupported hook type.
	Error string `json:"error,omitempty"`
	Async bool   `json:"async"`
	// Blocked is true when the hook blocks the operation; Reason says why.
	Blocked           bool   `json:"blocked"`
	Reason            string `json:"reason,omitempty"`
	AdditionalContext string `json:"additional_context,omitempty"`
}

// Result is the outcome of running an event's hooks.
type Result struct {
	// Blocked is true when a hook blocked the operation; Reason is that
	// hook's reason.
	Blocked bool   `json:"blocked"`
	Reason  string `json:"reason,omitempty"`
	// AdditionalContext joins (with "\n") the additional context of every
	// hook that ran, in order.
	AdditionalContext string      `json:"additional_context,omitempty"`
	Executions        []Execution `json:"executions"`
}

// Output bounds.
const (
	// MaxOutputChars is how many characters of each stream an Execution keeps.
	MaxOutputChars = 50000
	// MaxCaptureBytes is how many bytes of each stream are read into memory;
	// the rest is read and discarded.
	MaxCaptureBytes = 1 << 20
)

// waitDelay bounds how long a finished hook's output pipes are drained when
// a background process it left behind keeps them open.
const waitDelay = time.Second

// Runner runs the hooks of a Config. Its fields are read-only while Run runs;
// Run may be called concurrently.
type Runner struct {
	Config *Config
	// WorkDir is the hooks' working directory and OPENHANDS_PROJECT_DIR
	// (default: the current directory).
	WorkDir string
	// SessionID is the default Input.SessionID and OPENHANDS_SESSION_ID.
	SessionID string
	// Env is extra KEY=VALUE environment for the hooks.
	Env []string
	// EnvFunc, when set, is called at the start of every Run for more
	// KEY=VALUE environment, after Env (so it wins on a clash): values that
	// change while the runner lives, such as a conversation's secrets.
	EnvFunc func() []string
	// Mask, when set, is applied to stdout, stderr, reasons and additional
	// context before they are returned (for example to hide secrets).
	Mask func(string) string
}

// Run runs the hooks of event, in configuration order, and stops at the first
// hook that blocks. For pre_tool_use and post_tool_use only matchers that
// match in.ToolName are used; for the other events every matcher is.
//
// in.EventType is set to event; an empty in.SessionID defaults to
// r.SessionID and an empty in.WorkingDir to the working directory. The Input
// is written as JSON to each hook's stdin (a ToolInput or ToolResponse that
// is not valid JSON is sent as a JSON string).
//
// Each command hook runs as /bin/sh -c <command> in WorkDir, in its own
// process group, with the inherited environment (minus the agent server's
// own credentials, procenv.Withheld, and variables whose names contain KEY,
// TOKEN, SECRET or PASSWORD), then r.Env and r.EnvFunc(), then
// OPENHANDS_PROJECT_DIR, CLAUDE_PROJECT_DIR, OPENHANDS_SESSION_ID,
// OPENHANDS_EVENT_TYPE and OPENHANDS_TOOL_NAME. At its timeout, or when ctx
// is done, the whole process group is killed: a timeout is reported
// (TimedOut) and does not block; a cancellation is reported and stops the
// remaining hooks. Exit code 2 blocks; 0 succeeds; other codes are reported,
// non-blocking failures (127: command not found). When stdout is a JSON
// object, {"decision":"deny"|"block"}, {"continue":false} and
// {"hookSpecificOutput":{"permissionDecision":"deny"}} block, and "reason"
// (else "stopReason", else hookSpecificOutput.permissionDecisionReason) and
// "additionalContext" (else hookSpecificOutput.additionalContext) are read.
// A block's reason is the JSON reason, else the trimmed stderr, else
// "Blocked by hook". A hook that cannot start is a reported failure, not a
// block. Async hooks are started and not waited for; they are killed at
// their timeout (independently of ctx). Non-command hooks are reported as
// unsupported.
//
// Memory is bounded: at most MaxCaptureBytes of each stream are kept (the
// rest is read and discarded) and MaxOutputChars returned. Run returns within
// about the sum of the hooks' timeouts plus one second per hook, and promptly
// after ctx is done. It never panics on hook behaviour.
func (r *Runner) Run(ctx context.Context, event EventType, in Input) Result {
	res := Result{Executions: []Execution{}}
	if r == nil || r.Config == nil {
		return res
	}
	toolEvent := event == PreToolUse || event == PostToolUse
	var hooks []Hook
	for _, m := range r.Config.For(event) {
		if !toolEvent || m.Matches(in.ToolName) {
			hooks = append(hooks, m.Hooks...)
		}
	}
	if len(hooks) == 0 {
		return res
	}
	workDir := r.WorkDir
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	in.EventType = event
	if in.SessionID == "" {
		in.SessionID = r.SessionID
	}
	if in.WorkingDir == "" {
		in.WorkingDir = workDir
	}
	stdin := encodeInput(in)
	env := r.environ(event, in, workDir)

	var extra []string
	for _, h := range hooks {
		if ctx.Err() != nil {
			break
		}
		ex := r.runOne(ctx, h, stdin, env, workDir)
		res.Executions = append(res.Executions, ex)
		if ex.AdditionalContext != "" {
			extra = append(extra, ex.AdditionalContext)
		}
		if ex.Blocked {
			res.Blocked, res.Reason = true, ex.Reason
			break
		}
	}
	res.AdditionalContext = strings.Join(extra, "\n")
	return res
}

func (r *Runner) mask(s string) string {
	if r.Mask == nil || s == "" {
		return s
	}
	return r.Mask(s)
}

// secretName reports whether an inherited variable is withheld from hooks
// (the same rule the bash service applies to commands).
func secretName(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

func (r *Runner) environ(event EventType, in Input, workDir string) []string {
	var env []string
	for _, kv := range procenv.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !secretName(name) {
			env = append(env, kv)
		}
	}
	env = append(env, r.Env...)
	if r.EnvFunc != nil {
		env = append(env, r.EnvFunc()...)
	}
	// exec.Cmd keeps the last value of a duplicated key.
	return append(env,
		"OPENHANDS_PROJECT_DIR="+workDir,
		"CLAUDE_PROJECT_DIR="+workDir,
		"OPENHANDS_SESSION_ID="+in.SessionID,
		"OPENHANDS_EVENT_TYPE="+event.Name(),
		"OPENHANDS_TOOL_NAME="+in.ToolName,
	)
}

// encodeInput renders the stdin JSON without HTML escaping.
func encodeInput(in Input) []byte {
	fix := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 || json.Valid(raw) {
			return raw
		}
		q, _ := json.Marshal(strings.ToValidUTF8(string(raw), "\uFFFD"))
		return q
	}
	in.ToolInput, in.ToolResponse = fix(in.ToolInput), fix(in.ToolResponse)
	enc := func(v Input) ([]byte, error) {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
	}
	b, err := enc(in)
	if err != nil { // unencodable metadata
		in.Metadata = nil
		b, _ = enc(in)
	}
	return b
}

func timeoutOf(h Hook) time.Duration {
	t := h.Timeout
	switch {
	case t <= 0:
		t = DefaultTimeout
	case t > MaxTimeout:
		t = MaxTimeout
	}
	return time.Duration(t) * time.Second
}

// killGroup kills the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func (r *Runner) runOne(ctx context.Context, h Hook, stdin []byte, env []string, dir string) Execution {
	ex := Execution{Command: h.Command, ExitCode: -1, Async: h.Async, Stdout: "", Stderr: ""}
	typ := h.Type
	if typ == "" {
		typ = TypeCommand
	}
	if typ != TypeCommand {
		ex.Error = fmt.Sprintf("unsupported hook type %q: only command hooks are run", typ)
		return ex
	}
	if strings.TrimSpace(h.Command) == "" {
		ex.Error = "empty command"
		return ex
	}
	timeout := timeoutOf(h)
	cmd := exec.Command("/bin/sh", "-c", h.Command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitDelay
	start := time.Now()

	if h.Async {
		if err := cmd.Start(); err != nil {
			ex.Error = "cannot start hook: " + err.Error()
			return ex
		}
		go reapAsync(cmd, timeout)
		ex.DurationMs = time.Since(start).Milliseconds()
		return ex
	}

	stdout, stderr := &capture{}, &capture{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		ex.Error = "cannot start hook: " + err.Error()
		ex.DurationMs = time.Since(start).Milliseconds()
		return ex
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var werr error
	var timedOut, canceled bool
	select {
	case werr = <-done:
	case <-timer.C:
		timedOut = true
		killGroup(cmd.Process.Pid)
		werr = <-done
	case <-ctx.Done():
		canceled = true
		killGroup(cmd.Process.Pid)
		werr = <-done
	}
	ex.DurationMs = time.Since(start).Milliseconds()
	rawOut, outTotal := stdout.get()
	rawErr, errTotal := stderr.get()
	ex.Stdout = bound(r.mask(string(rawOut)), outTotal)
	ex.Stderr = bound(r.mask(string(rawErr)), errTotal)

	state := cmd.ProcessState
	exited := state != nil && state.Exited() // ended on its own, not by a signal
	switch {
	case canceled && !exited:
		ex.Error = "hook cancelled: " + context.Cause(ctx).Error()
		return ex
	case timedOut && !exited:
		ex.TimedOut = true
		ex.Error = fmt.Sprintf("hook timed out after %s; its process group was killed", timeout)
		return ex
	case state == nil:
		ex.Error = "hook failed: " + errString(werr)
		return ex
	case !exited:
		ex.Error = "hook was terminated by a signal: " + state.String()
		return ex
	}
	ex.ExitCode = state.ExitCode()

	var out jsonOutput
	if outTotal <= MaxCaptureBytes {
		out = parseOutput(rawOut)
	}
	ex.AdditionalContext = boundText(r.mask(out.additionalContext))
	if ex.ExitCode == 2 || out.block {
		ex.Blocked = true
		reason := out.reason
		if reason == "" {
			reason = strings.TrimSpace(string(rawErr))
		}
		if reason == "" {
			reason = "Blocked by hook"
		}
		ex.Reason = boundText(r.mask(reason))
	} else if out.reason != "" {
		ex.Reason = boundText(r.mask(out.reason))
	}
	switch ex.ExitCode {
	case 0, 2:
	case 126:
		ex.Error = "hook failed with exit code 126 (command not executable)"
	case 127:
		ex.Error = "hook failed with exit code 127 (command not found)"
	default:
		ex.Error = fmt.Sprintf("hook failed with exit code %d", ex.ExitCode)
	}
	return ex
}

func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// reapAsync waits for an async hook and kills its process group at its
// timeout if it is still running.
func reapAsync(cmd *exec.Cmd, timeout time.Duration) {
	var mu sync.Mutex
	exited := false
	timer := time.AfterFunc(timeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !exited {
			killGroup(cmd.Process.Pid)
		}
	})
	_ = cmd.Wait()
	mu.Lock()
	exited = true
	mu.Unlock()
	timer.Stop()
}

// capture keeps the first MaxCaptureBytes written and counts the rest. Its
// Write never fails, so the writer is never blocked or broken.
type capture struct {
	mu    sync.Mutex
	buf   []byte
	total int64
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := MaxCaptureBytes - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(n, room)]...)
	}
	return n, nil // always the full length: a short write would stop the copy
}

func (c *capture) get() ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.total
}

// bound returns s cut to MaxOutputChars characters (invalid UTF-8 replaced)
// with a note when the stream (total bytes) was longer than what is shown.
func bound(s string, total int64) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	n := utf8.RuneCountInString(s)
	if n <= MaxOutputChars && total <= int64(len(s)) {
		return s
	}
	if n > MaxOutputChars {
		s = cutRunes(s, MaxOutputChars)
	}
	return s + fmt.Sprintf("\n[output truncated: showing the first %d characters of %d bytes]", utf8.RuneCountInString(s), total)
}

// boundText cuts reasons and context to MaxOutputChars characters.
func boundText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) > MaxOutputChars {
		return cutRunes(s, MaxOutputChars) + "\n[truncated]"
	}
	return s
}

func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

type jsonOutput struct {
	block             bool
	reason            string
	additionalContext string
}

// parseOutput reads the hook protocol fields of a JSON-object stdout.
func parseOutput(stdout []byte) jsonOutput {
	var out jsonOutput
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return out
	}
	var m map[string]any
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return out
	}
	spec, _ := m["hookSpecificOutput"].(map[string]any)
	if d, ok := m["decision"].(string); ok {
		switch strings.ToLower(d) {
		case "deny", "block":
			out.block = true
		}
	}
	if c, ok := m["continue"].(bool); ok && !c {
		out.block = true
	}
	if spec != nil {
		if d, ok := spec["permissionDecision"].(string); ok && strings.EqualFold(d, "deny") {
			out.block = true
		}
	}
	out.reason = text(m["reason"])
	if out.reason == "" {
		out.reason = text(m["stopReason"])
	}
	if out.reason == "" && spec != nil {
		out.reason = text(spec["permissionDecisionReason"])
	}
	out.additionalContext = text(m["additionalContext"])
	if out.additionalContext == "" && spec != nil {
		out.additionalContext = text(spec["additionalContext"])
	}
	return out
}

// text renders a JSON value as text: strings as-is, null as "", others as
// compact JSON.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
