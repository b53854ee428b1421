package history

import (
	"slices"
	"strings"

	"github.com/acs-project/acs/events"
)

// errorPrefix marks an observation with is_error for the LLM.
const errorPrefix = "[An error occurred during execution.]\n"

// BuildView turns history, the events of a view in log order, into the
// LLM's messages after the system message. It builds them from scratch.
//
// Consecutive ActionEvents of one LLM response become one assistant message
// with several tool calls, each immediately followed by its result (an
// observation, an agent error or a rejection), whatever was logged in
// between: chat APIs require tool results right after their call. A call
// without a result (interrupted, or still pending confirmation) gets a
// placeholder result so the history stays valid.
func BuildView(system events.Message, history []events.Event) []events.Message {
	return mergeUser([]events.Message{system}, viewMessages(history, 0, len(history), pairResults(history))...)
}

// viewMessages are the messages of history[from:to], before adjacent user
// messages are merged. Each action group is followed by its results, which
// pairs locates anywhere in history.
func viewMessages(history []events.Event, from, to int, pairs map[string]int) []events.Message {
	resultMessage := func(a *events.ActionEvent) (events.Message, bool) {
		i, ok := pairs[a.ID]
		if !ok {
			return events.Message{}, false
		}
		var text string
		switch e := history[i].(type) {
		case *events.ObservationEvent:
			text = ObservationText(e.Observation)
		case *events.AgentErrorEvent:
			text = e.Error
		case *events.UserRejectObservation:
			text = "Action rejected: " + e.RejectionReason
		}
		id := a.ToolCallID
		return events.Message{Role: events.RoleTool, ToolCallID: &id, Content: []events.Content{events.TextItem(text)}}, true
	}

	var msgs []events.Message
	for i := from; i < to; i++ {
		switch e := history[i].(type) {
		case *events.MessageEvent:
			msgs = append(msgs, messageFor(e))
		case *events.CondensationSummaryEvent:
			msgs = append(msgs, events.Message{Role: events.RoleUser, Content: []events.Content{
				events.TextItem("Summary of the earlier part of this conversation:\n" + e.Summary)}})
		case *events.ActionEvent:
			// Gather the actions of this LLM response.
			group := []*events.ActionEvent{e}
			for i+1 < to {
				next, ok := history[i+1].(*events.ActionEvent)
				if !ok || next.LLMResponseID != e.LLMResponseID {
					break
				}
				group = append(group, next)
				i++
			}
			msgs = append(msgs, assistantFor(group))
			for _, a := range group {
				r, ok := resultMessage(a)
				if !ok {
					id := a.ToolCallID
					r = events.Message{Role: events.RoleTool, ToolCallID: &id, Content: []events.Content{
						events.TextItem("[This tool call has no result: it was interrupted or is waiting for confirmation.]")}}
				}
				msgs = append(msgs, r)
			}
		}
	}
	return msgs
}

// ObservationText is an observation's text as the LLM reads it, marked
// when it is an error.
func ObservationText(o events.Observation) string {
	b := o.Common()
	text := b.Text()
	if b.IsError {
		return errorPrefix + text
	}
	return text
}

// messageFor converts a MessageEvent: user and environment messages are user
// messages; extended content (triggered skills, suffixes) is appended.
func messageFor(e *events.MessageEvent) events.Message {
	m := e.LLMMessage
	switch e.Source {
	case events.SourceAgent:
		m.Role = events.RoleAssistant
	default:
		if m.Role != events.RoleUser {
			m.Role = events.RoleUser
		}
	}
	if len(e.ExtendedContent) > 0 {
		content := append([]events.Content(nil), m.Content...)
		for _, t := range e.ExtendedContent {
			tc := t
			content = append(content, &tc)
		}
		m.Content = content
	}
	return m
}

func assistantFor(group []*events.ActionEvent) events.Message {
	var thought []string
	for _, t := range group[0].Thought {
		thought = append(thought, t.Text)
	}
	m := events.Message{Role: events.RoleAssistant, ReasoningContent: group[0].ReasoningContent, ThinkingBlocks: group[0].ThinkingBlocks}
	if len(thought) > 0 {
		m.Content = []events.Content{events.TextItem(strings.Join(thought, "\n"))}
	}
	for _, a := range group {
		m.ToolCalls = append(m.ToolCalls, a.ToolCall)
	}
	return m
}

// mergeUser appends msgs to out, joining each plain user message to a user
// message before it: providers reject or mishandle consecutive user turns.
// An element of out it joins to is replaced, never changed in place.
func mergeUser(out []events.Message, msgs ...events.Message) []events.Message {
	for _, m := range msgs {
		if n := len(out); n > 0 && m.Role == events.RoleUser && out[n-1].Role == events.RoleUser {
			prev := out[n-1]
			prev.Content = append(append([]events.Content(nil), prev.Content...), m.Content...)
			out[n-1] = prev
			continue
		}
		out = append(out, m)
	}
	return out
}

// View is the LLM's view of the active branch: the system message, then
// the messages of the branch's events, condensed and without the user
// messages in blocked, which holds the ids a hook blocked. Without
// condensations or blocked messages it is built incrementally: a branch
// that only grew costs what was added. It always equals BuildView of the
// condensed, unblocked events.
func (h *History) View(system events.Message, blocked map[string]string) []events.Message {
	p := h.pairing()
	if p.condensations == 0 && len(blocked) == 0 {
		return p.buildView(system, h.events)
	}
	return BuildView(system, h.llmEvents(blocked))
}

// llmEvents are the branch's events the LLM sees: condensed, without the
// user messages in blocked.
func (h *History) llmEvents(blocked map[string]string) []events.Event {
	evs := h.Events()
	if h.pairing().condensations > 0 {
		evs = condensed(h.events)
	}
	if len(blocked) == 0 {
		return evs
	}
	out := make([]events.Event, 0, len(evs))
	for _, ev := range evs {
		if m, ok := ev.(*events.MessageEvent); ok {
			if _, isBlocked := blocked[m.ID]; isBlocked {
				continue
			}
		}
		out = append(out, ev)
	}
	return out
}

// ViewSegments is View cut in segments: the view is their concatenation.
// Without condensations or blocked messages, the messages of the settled
// prefix are a segment shared with the history and with every view before:
// a view costs what changed, not a copy of the branch. No segment ever
// changes once returned.
func (h *History) ViewSegments(system events.Message, blocked map[string]string) [][]events.Message {
	p := h.pairing()
	if p.condensations > 0 || len(blocked) > 0 {
		return [][]events.Message{BuildView(system, h.llmEvents(blocked))}
	}
	p.settle(h.events)
	tail := viewMessages(h.events, p.viewN, len(h.events), p.answered)
	if len(tail) > 0 && len(p.view) > 0 && tail[0].Role == events.RoleUser && p.view[len(p.view)-1].Role == events.RoleUser {
		// The tail's first message joins the prefix's last: one segment.
		return [][]events.Message{p.buildView(system, h.events)}
	}
	return [][]events.Message{{system}, p.view[:len(p.view):len(p.view)], mergeUser(nil, tail...)}
}

// settle extends p.view to the settled prefix of h. A message of the prefix
// that a new one joins is changed in a copy of p.view: a view that shares
// p.view never changes.
func (p *pairing) settle(h []events.Event) {
	if p.settled <= p.viewN {
		return
	}
	add := viewMessages(h, p.viewN, p.settled, p.answered)
	if n := len(p.view); n > 0 && len(add) > 0 && add[0].Role == events.RoleUser && p.view[n-1].Role == events.RoleUser {
		p.view = slices.Clone(p.view)
	}
	p.view = mergeUser(p.view, add...)
	p.viewN = p.settled
}

// buildView is BuildView(system, h) for the history p pairs (p.add(h) done),
// built incrementally: the messages of the settled prefix (p.settled) never
// change, so they are built once (p.view) and only the rest anew.
func (p *pairing) buildView(system events.Message, h []events.Event) []events.Message {
	p.settle(h)
	tail := viewMessages(h, p.viewN, len(h), p.answered)
	out := make([]events.Message, 0, 1+len(p.view)+len(tail))
	out = append(append(out, system), p.view...)
	return mergeUser(out, tail...)
}
