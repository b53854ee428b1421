// Package tools defines the agent's tools: the Tool interface, the registry
// that builds a conversation's tools from its configuration, and one file
// per built-in tool. A tool's file holds its arguments struct, from which
// its JSON Schema is derived (package internal/schema), its description,
// rendered with the limits its implementation uses, its constructor and
// its registration. Converting the arguments struct to the events action
// makes the compiler check that both have the same fields. The
// implementations of heavy tools live in sub-packages (terminal,
// fileeditor, fstools, browser, mcp).
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/tools/internal/schema"
)

// Env is what a conversation's tools may use.
type Env struct {
	ConversationID string
	// WorkDir is the conversation's working directory (absolute).
	WorkDir string
	// StateDir is the conversation's private directory, outside the
	// workspace (tool state such as undo history and saved outputs).
	StateDir string
	// Environ is extra KEY=VALUE environment for processes tools start.
	Environ []string
	// Mask hides secret values in text a tool returns; nil means identity.
	Mask func(string) string
	Log  *slog.Logger
}

// Tool is one tool bound to one conversation.
type Tool interface {
	// Name is the name the LLM calls the tool by.
	Name() string
	// Definition is the tool as listed in SystemPromptEvent.tools.
	Definition() events.ToolDefinition
	// Parameters is the JSON Schema of the LLM's arguments (without the
	// security_risk and summary properties the agent adds).
	Parameters() map[string]any
	// ActionKind is the kind of the action the arguments decode into.
	ActionKind() string
	// ReadOnly tools never change anything (no security_risk asked).
	ReadOnly() bool
	// Execute runs the action. A failure the model can act on is an
	// observation with IsError; an error return means infrastructure failure.
	Execute(ctx context.Context, a events.Action) (events.Observation, error)
	// Close releases the tool's resources (processes, files).
	Close() error
}

// Instant is implemented by tools whose Execute changes nothing outside the
// conversation and returns at once (think). The agent may then log their
// action together with its observation, in one durable write, instead of
// logging the action ahead of running it.
type Instant interface {
	Instant() bool
}

// ActionParser is implemented by tools whose arguments are not decoded
// strictly into their action kind (MCP tools: any object the server's
// schema accepts). args is the LLM's argument object without security_risk
// and summary. An error is reported to the model as an AgentErrorEvent.
type ActionParser interface {
	ParseAction(args json.RawMessage) (events.Action, error)
}

// Exporter is implemented by tools that run processes and take environment
// variables after they were built (secrets added or changed live). The
// variable must reach the next process the tool starts.
type Exporter interface {
	Export(ctx context.Context, name, value string) error
}

// Factory builds a tool for a conversation. params are the tool's settings
// from the agent configuration ({} when none).
type Factory func(ctx context.Context, env Env, params json.RawMessage) (Tool, error)

// SetFactory builds several tools sharing state (a tool set, such as
// browser_tool_set).
type SetFactory func(ctx context.Context, env Env, params json.RawMessage) ([]Tool, error)

var (
	regMu     sync.RWMutex
	factories = map[string]Factory{}
	sets      = map[string]SetFactory{}
)

// RegisterSet makes a tool set available by name. It panics on a duplicate.
func RegisterSet(name string, f SetFactory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := sets[name]; dup {
		panic("tools: duplicate tool set " + name)
	}
	sets[name] = f
}

// Register makes a tool available by name. It panics on a duplicate name.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := factories[name]; dup {
		panic("tools: duplicate tool " + name)
	}
	factories[name] = f
}

// Names lists the registered tool and tool-set names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(factories)+len(sets))
	for n := range factories {
		out = append(out, n)
	}
	for n := range sets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultTools are always present, whatever the configuration lists.
var DefaultTools = []string{"finish", "think"}

// UnknownToolError names a configured tool that does not exist.
type UnknownToolError struct{ Name string }

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("unknown tool %q (available: %s)", e.Name, strings.Join(Names(), ", "))
}

// Build creates the tools a conversation uses: the configured ones, in order,
// followed by the default tools not already listed. On error the tools built
// so far are closed.
func Build(ctx context.Context, env Env, refs []agentwire.ToolRef) ([]Tool, error) {
	seen := map[string]bool{}
	var out []Tool
	add := func(name string, params json.RawMessage) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		regMu.RLock()
		f, ok := factories[name]
		sf, isSet := sets[name]
		regMu.RUnlock()
		if !ok && !isSet {
			return &UnknownToolError{Name: name}
		}
		if len(params) == 0 {
			params = json.RawMessage(`{}`)
		}
		if isSet {
			ts, err := sf(ctx, env, params)
			if err != nil {
				return fmt.Errorf("build tool set %s: %w", name, err)
			}
			for _, t := range ts {
				if seen[t.Name()] {
					continue
				}
				seen[t.Name()] = true
				out = append(out, t)
			}
			return nil
		}
		t, err := f(ctx, env, params)
		if err != nil {
			return fmt.Errorf("build tool %s: %w", name, err)
		}
		out = append(out, t)
		return nil
	}
	for _, r := range refs {
		if err := add(r.Name, r.Params); err != nil {
			CloseAll(out)
			return nil, err
		}
	}
	for _, n := range DefaultTools {
		if err := add(n, nil); err != nil {
			CloseAll(out)
			return nil, err
		}
	}
	return out, nil
}

// CloseAll closes every tool, logging failures.
func CloseAll(ts []Tool) {
	for _, t := range ts {
		if err := t.Close(); err != nil {
			slog.Warn("tools: close", "tool", t.Name(), "error", err)
		}
	}
}

// base implements the descriptive half of Tool.
type base struct {
	kind        events.ToolKind
	description string
	params      map[string]any
}

// newBase returns the base of a built-in tool of kind: its description and
// the schema of its arguments A, both rendered with data (the limits the
// implementation uses). The description is rendered once per kind; each
// tool gets a schema of its own.
func newBase[A any](kind events.ToolKind, description string, data any) base {
	d, ok := descriptions.Load(kind)
	if !ok {
		d, _ = descriptions.LoadOrStore(kind, schema.MustRender(description, data))
	}
	return base{kind: kind, description: d.(string), params: schema.For[A](data)}
}

// descriptions holds the rendered description of each built-in tool kind.
var descriptions sync.Map

func (b *base) spec() events.ToolSpec {
	for _, s := range events.ToolSpecs() {
		if s.Kind == b.kind {
			return s
		}
	}
	panic("tools: unknown tool kind " + string(b.kind))
}

func (b *base) Name() string               { return b.spec().Name }
func (b *base) ActionKind() string         { return b.spec().ActionType }
func (b *base) ReadOnly() bool             { return b.spec().ReadOnly }
func (b *base) Parameters() map[string]any { return b.params }
func (b *base) Close() error               { return nil }
func (b *base) Definition() events.ToolDefinition {
	return events.NewToolDefinition(b.kind, b.description)
}

// ErrorObservation is a helper for tools: an observation of kind obs with
// IsError and text.
func ErrorObservation(obs events.Observation, text string) events.Observation {
	b := obs.Common()
	b.SetText(text)
	b.IsError = true
	return obs
}
