package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/wire"
)

// ErrNoCondenser is returned by RequestCondensation without a condenser.
var ErrNoCondenser = errors.New("this conversation has no condenser configured")

// condenser returns the summarizing condenser, or nil.
func (c *Conversation) condenser() *wire.Condenser {
	cd := c.meta.Request.Agent.Condenser
	if cd == nil || cd.Kind != "LLMSummarizingCondenser" || cd.LLM == nil {
		return nil
	}
	return cd
}

// condensedHistory applies every Condensation in log order: the events it
// forgot leave the view and its summary enters at summary_offset, as a
// CondensationSummaryEvent with id "<condensation id>-summary" (which a
// later condensation may forget in turn). Requests are markers, not view.
func condensedHistory(history []events.Event) []events.Event {
	var view []events.Event
	for _, ev := range history {
		switch e := ev.(type) {
		case *events.Condensation:
			forgotten := make(map[string]bool, len(e.ForgottenEventIDs))
			for _, id := range e.ForgottenEventIDs {
				forgotten[id] = true
			}
			kept := view[:0:0]
			for _, v := range view {
				if !forgotten[v.EventBase().ID] {
					kept = append(kept, v)
				}
			}
			view = kept
			if e.Summary != nil && e.SummaryOffset != nil {
				at := min(*e.SummaryOffset, len(view))
				sum := &events.CondensationSummaryEvent{Base: events.Base{ID: e.ID + "-summary", Timestamp: e.Timestamp,
					Source: events.SourceEnvironment}, Summary: *e.Summary}
				view = append(view[:at:at], append([]events.Event{sum}, view[at:]...)...)
			}
		case *events.CondensationRequest:
		default:
			view = append(view, ev)
		}
	}
	return view
}

// condensationPlan is the slice of the view to forget.
type condensationPlan struct {
	reason     string
	start, end int // view[start:end] is forgotten
	offset     int // where the summary goes
}

// validCuts marks the indexes at which the view may be cut without
// separating a tool call from its result.
func validCuts(view []events.Event) []bool {
	pairs := pairResults(view)
	ok := make([]bool, len(view)+1)
	ok[0] = true
	// closes[i] counts the calls answered at position i.
	closes := make([]int, len(view))
	for _, r := range pairs {
		closes[r]++
	}
	open := 0
	for i, ev := range view {
		if a, isAction := ev.(*events.ActionEvent); isAction {
			if _, answered := pairs[a.ID]; answered {
				open++
			} else {
				open += 1 << 20 // never answered: no cut after it
			}
		}
		open -= closes[i]
		ok[i+1] = open == 0
	}
	return ok
}

// condensationRequested reports whether history holds a
// CondensationRequest no Condensation followed.
func condensationRequested(history []events.Event) bool {
	requested := false
	for _, ev := range history {
		switch ev.(type) {
		case *events.CondensationRequest:
			requested = true
		case *events.Condensation:
			requested = false
		}
	}
	return requested
}

// condensationNeededLocked decides whether to condense before the next LLM
// call, and what to forget: an unhandled CondensationRequest or too many
// prompt tokens (hard: always condense), or a view longer than max_size
// (soft: only when forgetting makes enough progress).
func (c *Conversation) condensationNeededLocked() *condensationPlan {
	cd := c.condenser()
	if cd == nil {
		return nil
	}
	view := condensedHistory(c.history)
	reason, hard, target := "", false, 0
	switch {
	case condensationRequested(c.history):
		reason, hard, target = "request", true, len(view)/2
	case cd.MaxTokens != nil && c.st.LastPromptTokens > int64(*cd.MaxTokens):
		reason, hard, target = "tokens", true, len(view)/2
	case len(view) > cd.MaxSize:
		reason, target = "events", cd.MaxSize/2
	default:
		return nil
	}
	cuts := validCuts(view)
	start := min(cd.KeepFirst, len(view))
	for start < len(view) && !cuts[start] {
		start++
	}
	tail := max(target-start-1, 1)
	end := max(len(view)-tail, start)
	for end < len(view) && !cuts[end] {
		end++
	}
	progress := 0.0
	if len(view) > 0 {
		progress = float64(end-start) / float64(len(view))
	}
	if end-start <= 0 || progress < cd.MinimumProgress {
		if !hard || len(view) == 0 {
			return nil
		}
		// Hard context reset: summarize everything.
		return &condensationPlan{reason: reason, start: 0, end: len(view), offset: 0}
	}
	return &condensationPlan{reason: reason, start: start, end: end, offset: start}
}

// condense summarizes the planned slice with the condenser's LLM and emits the
// Condensation.
func (c *Conversation) condense(ctx context.Context, plan *condensationPlan) error {
	c.mu.Lock()
	cd := c.condenser()
	view := condensedHistory(c.history)
	if cd == nil || plan.end > len(view) {
		c.mu.Unlock()
		return nil
	}
	forgotten := view[plan.start:plan.end]
	ids := make([]string, len(forgotten))
	for i, ev := range forgotten {
		ids[i] = ev.EventBase().ID
	}
	prompt := summarizingPrompt(forgotten)
	cfg := *cd.LLM
	if cfg.UsageID == "default" || cfg.UsageID == "" {
		cfg.UsageID = "condenser"
	}
	c.mu.Unlock()

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
	c.mu.Lock()
	defer c.mu.Unlock()
	usage, err := c.usageEventsLocked(cfg, resp)
	summary, offset := resp.Content, plan.offset
	if emitErr := c.emitLocked(ctx, append(usage, &events.Condensation{ForgottenEventIDs: ids, Summary: &summary,
		SummaryOffset: &offset, LLMResponseID: resp.ID})...); emitErr != nil {
		return emitErr
	}
	return err
}

// RequestCondensation appends a CondensationRequest and, when no run is in
// progress, condenses at once (a running loop condenses at its next step,
// or as it ends: endRun).
// ErrNoCondenser without a summarizing condenser.
func (c *Conversation) RequestCondensation(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.condenser() == nil {
		c.mu.Unlock()
		return ErrNoCondenser
	}
	if err := c.emitLocked(ctx, &events.CondensationRequest{}); err != nil {
		c.mu.Unlock()
		return err
	}
	running := c.running
	plan := c.condensationNeededLocked()
	c.mu.Unlock()
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
			fmt.Fprintf(&b, "Result of %s: %s\n", e.ToolName, clip(observationText(e.Observation)))
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
