// Package terminal implements the agent's terminal tool: a persistent,
// interactive bash running on a pseudo-terminal, one per conversation.
//
// Commands run in the same shell one after another, so the working
// directory, variables and background jobs persist between them. A command
// is complete when bash, through PROMPT_COMMAND, prints a metadata block
// (exit code, working directory, ...) after it; output is read continuously
// and completion is signalled as soon as that block arrives, without
// polling. A command that keeps running past its timeout stays running: the
// model can wait for more output, type into it, or interrupt it.
package terminal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/procenv"
)

// ErrClosed is returned by Execute and Export once Close has been called.
var ErrClosed = errors.New("terminal: session closed")

// Options configures a Session.
type Options struct {
	WorkDir         string              // initial working directory (must exist; absolute)
	Env             []string            // extra KEY=VALUE pairs added to the environment (procenv.Environ, less the shell's prompt and pager variables)
	Shell           string              // default "/bin/bash"
	NoChangeTimeout time.Duration       // soft "no new output" timeout, default DefaultNoChangeTimeout
	MaxOutputChars  int                 // default 30000
	SaveDir         string              // directory for full outputs of truncated observations; default: a new temp dir
	Mask            func(string) string // optional; applied to all output text before it is returned (secret masking)
}

// DefaultNoChangeTimeout is how long a command may run without new output
// before Execute returns with exit code -1 (the soft timeout).
const DefaultNoChangeTimeout = 30 * time.Second

const (
	defaultShell          = "/bin/bash"
	defaultMaxOutputChars = 30000

	startupTimeout = 30 * time.Second
	writeTimeout   = 5 * time.Second
	interruptGrace = 2 * time.Second
)

const timeoutMessage = `You may wait longer to see additional output by sending empty command '', ` +
	`send other commands to interact with the current process, send keys ("C-c", "C-z", "C-d") ` +
	`to interrupt/kill the previous command before sending your new command, ` +
	`or use the timeout parameter in terminal for future commands.`

const hardTimeoutMessage = `You may wait longer to see additional output by sending empty command '', ` +
	`send other commands to interact with the current process, send keys to interrupt/kill the command, ` +
	`or use the timeout parameter in terminal for future commands.`

const refusedFmt = "\n[Your command \"%s\" is NOT executed. The previous command is still running - " +
	"You CANNOT send new commands until the previous command is completed. " +
	"By setting `is_input` to `true`, you can interact with the current process: " +
	`You may wait longer to see additional output by sending empty command '', ` +
	`send other commands to interact with the current process, send keys ("C-c", "C-z", "C-d") ` +
	`to interrupt/kill the previous command before sending your new command.]`

const (
	previousOutputPrefix = "[Below is the output of the previous command.]\n"
	resetNotice          = "[Terminal session has been reset. Variables, functions, the working directory and " +
		"background jobs of the previous session are gone.]\n"
)

// Session is a persistent bash on a PTY. All methods are safe for concurrent
// use; Execute and Export calls are serialised.
type Session struct {
	opts     Options
	env      []string
	nonce    string
	ctrlDir  string // private directory for the rc file and command files
	initFile string
	cmdFile  string
	expFile  string
	runLine  []byte
	expLine  []byte

	sem     chan struct{} // serialises Execute and Export
	closing chan struct{} // closed by Close

	stateMu sync.Mutex // guards closed and sh against Close
	closed  bool
	sh      *shell

	// The fields below are only used while holding sem.
	running     bool  // a command was started and its metadata block has not been seen
	interrupted bool  // the running command was sent C-c because a ctx was done
	outStart    int64 // stream offset where output not yet shown to the model starts
	lastInfo    promptInfo
	exports     []envVar // everything passed to Export, re-applied after a restart
	pending     []envVar // exports to apply once the running command finishes
	saveDir     string
}

type envVar struct{ name, value string }

// New validates opts, starts the shell in opts.WorkDir and waits until it is
// ready to run commands.
//
// It returns an error if WorkDir is not an existing absolute directory, an
// Env entry has no "=", the PTY or the shell cannot be started, or the shell
// does not become ready before ctx is done (or within 30 seconds). ctx only
// bounds start-up: the session lives until Close.
func New(ctx context.Context, opts Options) (*Session, error) {
	if opts.WorkDir == "" || !filepath.IsAbs(opts.WorkDir) {
		return nil, fmt.Errorf("terminal: WorkDir %q must be an absolute path", opts.WorkDir)
	}
	fi, err := os.Stat(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("terminal: WorkDir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("terminal: WorkDir %q is not a directory", opts.WorkDir)
	}
	for _, kv := range opts.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("terminal: Env entry %q is not KEY=VALUE", kv)
		}
	}
	if opts.Shell == "" {
		opts.Shell = defaultShell
	}
	if opts.NoChangeTimeout <= 0 {
		opts.NoChangeTimeout = DefaultNoChangeTimeout
	}
	if opts.MaxOutputChars <= 0 {
		opts.MaxOutputChars = defaultMaxOutputChars
	}

	var nb [12]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, fmt.Errorf("terminal: nonce: %w", err)
	}
	ctrlDir, err := os.MkdirTemp("", "acs-terminal-")
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	s := &Session{
		opts:     opts,
		nonce:    hex.EncodeToString(nb[:]),
		ctrlDir:  ctrlDir,
		initFile: filepath.Join(ctrlDir, "init.sh"),
		cmdFile:  filepath.Join(ctrlDir, "command"),
		expFile:  filepath.Join(ctrlDir, "export"),
		sem:      make(chan struct{}, 1),
		closing:  make(chan struct{}),
		saveDir:  opts.SaveDir,
	}
	s.env = buildEnv(opts)
	// The command is typed as one short, fixed line that loads the real
	// command from a file and evals it at top level. This keeps arbitrary
	// commands (long lines, heredocs, control characters) away from the
	// tty's line editing, and leaves $? as the previous command set it.
	s.runLine = []byte(`{ IFS= read -r -d '' __acs_cmd < ` + shellQuote(s.cmdFile) +
		`; __acs_ret "$__acs_ec"; } 2>/dev/null; eval "$__acs_cmd"` + "\n")
	s.expLine = []byte(`{ IFS= read -r -d '' __acs_cmd < ` + shellQuote(s.expFile) +
		`; eval "$__acs_cmd"; __acs_x=$?; __acs_cmd=; __acs_ret "$__acs_x"; } >/dev/null 2>&1` + "\n")
	if err := os.WriteFile(s.initFile, []byte(initScript(s.nonce)), 0o600); err != nil {
		_ = os.RemoveAll(ctrlDir)
		return nil, fmt.Errorf("terminal: %w", err)
	}
	sh, info, off, err := s.spawn(ctx)
	if err != nil {
		_ = os.RemoveAll(ctrlDir)
		return nil, err
	}
	s.sh, s.lastInfo, s.outStart = sh, info, off
	return s, nil
}

func buildEnv(opts Options) []string {
	drop := map[string]bool{
		"PROMPT_COMMAND": true, "PS0": true, "PS1": true, "PS2": true, "BASH_ENV": true, "ENV": true,
		"HISTFILE": true, "PWD": true, "OLDPWD": true, "TERM": true, "PAGER": true, "GIT_PAGER": true,
		"COLUMNS": true, "LINES": true, "SHLVL": true,
	}
	var env []string
	// The agent server's own credentials are never in it (procenv).
	for _, kv := range procenv.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "BASH_FUNC_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat", "PWD="+opts.WorkDir)
	// exec.Cmd keeps the last value of a duplicated key, so opts.Env wins.
	return append(env, opts.Env...)
}

// initScript is bash's rc file. PROMPT_COMMAND prints the metadata block
// (with this session's nonce) to the terminal after every command, using
// builtins only except when PATH changes (to find python).
func initScript(nonce string) string {
	return `set +H
set +o history
unset HISTFILE PS0
PS1=''
PS2=''
__acs_nonce=` + shellQuote(nonce) + `
__acs_ec=0
__acs_py=''
__acs_pypath=$'\x01'
__acs_u='\u'; __acs_user=${__acs_u@P}
__acs_h='\h'; __acs_host=${__acs_h@P}
unset __acs_u __acs_h
__acs_ret() { return "${1:-0}"; }
__acs_esc() {
  local s=$2
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}
  printf -v "$1" '%s' "$s"
}
__acs_prompt() {
  local __acs_e=$? __acs_p=${!:-} __acs_w __acs_y __acs_un __acs_hn
  __acs_ec=$__acs_e
  if [[ "${PATH-}" != "$__acs_pypath" ]]; then
    __acs_pypath=${PATH-}
    __acs_py=$(command -v python 2>/dev/null || true)
  fi
  __acs_esc __acs_w "${PWD-}"
  __acs_esc __acs_y "$__acs_py"
  __acs_esc __acs_un "$__acs_user"
  __acs_esc __acs_hn "$__acs_host"
  printf '\n###PS1JSON###\n{"pid": "%s", "exit_code": "%s", "username": "%s", "hostname": "%s", "working_dir": "%s", "py_interpreter_path": "%s", "nonce": "%s"}\n###PS1END###\n' \
    "$__acs_p" "$__acs_e" "$__acs_un" "$__acs_hn" "$__acs_w" "$__acs_y" "$__acs_nonce" 2>/dev/null >/dev/tty ||
  printf '\n###PS1JSON###\n{"pid": "%s", "exit_code": "%s", "username": "%s", "hostname": "%s", "working_dir": "%s", "py_interpreter_path": "%s", "nonce": "%s"}\n###PS1END###\n' \
    "$__acs_p" "$__acs_e" "$__acs_un" "$__acs_hn" "$__acs_w" "$__acs_y" "$__acs_nonce"
  return "$__acs_e"
}
PROMPT_COMMAND=__acs_prompt
`
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// spawn starts a shell, waits for its first metadata block and re-applies
// all exported variables. It returns the shell, its metadata and the stream
// offset where command output starts.
func (s *Session) spawn(ctx context.Context) (*shell, promptInfo, int64, error) {
	sh, err := startShell(s.opts.Shell, s.initFile, s.opts.WorkDir, s.env, s.nonce)
	if err != nil {
		return nil, promptInfo{}, 0, err
	}
	m, err := s.waitMarker(ctx, sh, startupTimeout)
	if err != nil {
		sh.terminate()
		return nil, promptInfo{}, 0, fmt.Errorf("terminal: shell did not start: %w", err)
	}
	info, off := m.info, m.end
	for _, e := range s.exports {
		m, err := s.exportOn(ctx, sh, e)
		if err != nil {
			sh.terminate()
			return nil, promptInfo{}, 0, err
		}
		off = m.end
	}
	sh.discardBefore(off)
	return sh, info, off, nil
}

// waitMarker waits for the next metadata block of sh.
func (s *Session) waitMarker(ctx context.Context, sh *shell, timeout time.Duration) (*marker, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		total, changed, m := sh.snapshot()
		if m != nil {
			sh.popMarker()
			return m, nil
		}
		select {
		case <-changed:
		case <-sh.exited:
			// Let the reader catch up before checking one last time.
			select {
			case <-sh.readerDone:
			case <-time.After(100 * time.Millisecond):
			}
			if _, _, m := sh.snapshot(); m != nil {
				sh.popMarker()
				return m, nil
			}
			out, _ := sh.slice(0, total+1<<20)
			return nil, fmt.Errorf("shell exited with status %d: %s", sh.status, strings.TrimSpace(cleanOutput(out)))
		case <-timer.C:
			return nil, fmt.Errorf("no prompt within %s", timeout)
		case <-s.closing:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// exportOn runs `export NAME=VALUE` in sh with all output discarded and
// waits for it to finish.
func (s *Session) exportOn(ctx context.Context, sh *shell, e envVar) (*marker, error) {
	if err := os.WriteFile(s.expFile, []byte("export "+e.name+"="+shellQuote(e.value)), 0o600); err != nil {
		return nil, fmt.Errorf("terminal: export %s: %w", e.name, err)
	}
	defer os.Remove(s.expFile)
	sh.resetTermios()
	if err := sh.write(s.expLine, writeTimeout); err != nil {
		return nil, fmt.Errorf("terminal: export %s: %w", e.name, err)
	}
	m, err := s.waitMarker(ctx, sh, startupTimeout)
	if err != nil {
		return nil, fmt.Errorf("terminal: export %s: %w", e.name, err)
	}
	if m.info.ExitCode != 0 {
		return nil, fmt.Errorf("terminal: export %s failed with exit code %d", e.name, m.info.ExitCode)
	}
	return m, nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Export sets the environment variable name to value in the shell, exported
// to the commands it runs, without the command or the value appearing in any
// output. The variable is re-applied whenever the shell is restarted (reset,
// or after the shell exited). If a command is still running, the variable is
// set just before the next command starts and Export returns nil at once.
//
// It returns an error if name is not a valid variable name, value contains a
// NUL byte, ctx is done, the session is closed (ErrClosed), or the shell
// cannot run the export (for example because the variable is read-only).
func (s *Session) Export(ctx context.Context, name, value string) error {
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("terminal: invalid environment variable name %q", name)
	}
	if strings.ContainsRune(value, 0) {
		return fmt.Errorf("terminal: value of %s contains a NUL byte", name)
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if s.isClosed() {
		return ErrClosed
	}
	e := envVar{name, value}
	s.exports = upsertVar(s.exports, e)
	if s.sh.isExited() {
		return s.restart(ctx) // re-applies every export
	}
	if s.running {
		s.pending = upsertVar(s.pending, e)
		return nil
	}
	return s.exportLive(ctx, e)
}

func upsertVar(list []envVar, e envVar) []envVar {
	for i := range list {
		if list[i].name == e.name {
			list[i] = e
			return list
		}
	}
	return append(list, e)
}

// exportLive exports e in the current, idle shell.
func (s *Session) exportLive(ctx context.Context, e envVar) error {
	s.dropStaleMarkers()
	m, err := s.exportOn(ctx, s.sh, e)
	if err != nil {
		return err
	}
	// Only background jobs can have printed before the block (the export's
	// own output is discarded); that output is dropped with it.
	s.outStart = m.end
	s.sh.discardBefore(s.outStart)
	return nil
}

// dropStaleMarkers discards metadata blocks that arrived while no command
// was running (e.g. typed input that bash executed itself).
func (s *Session) dropStaleMarkers() {
	if end := s.sh.dropMarkers(); end >= 0 {
		s.outStart = max(s.outStart, end)
		s.sh.discardBefore(s.outStart)
	}
}

// PID returns the process id of the current shell (it changes on reset).
func (s *Session) PID() int {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	return s.sh.pid
}

// Close kills the shell and every process in its session (including
// background jobs, which job control puts into process groups of their own),
// closes the PTY and removes the session's private files. Files saved for
// truncated outputs are kept. Close is idempotent and always returns nil;
// processes that moved to another session (setsid, daemons) are not tracked.
func (s *Session) Close() error {
	s.stateMu.Lock()
	if s.closed {
		s.stateMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	sh := s.sh
	s.stateMu.Unlock()

	sh.terminate()
	// Wait (bounded) for an in-flight Execute to notice, so that it cannot
	// use the private directory after it is gone.
	select {
	case s.sem <- struct{}{}:
		defer s.release()
	case <-time.After(10 * time.Second):
	}
	s.stateMu.Lock()
	if s.sh != sh {
		s.sh.terminate()
	}
	s.stateMu.Unlock()
	_ = os.RemoveAll(s.ctrlDir)
	return nil
}

func (s *Session) isClosed() bool {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	return s.closed
}

func (s *Session) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return ErrClosed
	}
}

func (s *Session) release() { <-s.sem }

// restart replaces the shell with a fresh one in the original WorkDir.
func (s *Session) restart(ctx context.Context) error {
	s.sh.terminate()
	s.running, s.interrupted = false, false
	s.pending = nil
	sh, info, off, err := s.spawn(ctx)
	if err != nil {
		return err
	}
	s.stateMu.Lock()
	if s.closed {
		s.stateMu.Unlock()
		sh.terminate()
		return ErrClosed
	}
	s.sh = sh
	s.stateMu.Unlock()
	s.lastInfo, s.outStart = info, off
	slog.Debug("terminal: shell restarted", "pid", sh.pid, "workdir", s.opts.WorkDir)
	return nil
}

// request describes the command an observation answers.
type request struct {
	command      string
	isInput      bool
	continuation bool     // the command was already running before this call
	echoed       bool     // the terminal echoed the input (strip it from the output)
	timeout      *float64 // hard timeout in seconds
	notice       string   // text put in front of the prefix
}

// Execute runs one TerminalAction and returns its observation.
//
// A new command runs in the persistent shell and Execute returns when it
// finishes, when it produced no new output for NoChangeTimeout (soft
// timeout, only if a.Timeout is nil), or after a.Timeout seconds (hard
// timeout); on a timeout the command keeps running and the observation has
// ExitCode -1. While a command runs, an empty command waits for more output,
// IsInput sends a.Command as keystrokes (followed by Enter unless it is a
// special key such as "C-c" or "UP"), and any other command is refused.
// a.Reset restarts the shell first. Problems the model can act on (refused,
// malformed or multiple commands, nothing to interact with) are observations
// with IsError set, never Go errors.
//
// Execute returns a Go error only if ctx is done (after sending C-c to the
// running command; the command is then treated as still running), the
// session is closed (ErrClosed), the shell could not be (re)started, or the
// PTY could not be written to.
func (s *Session) Execute(ctx context.Context, a *events.TerminalAction) (*events.TerminalObservation, error) {
	if a == nil {
		return nil, errors.New("terminal: nil action")
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if s.isClosed() {
		return nil, ErrClosed
	}
	command := strings.TrimSpace(a.Command)
	notice := ""

	if a.Reset {
		if a.IsInput {
			return s.errorObs(command, "Cannot use reset=True with is_input=True."), nil
		}
		if err := s.restart(ctx); err != nil {
			return nil, err
		}
		if command == "" {
			return s.resetObs(), nil
		}
		notice = resetNotice
	} else if s.sh.isExited() {
		status := s.sh.status
		if err := s.restart(ctx); err != nil {
			return nil, fmt.Errorf("terminal: shell exited and could not be restarted: %w", err)
		}
		notice = fmt.Sprintf("[The shell had exited (status %d) and a new terminal session was started in %s. "+
			"Variables and the working directory set by earlier commands are gone.]\n", status, s.opts.WorkDir)
	}

	if !a.IsInput && command != "" {
		if looksLikeLiteral(command) {
			return s.errorObs(command, notice+literalHint), nil
		}
		if parts := splitCommands(command); len(parts) > 1 {
			return s.errorObs(command, notice+multipleCommandsText(parts)), nil
		}
	}

	// A command interrupted by a cancelled ctx normally ends within
	// milliseconds; give it a bounded grace so the next call does not race it.
	if s.running && s.interrupted {
		s.interrupted = false
		s.awaitMarker(ctx, interruptGrace)
	}
	// A running command may have finished since the last observation.
	var finished *marker
	var leftover []byte
	var leftoverDropped bool
	if s.running {
		if _, _, m := s.sh.snapshot(); m != nil {
			s.sh.popMarker()
			leftover, leftoverDropped = s.sh.slice(s.outStart, m.start)
			s.outStart = m.end
			s.sh.discardBefore(s.outStart)
			s.running = false
			s.lastInfo = m.info
			finished = m
		}
	}

	req := request{command: command, isInput: a.IsInput, timeout: a.Timeout, notice: notice}
	switch {
	case s.running && command == "":
		req.continuation = true
		return s.wait(ctx, req)
	case s.running && a.IsInput:
		req.continuation = true
		return s.sendInput(ctx, req)
	case s.running:
		return s.refuse(req), nil
	case finished != nil && command == "":
		return s.completedObs(req, finished, leftover, leftoverDropped), nil
	case finished != nil && a.IsInput:
		obs := s.completedObs(req, finished, leftover, leftoverDropped)
		obs.IsError = true
		obs.Metadata.Suffix += "\n[The previous command has already completed, so your input was NOT sent.]"
		s.setText(obs, obs.Metadata.Prefix+trimOutput(cleanOutput(leftover))+obs.Metadata.Suffix)
		return obs, nil
	case command == "":
		return s.errorObs(command, notice+"No previous running command to retrieve logs from."), nil
	case a.IsInput:
		return s.errorObs(command, notice+"No previous running command to interact with."), nil
	}
	if finished != nil {
		req.notice += previousCompletedNotice(finished, leftover)
	}
	return s.run(ctx, req)
}

func previousCompletedNotice(m *marker, leftover []byte) string {
	text := trimOutput(cleanOutput(leftover))
	if text == "" {
		return fmt.Sprintf("[The previous command completed with exit code %d.]\n", m.info.ExitCode)
	}
	return previousOutputPrefix + text +
		fmt.Sprintf("\n[The previous command completed with exit code %d.]\n", m.info.ExitCode)
}

// run starts a new command in the idle shell and waits for it.
func (s *Session) run(ctx context.Context, req request) (*events.TerminalObservation, error) {
	s.dropStaleMarkers()
	for len(s.pending) > 0 {
		e := s.pending[0]
		s.pending = s.pending[1:]
		if err := s.exportLive(ctx, e); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(s.cmdFile, []byte(strings.ReplaceAll(req.command, "\x00", "")), 0o600); err != nil {
		return nil, fmt.Errorf("terminal: write command: %w", err)
	}
	s.sh.resetTermios()
	if err := s.sh.write(s.runLine, writeTimeout); err != nil {
		return nil, fmt.Errorf("terminal: send command: %w", err)
	}
	s.running, s.interrupted = true, false
	return s.wait(ctx, req)
}

// sendInput types req.command into the running command and waits.
func (s *Session) sendInput(ctx context.Context, req request) (*events.TerminalObservation, error) {
	payload, special := specialKey(req.command)
	if !special {
		payload = req.command + "\r"
		req.echoed = s.sh.echoOn()
	}
	if err := s.sh.write([]byte(payload), writeTimeout); err != nil {
		obs := s.errorObs(req.command, "The input could not be delivered: the running process is not reading its input.")
		minus := -1
		obs.ExitCode = &minus
		return obs, nil
	}
	return s.wait(ctx, req)
}

// wait waits until the running command finishes or times out.
func (s *Session) wait(ctx context.Context, req request) (*events.TerminalObservation, error) {
	sh := s.sh
	start := time.Now()
	lastTotal, _, _ := sh.snapshot()
	lastChange := start
	hard := time.Duration(-1)
	if req.timeout != nil {
		hard = secondsToDuration(*req.timeout)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		total, changed, m := sh.snapshot()
		if m != nil {
			sh.popMarker()
			out, dropped := sh.slice(s.outStart, m.start)
			s.outStart = m.end
			sh.discardBefore(s.outStart)
			s.running = false
			s.lastInfo = m.info
			return s.completedObs(req, m, out, dropped), nil
		}
		now := time.Now()
		if total != lastTotal {
			lastTotal, lastChange = total, now
		}
		var deadline time.Time
		if hard >= 0 {
			deadline = start.Add(hard)
		} else {
			deadline = lastChange.Add(s.opts.NoChangeTimeout)
		}
		if !now.Before(deadline) {
			return s.timeoutObs(req, total, hard >= 0), nil
		}
		timer.Reset(deadline.Sub(now))
		select {
		case <-changed:
		case <-timer.C:
		case <-sh.exited:
			return s.shellExited(ctx, req)
		case <-s.closing:
			return nil, ErrClosed
		case <-ctx.Done():
			// Interrupt the command; it is still considered running, so
			// the next call reports how it ended.
			_ = sh.write([]byte{0x03}, 100*time.Millisecond)
			s.interrupted = true
			return nil, ctx.Err()
		}
	}
}

// awaitMarker waits up to d for the running command's metadata block to
// arrive, without consuming it.
func (s *Session) awaitMarker(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		_, changed, m := s.sh.snapshot()
		if m != nil {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-s.sh.exited:
			return
		case <-s.closing:
			return
		case <-ctx.Done():
			return
		}
	}
}

func secondsToDuration(sec float64) time.Duration {
	switch {
	case sec <= 0 || sec != sec:
		return 0
	case sec > 1e7:
		return 1e7 * time.Second
	}
	return time.Duration(sec * float64(time.Second))
}

func formatSeconds(sec float64) string { return strconv.FormatFloat(sec, 'f', -1, 64) }

// shellExited handles the shell dying while a command ran (e.g. `exit`):
// it reports the output and starts a new shell.
func (s *Session) shellExited(ctx context.Context, req request) (*events.TerminalObservation, error) {
	sh := s.sh
	// Orphaned jobs of the dead shell would keep the PTY open; once they are
	// gone the reader drains what is left and stops.
	killSession(sh.pid, false)
	select {
	case <-sh.readerDone:
	case <-time.After(500 * time.Millisecond):
	}
	total, _, _ := sh.snapshot()
	out, dropped := sh.slice(s.outStart, total)
	status := sh.status
	s.running = false
	if s.isClosed() {
		return nil, ErrClosed
	}
	if err := s.restart(ctx); err != nil {
		return nil, fmt.Errorf("terminal: shell exited with status %d and could not be restarted: %w", status, err)
	}
	meta := s.metaFrom(s.lastInfo)
	meta.ExitCode = status
	meta.Prefix = req.notice + droppedPrefix(out, dropped)
	meta.Suffix = fmt.Sprintf("\n[The shell exited with status %d. A new terminal session has been started in %s; "+
		"variables and the working directory set by earlier commands are gone.]", status, s.opts.WorkDir)
	text := s.outputText(req, out)
	return s.newObs(req.command, false, &status, meta, text, false), nil
}

func droppedPrefix(out []byte, dropped bool) string {
	if !dropped {
		return ""
	}
	n := len(strings.Split(trimOutput(cleanOutput(out)), "\n"))
	return fmt.Sprintf("[Previous command outputs are truncated. Showing the last %d lines of the output below.]\n", n)
}

func (s *Session) outputText(req request, out []byte) string {
	text := trimOutput(cleanOutput(out))
	if req.echoed {
		text = removeEchoedInput(text, req.command)
	}
	return text
}

func (s *Session) completedObs(req request, m *marker, out []byte, dropped bool) *events.TerminalObservation {
	meta := s.metaFrom(m.info)
	meta.Prefix = req.notice + droppedPrefix(out, dropped)
	ec := m.info.ExitCode
	return s.newObs(req.command, false, &ec, meta, s.outputText(req, out), false)
}

// timeoutObs reports the output so far of a command that keeps running.
func (s *Session) timeoutObs(req request, total int64, hard bool) *events.TerminalObservation {
	out, dropped := s.sh.slice(s.outStart, total)
	// Do not split a UTF-8 sequence between two observations.
	keep := incompleteUTF8Tail(out)
	out = out[:len(out)-keep]
	s.outStart = total - int64(keep)
	s.sh.discardBefore(s.outStart)
	s.running = true

	meta := defaultMeta()
	meta.Prefix = req.notice + droppedPrefix(out, dropped)
	if req.continuation {
		meta.Prefix += previousOutputPrefix
	}
	if hard {
		meta.Suffix = fmt.Sprintf("\n[The command timed out after %s seconds. %s]", formatSeconds(*req.timeout), hardTimeoutMessage)
	} else {
		meta.Suffix = fmt.Sprintf("\n[The command has no new output after %s seconds. %s]",
			formatSeconds(s.opts.NoChangeTimeout.Seconds()), timeoutMessage)
	}
	minus := -1
	return s.newObs(req.command, false, &minus, meta, s.outputText(req, out), hard)
}

func incompleteUTF8Tail(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// refuse reports new output of the running command and refuses req.
func (s *Session) refuse(req request) *events.TerminalObservation {
	total, _, _ := s.sh.snapshot()
	out, dropped := s.sh.slice(s.outStart, total)
	keep := incompleteUTF8Tail(out)
	out = out[:len(out)-keep]
	s.outStart = total - int64(keep)
	s.sh.discardBefore(s.outStart)
	text := trimOutput(cleanOutput(out))
	meta := defaultMeta()
	meta.Prefix = req.notice + droppedPrefix(out, dropped)
	if text != "" {
		meta.Prefix += previousOutputPrefix
	}
	meta.Suffix = fmt.Sprintf(refusedFmt, req.command)
	minus := -1
	return s.newObs(req.command, true, &minus, meta, text, false)
}

func (s *Session) resetObs() *events.TerminalObservation {
	meta := s.metaFrom(s.lastInfo)
	meta.ExitCode = 0
	zero := 0
	return s.newObs("[RESET]", false, &zero, meta, strings.TrimSuffix(resetNotice, "\n"), false)
}

func (s *Session) errorObs(command, text string) *events.TerminalObservation {
	return s.newObs(command, true, nil, defaultMeta(), text, false)
}

func defaultMeta() events.TerminalMetadata {
	return events.TerminalMetadata{ExitCode: -1, PID: -1}
}

func (s *Session) metaFrom(info promptInfo) events.TerminalMetadata {
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	return events.TerminalMetadata{
		ExitCode:          info.ExitCode,
		PID:               info.PID,
		Username:          opt(info.Username),
		Hostname:          opt(info.Hostname),
		WorkingDir:        opt(info.WorkingDir),
		PyInterpreterPath: opt(info.PyPath),
	}
}

func (s *Session) mask(v string) string {
	if s.opts.Mask == nil || v == "" {
		return v
	}
	return s.opts.Mask(v)
}

// newObs assembles an observation: text = prefix + output + suffix, then the
// working directory and (unless it is -1) the exit code; everything is
// masked and, if too long, truncated with the full text saved to SaveDir.
func (s *Session) newObs(command string, isError bool, exitCode *int, meta events.TerminalMetadata, output string, timedOut bool) *events.TerminalObservation {
	meta.Prefix = s.mask(meta.Prefix)
	meta.Suffix = s.mask(meta.Suffix)
	cmd := s.mask(command)
	obs := &events.TerminalObservation{
		Command:  &cmd,
		ExitCode: exitCode,
		Timeout:  timedOut,
		Metadata: meta,
	}
	obs.IsError = isError
	s.setText(obs, meta.Prefix+output+meta.Suffix)
	return obs
}

// setText sets the observation text from body (prefix + output + suffix),
// adding the working directory and exit code lines, masking and truncating.
func (s *Session) setText(obs *events.TerminalObservation, body string) {
	var b strings.Builder
	b.WriteString(body)
	if wd := obs.Metadata.WorkingDir; wd != nil && *wd != "" {
		fmt.Fprintf(&b, "\n[Current working directory: %s]", *wd)
	}
	if obs.Metadata.ExitCode != -1 {
		fmt.Fprintf(&b, "\n[Command finished with exit code %d]", obs.Metadata.ExitCode)
	}
	text := s.mask(strings.TrimLeft(b.String(), "\n"))
	text, path, truncated := truncate(text, s.opts.MaxOutputChars, s.saveFull)
	if truncated && path != "" {
		dir := s.saveDir
		obs.FullOutputSaveDir = &dir
	}
	obs.SetText(text)
}

func (s *Session) saveFull(text string) (string, error) {
	if s.saveDir == "" {
		dir, err := os.MkdirTemp("", "acs-terminal-output-")
		if err != nil {
			slog.Warn("terminal: cannot create directory for full output", "err", err)
			return "", err
		}
		s.saveDir = dir
	}
	p, err := saveFullOutput(s.saveDir, text)
	if err != nil {
		slog.Warn("terminal: cannot save full output", "dir", s.saveDir, "err", err)
	}
	return p, err
}
