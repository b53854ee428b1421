package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acs-project/acs/events"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultConnectTimeout bounds connecting to one server and listing its
// tools when Options.ConnectTimeout is zero.
const DefaultConnectTimeout = 30 * time.Second

// stopGrace is how long a stdio server is given to exit after its stdin is
// closed, and again after SIGTERM, before it is killed.
const stopGrace = 2 * time.Second

// Options configures Connect.
type Options struct {
	// ConnectTimeout bounds, per server, starting it, the MCP handshake and
	// listing its tools (default 30s). A stdio server still running at the
	// deadline is killed.
	ConnectTimeout time.Duration
	// Lookup fills ${NAME} placeholders (typically from the conversation's
	// secrets); nil fills none. A server with a placeholder that has neither
	// a value nor a default fails to connect, naming the variable.
	Lookup func(name string) (string, bool)
	// Mask hides secret values in text this package returns or logs (errors,
	// stderr excerpts, tool results); nil means identity.
	Mask func(string) string
	// Logger receives connection events (never configuration values); nil
	// means slog.Default().
	Logger *slog.Logger
	// Env is the base environment of stdio servers, on top of which their
	// configured env is set; nil means DefaultEnv() (PATH, HOME, LANG). The
	// servers get nothing else of this process's environment.
	Env []string
}

// Tool is a tool of a connected server.
type Tool struct {
	Server      string
	Name        string
	Title       string // the tool's title, else its annotations' title
	Description string
	// InputSchema is the JSON Schema object of the arguments (never empty).
	InputSchema json.RawMessage
	// OutputSchema, Annotations and Meta are as the server sent them, or nil.
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Meta         json.RawMessage
}

// ReadOnlyHint reports the tool's annotations.readOnlyHint (false when
// absent).
func (t Tool) ReadOnlyHint() bool {
	var a struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	}
	_ = json.Unmarshal(t.Annotations, &a)
	return a.ReadOnlyHint
}

// ServerError is the failure of one server to connect (or to be used). Its
// text names the server, describes it by its configured (unexpanded)
// command or URL and says why it failed; it never holds a substituted value
// and has been through Options.Mask.
type ServerError struct {
	Server string
	Reason string
}

func (e *ServerError) Error() string { return fmt.Sprintf("MCP server '%s': %s", e.Server, e.Reason) }

// Client is a set of connected MCP servers. Its methods are safe for
// concurrent use.
type Client struct {
	servers []*server // sorted by name
	tools   []Tool
	byName  map[string]*server
	schema  map[string]json.RawMessage
	mask    func(string) string
	log     *slog.Logger

	closeOnce sync.Once
	closed    atomic.Bool
}

// server is one connected server.
type server struct {
	name    string
	desc    string // by the configured command or URL
	kind    string
	timeout time.Duration
	session *sdk.ClientSession
	proc    *process // stdio servers
	remote  *remote  // remote servers
	red     *redactor
	tools   []Tool
}

// Connect connects to every enabled server concurrently and lists its tools,
// each within opts.ConnectTimeout. It returns a Client (never nil) with the
// servers that worked, and one *ServerError per server that failed, sorted
// by server name: a command not found or not executable, a process that
// exited (with its status and last stderr lines, masked), a handshake that
// did not finish in time (the process is then killed), an HTTP error status
// (401, 404...), undefined placeholders, or a tool name already provided by
// a server whose name sorts first (the later server is then not used). A
// failure never hangs: Connect returns soon after the timeout whatever the
// servers do. Cancelling ctx abandons connecting; the Client returned is
// not bound to ctx.
func Connect(ctx context.Context, servers map[string]ServerConfig, opts Options) (*Client, []error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.Mask == nil {
		opts.Mask = func(s string) string { return s }
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Env == nil {
		opts.Env = DefaultEnv()
	}
	c := &Client{byName: map[string]*server{}, schema: map[string]json.RawMessage{}, mask: opts.Mask, log: opts.Logger}
	var names []string
	for name, cfg := range servers {
		if cfg.IsEnabled() {
			names = append(names, name)
		} else {
			opts.Logger.Debug("mcp: server disabled", "server", name)
		}
	}
	sort.Strings(names)
	type result struct {
		s   *server
		err error
	}
	results := make([]result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := connectOne(ctx, name, servers[name], opts)
			results[i] = result{s, err}
		}()
	}
	wg.Wait()
	var errs []error
	owner := map[string]string{}
	for i, name := range names {
		r := results[i]
		if r.err != nil {
			opts.Logger.Warn("mcp: server not connected", "server", name, "error", r.err.Error())
			errs = append(errs, r.err)
			continue
		}
		if dup := firstDuplicate(r.s.tools, owner); dup != "" {
			err := &ServerError{Server: name, Reason: opts.Mask(fmt.Sprintf(
				"%s: tool '%s' is also provided by MCP server '%s'; tool names must be unique across servers, so this server is not used",
				r.s.desc, dup, owner[dup]))}
			opts.Logger.Warn("mcp: server not connected", "server", name, "error", err.Error())
			errs = append(errs, err)
			r.s.close()
			continue
		}
		for _, t := range r.s.tools {
			owner[t.Name] = name
			c.byName[t.Name] = r.s
			c.schema[t.Name] = t.InputSchema
			c.tools = append(c.tools, t)
		}
		c.servers = append(c.servers, r.s)
	}
	return c, errs
}

func firstDuplicate(ts []Tool, owner map[string]string) string {
	for _, t := range ts {
		if _, taken := owner[t.Name]; taken {
			return t.Name
		}
	}
	return ""
}

// connectOne connects to one server; raw is its configuration as given.
func connectOne(ctx context.Context, name string, raw ServerConfig, opts Options) (*server, error) {
	start := time.Now()
	e := expander{lookup: opts.Lookup}
	exp := e.config(raw)
	s := &server{
		name: name, desc: raw.describe(), kind: raw.TransportKind(),
		timeout: time.Duration(raw.CallTimeout() * float64(time.Second)),
		red:     newRedactor(e.subs, opts.Mask),
	}
	fail := func(reason string) error {
		return &ServerError{Server: name, Reason: s.red.text(s.desc + ": " + reason)}
	}
	if errs := raw.validate(); len(errs) > 0 {
		return nil, fail("invalid configuration: " + errs.Error())
	}
	if missing := e.missingNames(); len(missing) > 0 {
		for i, m := range missing {
			missing[i] = "${" + m + "}"
		}
		return nil, fail(fmt.Sprintf("undefined variable(s) %s: define them as secrets, or give a default as ${NAME:-default}",
			strings.Join(missing, ", ")))
	}
	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "acs-agent-server", Version: "1.0.0"}, nil)

	var transport sdk.Transport
	if raw.Command != nil {
		p, err := startProcess(raw, exp, mergeEnv(opts.Env, exp.Env))
		if err != nil {
			var se *startError
			if errors.As(err, &se) {
				return nil, fail(se.msg)
			}
			return nil, fail("cannot start: " + err.Error())
		}
		s.proc = p
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	} else {
		r, t, err := newRemote(raw, exp)
		if err != nil {
			return nil, fail(err.Error())
		}
		s.remote, transport = r, t
	}

	// The watchdog kills a stdio server at the deadline, which unblocks
	// everything waiting on it.
	watchdog := func() bool { return true }
	if s.proc != nil {
		watchdog = context.AfterFunc(cctx, s.proc.kill)
	}
	phase := "the MCP handshake"
	sess, err := client.Connect(cctx, transport, nil)
	if err == nil {
		s.session = sess
		phase = "listing its tools"
		s.tools, err = listTools(cctx, name, sess)
	}
	fired := !watchdog()
	if err == nil && !fired {
		opts.Logger.Info("mcp: server connected", "server", name, "transport", s.kind,
			"tools", len(s.tools), "elapsed", time.Since(start).Round(time.Millisecond).String())
		return s, nil
	}
	if err == nil {
		err = cctx.Err()
	}
	reason := s.failureReason(ctx, cctx, phase, err, opts.ConnectTimeout)
	s.close()
	return nil, fail(reason)
}

// failureReason explains a failed connection.
func (s *server) failureReason(ctx, cctx context.Context, phase string, err error, timeout time.Duration) string {
	var reason string
	switch {
	// The deadline first: once it passed, the process is killed for it,
	// and its death (seen a moment later) is not the cause.
	case ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		reason = fmt.Sprintf("no answer within %s during %s", timeout, phase)
		if s.proc != nil {
			reason += "; the process was killed (is it an MCP server speaking stdio?)"
		}
	// The caller's cancellation next: it kills the process too (the
	// command's context), so a death seen now is its effect.
	case ctx.Err() != nil:
		reason = "connecting was cancelled during " + phase
	case s.proc != nil && !s.proc.killed.Load() && s.proc.exited(2*time.Second):
		reason = fmt.Sprintf("the process %s during %s", s.proc.exitStatus(), phase)
	default:
		reason = phase + " failed: " + err.Error()
	}
	if s.remote != nil {
		if hint := s.remote.statusHint(); hint != "" {
			reason = hint + "; " + reason
		}
	}
	if s.proc != nil {
		s.proc.exited(time.Second) // let the stderr copy finish
		if tail := s.proc.stderr.lastLines(10, 2000, s.red.text); tail != "" {
			reason += "; stderr: " + tail
		}
	}
	return reason
}

// listTools lists every tool of the server.
func listTools(ctx context.Context, name string, sess *sdk.ClientSession) ([]Tool, error) {
	var out []Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t.Name == "" {
			continue
		}
		tool := Tool{Server: name, Name: t.Name, Title: t.Title, Description: t.Description}
		tool.InputSchema = objectJSON(t.InputSchema)
		if tool.InputSchema == nil {
			tool.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tool.OutputSchema = objectJSON(t.OutputSchema)
		if t.Annotations != nil {
			tool.Annotations = objectJSON(t.Annotations)
			if tool.Title == "" {
				tool.Title = t.Annotations.Title
			}
		}
		if len(t.Meta) > 0 {
			tool.Meta = objectJSON(t.Meta)
		}
		out = append(out, tool)
	}
	return out, nil
}

// objectJSON marshals v when it is a JSON object, else returns nil.
func objectJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || jsonType(b) != "object" {
		return nil
	}
	return b
}

// Tools lists the tools of the connected servers, by server name and then
// in the order each server listed them. Names are unique.
func (c *Client) Tools() []Tool {
	out := make([]Tool, len(c.tools))
	copy(out, c.tools)
	return out
}

// Call calls a tool with args, a JSON object (empty or null means {}).
//
// The arguments are first checked against the tool's inputSchema (see
// ValidateArguments). The result becomes an MCPToolObservation whose first
// text block is "[Tool '<name>' executed.]", followed by each text item and
// each image (as a data: URL); text passes through Options.Mask. IsError is
// set when the server reports isError, and when the call could not be made
// or did not finish: unknown tool, invalid arguments, the server's per-call
// timeout (the observation says it timed out), the server gone (it says
// how the process ended) or a protocol error. The only Go error is ctx's,
// when ctx is cancelled or past its deadline.
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage) (*events.MCPToolObservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := c.byName[tool]
	if s == nil {
		names := make([]string, len(c.tools))
		for i, t := range c.tools {
			names[i] = t.Name
		}
		return errorObservation(tool, "no such MCP tool (available: "+strings.Join(names, ", ")+")"), nil
	}
	if c.closed.Load() {
		return errorObservation(tool, "the MCP client is closed"), nil
	}
	norm, err := ValidateArguments(c.schema[tool], args)
	if err != nil {
		return errorObservation(tool, c.mask("invalid arguments: "+err.Error())), nil
	}
	if s.proc != nil && s.proc.exited(0) {
		return errorObservation(tool, s.goneMessage()), nil
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.session.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: norm})
	c.log.Debug("mcp: tool call", "server", s.name, "tool", tool,
		"elapsed", time.Since(start).Round(time.Millisecond).String(), "failed", err != nil, "is_error", res != nil && res.IsError)
	switch {
	case err == nil && res == nil:
		return errorObservation(tool, fmt.Sprintf("MCP server '%s' returned no result", s.name)), nil
	case err == nil:
		return observation(tool, res, c.mask), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return errorObservation(tool, fmt.Sprintf(
			"timed out after %s waiting for MCP server '%s' (the server's timeout); the call was cancelled", s.timeout, s.name)), nil
	case s.proc != nil && s.proc.exited(500*time.Millisecond):
		return errorObservation(tool, s.goneMessage()), nil
	case errors.Is(err, sdk.ErrConnectionClosed):
		return errorObservation(tool, fmt.Sprintf("the connection to MCP server '%s' is closed", s.name)), nil
	}
	msg := fmt.Sprintf("MCP server '%s' failed the call: %s", s.name, err.Error())
	if s.remote != nil {
		if hint := s.remote.statusHint(); hint != "" {
			msg += " (" + hint + ")"
		}
	}
	return errorObservation(tool, s.red.text(msg)), nil
}

// goneMessage says that a stdio server has stopped, and how.
func (s *server) goneMessage() string {
	msg := fmt.Sprintf("MCP server '%s' is no longer running: the process %s", s.name, s.proc.exitStatus())
	if tail := s.proc.stderr.lastLines(5, 1000, s.red.text); tail != "" {
		msg += "; stderr: " + tail
	}
	return s.red.text(msg)
}

// Close closes every session and stops the stdio servers (closing their
// stdin, then SIGTERM, then SIGKILL to their process group, a few seconds
// apart at most). It is idempotent; calls after Close report an error
// observation.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		var wg sync.WaitGroup
		for _, s := range c.servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.close()
				c.log.Debug("mcp: server closed", "server", s.name)
			}()
		}
		wg.Wait()
	})
	return nil
}

// close ends the session (waiting a bounded time) and the process.
func (s *server) close() {
	if s.session != nil {
		done := make(chan struct{})
		go func() {
			_ = s.session.Close()
			close(done)
		}()
		t := time.NewTimer(stopGrace + 5*time.Second)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	if s.proc != nil {
		s.proc.stop(stopGrace)
	}
	if s.remote != nil {
		s.remote.close()
	}
}
