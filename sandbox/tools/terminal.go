package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/terminal"
)

const terminalDescription = `Execute a bash command in the terminal within a persistent shell session.

### Command Execution
* One command at a time: You can only execute one bash command at a time. If you need to run multiple commands sequentially, use ` + "`&&`" + ` or ` + "`;`" + ` to chain them together.
* Persistent session: Commands execute in a persistent shell session where environment variables, virtual environments, and working directory persist between commands.
* Soft timeout: Commands have a soft timeout of {{.SoftTimeoutSeconds}} seconds without new output; once that's reached, you have the option to continue or interrupt the command.
* Shell options: Do NOT use ` + "`set -e`" + `, ` + "`set -eu`" + `, or ` + "`set -euo pipefail`" + ` in shell scripts or commands in this environment.

### Long-running Commands
* For commands that may run indefinitely, run them in the background and redirect output to a file, e.g. ` + "`python3 app.py > server.log 2>&1 &`" + `.
* For commands that may run for a long time (e.g. installation or testing commands), set the "timeout" parameter to a higher value.
* If a command returns exit code ` + "`-1`" + `, the process hit the soft timeout and is still running. You can:
  - Send empty ` + "`command`" + ` to retrieve additional logs
  - Send text (set ` + "`command`" + ` to the text) to STDIN of the running process (set ` + "`is_input`" + ` to true)
  - Send control commands like ` + "`C-c`" + ` (Ctrl+C), ` + "`C-d`" + ` (Ctrl+D), or ` + "`C-z`" + ` (Ctrl+Z) to interrupt the process (set ` + "`is_input`" + ` to true)

### Best Practices
* Directory verification: Before creating new directories or files, first verify the parent directory exists and is the correct location.
* Directory management: Try to maintain your working directory by using absolute paths and avoiding excessive use of ` + "`cd`" + `.

### Output Handling
* Output truncation: If the output exceeds a maximum length, it will be truncated before being returned; the full output is saved to a file named in the observation.`

// terminalArgs are the arguments of terminal (events.TerminalAction).
type terminalArgs struct {
	Command string   "json:\"command\" jsonschema:\"required\" description:\"The bash command to execute. Can be empty string to view additional logs when previous exit code is `-1`. Can be `C-c` (Ctrl+C) to interrupt the currently running process. Note: You can only execute one bash command at a time. If you need to run multiple commands sequentially, you can use `&&` or `;` to chain them together.\""
	IsInput bool     `json:"is_input" description:"If True, the command is an input to the running process. If False, the command is a bash command to be executed in the terminal. Default is False."`
	Timeout *float64 `json:"timeout" jsonschema:"minimum=0" description:"Optional. Sets a hard timeout in seconds for the command execution. If not provided, the command will use the default soft timeout behavior."`
	Reset   bool     `json:"reset" description:"If True, reset the terminal by creating a new session. Use this only when the terminal becomes unresponsive. Note that all previously set environment variables and session state will be lost after reset. Cannot be used with is_input=True."`
}

var _ = events.TerminalAction(terminalArgs{})

// terminalLimits are the limits terminal's description states.
var terminalLimits = struct{ SoftTimeoutSeconds int }{int(terminal.DefaultNoChangeTimeout / time.Second)}

// terminalTool starts its shell on first use, so idle conversations cost no
// process.
type terminalTool struct {
	base
	env Env

	mu      sync.Mutex
	session *terminal.Session
	exports map[string]string
}

func newTerminal(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	return &terminalTool{base: newBase[terminalArgs]("TerminalTool", terminalDescription, terminalLimits),
		env: env, exports: map[string]string{}}, nil
}

func (t *terminalTool) get(ctx context.Context) (*terminal.Session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session != nil {
		return t.session, nil
	}
	s, err := terminal.New(ctx, terminal.Options{WorkDir: t.env.WorkDir, Env: t.env.Environ,
		SaveDir: filepath.Join(t.env.StateDir, "observations"), Mask: t.env.Mask})
	if err != nil {
		return nil, fmt.Errorf("start terminal: %w", err)
	}
	for k, v := range t.exports {
		if err := s.Export(ctx, k, v); err != nil {
			s.Close()
			return nil, err
		}
	}
	t.session = s
	return s, nil
}

// Export sets an environment variable in the shell (now, or when it starts).
func (t *terminalTool) Export(ctx context.Context, name, value string) error {
	t.mu.Lock()
	t.exports[name] = value
	s := t.session
	t.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Export(ctx, name, value)
}

func (t *terminalTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	ta, ok := a.(*events.TerminalAction)
	if !ok {
		return nil, fmt.Errorf("terminal: unexpected action %T", a)
	}
	s, err := t.get(ctx)
	if err != nil {
		return nil, err
	}
	obs, err := s.Execute(ctx, ta)
	if err != nil {
		return nil, err
	}
	return obs, nil
}

func (t *terminalTool) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session == nil {
		return nil
	}
	err := t.session.Close()
	t.session = nil
	return err
}

func init() { Register("terminal", newTerminal) }
