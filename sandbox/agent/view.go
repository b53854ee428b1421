package agent

import (
	"strings"

	"github.com/acs-project/acs/events"
)

// errorPrefix marks an observation with is_error for the LLM.
const errorPrefix = "[An error occurred during execution.]\n"

// buildView turns the history into LLM messages after the system message.
//
// Consecutive ActionEvents of one LLM response become one assistant message
// with several tool calls, each immediately followed by its result (an
// observation, an agent error or a rejection), whatever was logged in
// between: chat APIs require tool results right after their call. A call
// without a result (interrupted, or still pending confirmation) gets a
// placeholder result so the history stays valid.
func buildView(system events.Message, history []events.Event) []events.Message {
	return buildPairedView(system, history, pairResults(history))
}

// buildPairedView is buildView with the history's pairResults given.
func buildPairedView(system events.Message, history []events.Event, pairs map[string]int) []events.Message {
	return mergeUser([]events.Message{system}, viewMessages(history, 0, len(history), pairs)...)
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
			text = observationText(e.Observation)
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

func observationText(o events.Observation) string {
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

// mergeUserMessages joins adjacent plain user messages, as providers reject
// or mishandle consecutive user turns.
func mergeUserMessages(msgs []events.Message) []events.Message {
	return mergeUser(msgs[:0:0], msgs...)
}

// mergeUser appends msgs to out, joining each plain user message to a user
// message before it (mergeUserMessages is this fold from an empty out). An
// element of out it joins to is replaced, never changed in place.
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

// viewLocked is the LLM view of the conversation: the system message, then
// buildView of llmHistoryLocked. When that history is c.history itself (no
// condensation, no blocked message) its pairing is the incremental one.
func (c *Conversation) viewLocked() []events.Message {
	system := c.systemMessageLocked()
	p := c.pairsLocked()
	if p.condensations == 0 && len(c.st.BlockedMessages) == 0 {
		return p.buildView(system, c.history)
	}
	return buildView(system, c.llmHistoryLocked())
}

// buildView is buildView(system, h) for the history p pairs (p.add(h) done),
// built incrementally: the messages of the settled prefix (p.settled) never
// change, so they are built once (p.view) and only the rest anew.
func (p *pairing) buildView(system events.Message, h []events.Event) []events.Message {
	if p.settled > p.viewN {
		p.view = mergeUser(p.view, viewMessages(h, p.viewN, p.settled, p.answered)...)
		p.viewN = p.settled
	}
	tail := viewMessages(h, p.viewN, len(h), p.answered)
	out := make([]events.Message, 0, 1+len(p.view)+len(tail))
	out = append(append(out, system), p.view...)
	return mergeUser(out, tail...)
}
