package history

import (
	"sort"

	"github.com/acs-project/acs/events"
)

// pairResults maps each answered ActionEvent (by its event id) to the
// position of its result in evs: an ObservationEvent or UserRejectObservation
// names its action (action_id); an AgentErrorEvent only names the tool call,
// so it answers the latest unanswered action with that tool_call_id. Tool
// call ids are only unique within one LLM response (some models reuse
// "call_0"), so they never pair across responses on their own.
func pairResults(evs []events.Event) map[string]int {
	var p pairing
	p.add(evs)
	return p.answered
}

// pairing is pairResults computed incrementally: add processes the events
// appended since the last call, so a history that only grows is paired in
// time proportional to what was added, not to its length.
type pairing struct {
	n        int            // events of the history processed so far
	answered map[string]int // answered action id -> position of its result
	open     map[string][]string
	// openPos holds the position of every unanswered action, by id.
	openPos map[string]int
	// condensations counts the Condensation and CondensationRequest events.
	condensations int
	// settled is the longest prefix of the history whose actions all have
	// their results within it: later events change neither its pairing
	// nor its view messages.
	settled int
	// view is mergeUser of the view messages of the history's first viewN
	// events (viewN <= settled), without the system message.
	view  []events.Message
	viewN int
}

// add pairs evs[p.n:]: evs must extend the history p has seen.
func (p *pairing) add(evs []events.Event) {
	if p.answered == nil {
		p.answered, p.open, p.openPos = map[string]int{}, map[string][]string{}, map[string]int{}
	}
	take := func(callID, actionID string) string {
		ids := p.open[callID]
		for i := len(ids) - 1; i >= 0; i-- {
			if actionID == "" || ids[i] == actionID {
				id := ids[i]
				if len(ids) == 1 {
					delete(p.open, callID)
				} else {
					p.open[callID] = append(ids[:i:i], ids[i+1:]...)
				}
				delete(p.openPos, id)
				return id
			}
		}
		return ""
	}
	for i := p.n; i < len(evs); i++ {
		switch e := evs[i].(type) {
		case *events.ActionEvent:
			p.open[e.ToolCallID] = append(p.open[e.ToolCallID], e.ID)
			p.openPos[e.ID] = i
		case *events.ObservationEvent:
			if id := take(e.ToolCallID, e.ActionID); id != "" {
				p.answered[id] = i
			}
		case *events.UserRejectObservation:
			if id := take(e.ToolCallID, e.ActionID); id != "" {
				p.answered[id] = i
			}
		case *events.AgentErrorEvent:
			if id := take(e.ToolCallID, ""); id != "" {
				p.answered[id] = i
			}
		case *events.Condensation, *events.CondensationRequest:
			p.condensations++
		}
		if len(p.openPos) == 0 {
			p.settled = i + 1
		}
	}
	p.n = len(evs)
}

// unanswered returns the positions in the history of the actions without a
// result, ascending.
func (p *pairing) unanswered() []int {
	if len(p.openPos) == 0 {
		return nil
	}
	out := make([]int, 0, len(p.openPos))
	for _, i := range p.openPos {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// pairing returns the pairing of h.events, brought up to date. The events
// only grow between calls of SetBranch, which drops the pairing.
func (h *History) pairing() *pairing {
	if h.pairs == nil || h.pairs.n > len(h.events) {
		h.pairs = &pairing{}
	}
	h.pairs.add(h.events)
	return h.pairs
}

// Unanswered returns the branch's executable actions without a result, in
// log order: actions interrupted, pending confirmation or not run yet.
func (h *History) Unanswered() []*events.ActionEvent {
	var out []*events.ActionEvent
	for _, i := range h.pairing().unanswered() {
		if a := h.events[i].(*events.ActionEvent); a.Action != nil {
			out = append(out, a)
		}
	}
	return out
}
