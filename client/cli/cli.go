// Package cli is the user command line of ACS (acs login, start, watch,
// send, ls, ...), built on the typed client (package client). Main runs
// one command; cmd/acs only wires it.
//
// Conventions every command follows: --help prints the command's usage
// with an example (exit 0); --json prints machine-readable output; exit
// codes are 0 (done), 1 (failed: the server refused, the conversation
// failed, the network broke) and 2 (usage: a bad flag or argument);
// errors are one line on stderr, "acs: 404 Conversation not found", with
// the server's detail; progress is drawn on a terminal and written as
// plain lines when piped; NO_COLOR turns colors off.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/acs-project/acs/client"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// IO is where a command reads and writes, and its environment.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (ACS_URL, ACS_API_KEY, NO_COLOR).
	Getenv func(string) string
	// StdinTTY and StdoutTTY say whether stdin and stdout are terminals
	// (prompts and live progress need one).
	StdinTTY, StdoutTTY bool
	// ConfigDir is where config.json is kept ("" : os.UserConfigDir()/acs).
	ConfigDir string
	// HTTPClient sends the requests to the control plane and the agent
	// servers, and dials their WebSockets (nil: http.DefaultClient).
	HTTPClient *http.Client
}

// Std is the process's own IO.
func Std() IO {
	return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StdinTTY: isTerminal(os.Stdin), StdoutTTY: isTerminal(os.Stdout)}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

// commands are the user commands, by name.
var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// Has reports whether name is a command of the CLI (cmd/acs dispatches
// the others: serve, agent-server, ...).
func Has(name string) bool { _, ok := commands[name]; return ok }

// Commands lists the commands with their one-line summaries, sorted, for
// the binary's usage text.
func Commands() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-13s  %s\n", n, commands[n].summary)
	}
	return b.String()
}

// Main runs the command args[0] with args[1:] and returns the process's
// exit code.
func Main(ctx context.Context, args []string, io IO) int {
	if io.Getenv == nil {
		io.Getenv = os.Getenv
	}
	a := &app{io: io, color: colorOn(io)}
	if len(args) == 0 || !Has(args[0]) {
		fmt.Fprintf(io.Stderr, "acs: unknown command %q (run \"acs help\")\n", strings.Join(args[:min(1, len(args))], ""))
		return ExitUsage
	}
	err := commands[args[0]].run(ctx, a, args[1:])
	return a.report(err)
}

// colorOn says whether output is colored: on a terminal, unless NO_COLOR
// is set (https://no-color.org) or TERM is dumb.
func colorOn(io IO) bool {
	return io.StdoutTTY && io.Getenv("NO_COLOR") == "" && io.Getenv("TERM") != "dumb"
}

// app is one run of a command: its IO and its connection to the server.
type app struct {
	io    IO
	color bool
	json  bool
	c     *client.Client
	url   string
}

// usageError is a bad command line (exit 2).
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.msg }

// errHelp is returned after --help was printed (exit 0).
var errHelp = errors.New("help")

// silentError is a failure already reported (exit 1, nothing printed).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// report prints err as one line and returns the exit code.
func (a *app) report(err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return ExitOK
	}
	var se *silentError
	if errors.As(err, &se) {
		return se.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.io.Stderr, "acs %s: %s\nRun \"acs %s --help\" for usage.\n", ue.cmd, ue.msg, ue.cmd)
		return ExitUsage
	}
	fmt.Fprintln(a.io.Stderr, "acs: "+oneLine(errorText(err)))
	return ExitFailure
}

// errorText is what the user reads of err: for an error answer, its status
// and the server's detail ("404 Conversation not found"), with the field
// of an invalid one.
func errorText(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Err != nil {
		msg := ce.Err.Message
		if msg == "" {
			msg = ce.Err.Error()
		}
		if len(ce.Err.Field) > 0 {
			var loc []string
			for _, f := range ce.Err.Field {
				loc = append(loc, fmt.Sprint(f))
			}
			field := strings.Join(loc, ".")
			if !strings.Contains(msg, field) {
				msg = field + ": " + msg
			}
		}
		return fmt.Sprintf("%d %s", ce.Status, msg)
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	return err.Error()
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// flags returns a command's flag set with --json, whose --help prints
// usage (what the arguments are), the description, the example and the
// flags to stdout.
func (a *app) flags(name, usage, desc, example string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&a.json, "json", false, "print machine-readable JSON")
	fs.Usage = func() {
		w := a.io.Stdout
		fmt.Fprintf(w, "Usage: acs %s\n\n%s\n\nExample:\n%s\n\nFlags:\n", usage, desc, indent(example, "  "))
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// parse parses args with flags anywhere (before, between or after the
// positional arguments; "--" ends the flags) and checks the number of
// positional arguments is within [minArgs, maxArgs] (maxArgs < 0: no
// limit).
func (a *app) parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return nil, errHelp
			}
			return nil, &usageError{cmd: fs.Name(), msg: err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < minArgs:
		return nil, &usageError{cmd: fs.Name(), msg: fmt.Sprintf("missing argument (want %d, got %d)", minArgs, len(pos))}
	case maxArgs >= 0 && len(pos) > maxArgs:
		return nil, &usageError{cmd: fs.Name(), msg: fmt.Sprintf("unexpected argument %q", pos[maxArgs])}
	}
	return pos, nil
}

// connect sets up the client from the saved login and the environment
// (ACS_URL and ACS_API_KEY override the saved values).
func (a *app) connect() error {
	cfg, err := loadConfig(a.io)
	if err != nil {
		return err
	}
	if v := a.io.Getenv("ACS_URL"); v != "" {
		cfg.URL = v
	}
	if v := a.io.Getenv("ACS_API_KEY"); v != "" {
		cfg.APIKey = v
	}
	if cfg.URL == "" || cfg.APIKey == "" {
		return errors.New("not logged in: run \"acs login\" (or set ACS_URL and ACS_API_KEY)")
	}
	a.url = cfg.URL
	a.c = client.New(cfg.URL, cfg.APIKey, a.httpOpts()...)
	return nil
}

// httpOpts are the client options of a.io.HTTPClient.
func (a *app) httpOpts() []client.Option {
	if a.io.HTTPClient == nil {
		return nil
	}
	return []client.Option{client.WithHTTPClient(a.io.HTTPClient)}
}

// sub dispatches a command with subcommands (acs sandboxes ls, ...).
func (a *app) sub(ctx context.Context, name string, args []string, subs map[string]func(context.Context, []string) error, help string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprint(a.io.Stderr, help)
			return &silentError{code: ExitUsage}
		}
		fmt.Fprint(a.io.Stdout, help)
		return errHelp
	}
	f, ok := subs[args[0]]
	if !ok {
		return &usageError{cmd: name, msg: fmt.Sprintf("unknown subcommand %q", args[0])}
	}
	return f(ctx, args[1:])
}
