package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agent/history"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
)

// ErrNoCondenser is returned by RequestCondensation without a condenser.
var ErrNoCondenser = errors.New("this conversation has no condenser configured")

// condenser returns the summarizing condenser, or nil.
func (c *Conversation) condenser() *agentwire.Condenser {
	cd := c.meta.Request.Agent.Condenser
	if cd == nil || cd.Kind != "LLMSummarizingCondenser" || cd.LLM == nil {
		return nil
	}
	return cd
}

// condensationNeeded returns the history's condensation plan under
// the summarizing condenser's limits, or nil when there is no condenser or
// nothing to condense.
func (c *Conversation) condensationNeeded() *history.Plan {
	cd := c.condenser()
	if cd == nil {
		return nil
	}
	plan, ok := c.hist.CondensationPlan(history.Limits{MaxSize: cd.MaxSize, KeepFirst: cd.KeepFirst,
		MaxTokens: cd.MaxTokens, MinimumProgress: cd.MinimumProgress}, c.st.LastPromptTokens)
	if !ok {
		return nil
	}
	return &plan
}

// condense summarizes the planned slice with the condenser's LLM and emits the
// Condensation. The caller's plan is made again by the owner, and the
// summary is dropped if the slice left the view during the LLM call:
// another condensation or a navigation may come between. It does not run
// on the owner.
func (c *Conversation) condense(ctx context.Context, plan *history.Plan) error {
	var (
		ids    []string
		prompt string
		cfg    llm.Config
		ok     bool
	)
	c.do(func() {
		cd := c.condenser()
		if plan = c.condensationNeeded(); cd == nil || plan == nil {
			return
		}
		var forgotten []events.Event
		if forgotten, ok = c.hist.Forgotten(*plan); !ok {
			return
		}
		ids = make([]string, len(forgotten))
		for i, ev := range forgotten {
			ids[i] = ev.EventBase().ID
		}
		prompt = summarizingPrompt(forgotten)
		cfg = *cd.LLM
		if cfg.UsageID == "default" || cfg.UsageID == "" {
			cfg.UsageID = "condenser"
		}
	})
	if !ok {
		return nil
	}

	client := llm.New(cfg)
	sctx, span := c.llmSpan(ctx, cfg, "condenser")
	resp, err := client.Complete(sctx, llm.Request{Messages: []events.Message{
		{Role: events.RoleSystem, Content: []events.Content{events.TextItem("You summarize an AI coding agent's history so it can continue its work with less context.")}},
		{Role: events.RoleUser, Content: []events.Content{events.TextItem(prompt)}},
	}}, nil)
	endLLMSpan(span, resp, err)
	if err != nil {
		return fmt.Errorf("condense history: %w", err)
	}
	return call(c, func() error {
		usage, err := c.usageEvents(cfg, resp)
		if now, ok := c.hist.Forgotten(*plan); !ok || !sameIDs(now, ids) {
			return errors.Join(err, c.emit(ctx, usage...))
		}
		summary, offset := resp.Content, plan.Offset
		if emitErr := c.emit(ctx, append(usage, &events.Condensation{ForgottenEventIDs: ids, Summary: &summary,
			SummaryOffset: &offset, LLMResponseID: resp.ID})...); emitErr != nil {
			return emitErr
		}
		return err
	})
}

// sameIDs reports whether evs are the events ids, in order.
func sameIDs(evs []events.Event, ids []string) bool {
	if len(evs) != len(ids) {
		return false
	}
	for i, id := range ids {
		if evs[i].EventBase().ID != id {
			return false
		}
	}
	return true
}

// RequestCondensation appends a CondensationRequest and, when no run is in
// progress, condenses at once (a running loop condenses at its next step,
// or as it ends: endRun).
// ErrNoCondenser without a summarizing condenser.
func (c *Conversation) RequestCondensation(ctx context.Context) error {
	var (
		running bool
		plan    *history.Plan
	)
	if err := call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		if c.condenser() == nil {
			return ErrNoCondenser
		}
		if err := c.emit(ctx, &events.CondensationRequest{}); err != nil {
			return err
		}
		running, plan = c.running, c.condensationNeeded()
		return nil
	}); err != nil {
		return err
	}
	if running || plan == nil {
		return nil
	}
	return c.condense(ctx, plan)
}

const summarizingTemplate = `You are maintaining a context-aware state summary for an interactive software agent. The events below are being removed from the agent's context; write the summary that replaces them so the agent can continue the task without them.

Track, as far as the events show:
USER_CONTEXT: essential user requirements, goals and clarifications
TASK_TRACKING: active tasks, with ids and statuses
COMPLETED: tasks completed so far, with brief results
PENDING: tasks that still need to be done
CODE_STATE: file paths, function signatures, data structures that matter
TESTS: failing cases, error messages, outputs
CHANGES: code edits, variable updates
DEPS: dependencies, imports, external calls
VERSION_CONTROL_STATUS: repository state, current branch, PR status, commit history

Be precise and concise; keep identifiers, paths and error messages verbatim.

<EVENTS>
%s
</EVENTS>`

// summarizingPrompt renders the forgotten events for the condenser's LLM.
func summarizingPrompt(evs []events.Event) string {
	var b strings.Builder
	clip := func(s string) string {
		if len(s) > 4000 {
			return s[:2000] + "\n...[truncated]...\n" + s[len(s)-2000:]
		}
		return s
	}
	for _, ev := range evs {
		switch e := ev.(type) {
		case *events.MessageEvent:
			who := "User"
			if e.Source == events.SourceAgent {
				who = "Agent"
			} else if e.Source == events.SourceEnvironment {
				who = "Environment"
			}
			fmt.Fprintf(&b, "%s: %s\n", who, clip(e.LLMMessage.Text()))
		case *events.ActionEvent:
			fmt.Fprintf(&b, "Action %s: %s\n", e.ToolName, clip(e.ToolCall.Arguments))
		case *events.ObservationEvent:
			fmt.Fprintf(&b, "Result of %s: %s\n", e.ToolName, clip(history.ObservationText(e.Observation)))
		case *events.AgentErrorEvent:
			fmt.Fprintf(&b, "Error from %s: %s\n", e.ToolName, clip(e.Error))
		case *events.UserRejectObservation:
			fmt.Fprintf(&b, "Rejected %s: %s\n", e.ToolName, e.RejectionReason)
		case *events.CondensationSummaryEvent:
			fmt.Fprintf(&b, "Earlier summary: %s\n", clip(e.Summary))
		}
	}
	return fmt.Sprintf(summarizingTemplate, b.String())
}
