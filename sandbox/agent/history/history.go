// Package history is a conversation's history as a value: the tree of its
// logged events, the head, and the events of the active branch the LLM
// sees. Its methods derive what the agent loop needs from them: the LLM
// view, the pairing of actions with their results, the unanswered actions,
// stuck detection and the condensation plan.
//
// The package does no I/O, reads no clock and starts no goroutines. A
// History is not safe for concurrent use: one goroutine owns it.
package history

import (
	"slices"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// LeafKey is the state key of a ConversationStateUpdateEvent that moves
// the head. Its value is the new head's event id, or null for the empty
// tree.
const LeafKey = "leaf_event_id"

// History is the conversation tree and its active branch. Events carry no
// parent id, so the tree is derived from the log: an event's parent is the
// head when it was logged, and every event but a state update becomes the
// head. A LeafKey state update moves the head instead, so replaying the log
// rebuilds the same tree and head.
//
// The zero value is an empty history. Read methods may update caches, so
// even they need the owner.
type History struct {
	parent map[string]string // each event's parent, "" for a root
	head   string            // the event the next one follows, "" for the empty tree
	events []events.Event    // the events of the active branch in the view, in log order
	stale  bool              // the head moved: events is not the active branch's
	pairs  *pairing          // events' actions and results, brought up to date lazily
}

// Add places ev, just logged, in the tree. An event in the view joins the
// active branch's events. A LeafKey state update makes the branch stale:
// later events then only join the tree until SetBranch gives the new
// branch's events. Add reports whether the branch is stale.
func (h *History) Add(ev events.Event) (stale bool) {
	id := ev.EventBase().ID
	su, isState := ev.(*events.ConversationStateUpdateEvent)
	if isState && su.Key == LeafKey {
		var leaf *string
		if strictjson.Unmarshal(su.Value, &leaf) == nil {
			h.head = ""
			if leaf != nil {
				h.head = *leaf
			}
		}
		h.stale = true
		return true
	}
	if h.parent == nil {
		h.parent = map[string]string{}
	}
	h.parent[id] = h.head
	if !isState {
		h.head = id
	}
	if !h.stale && InView(ev) {
		h.events = append(h.events, ev)
	}
	return h.stale
}

// Stale reports whether the head moved since the branch's events were
// last set: the events of Branch must then be given to SetBranch.
func (h *History) Stale() bool { return h.stale }

// SetBranch replaces the active branch's events with evs: the events of
// Branch, in order. Events outside the view are dropped, so the caller may
// leave them out.
func (h *History) SetBranch(evs []events.Event) {
	out := make([]events.Event, 0, len(evs))
	for _, ev := range evs {
		if InView(ev) {
			out = append(out, ev)
		}
	}
	h.events, h.pairs, h.stale = out, nil, false
}

// Head returns the event the next one will follow (leaf_event_id), or ""
// for the empty tree.
func (h *History) Head() string { return h.head }

// Branch returns the ids on the path from the root to the head, root
// first. An event outside the view, such as a pause, is on it too.
func (h *History) Branch() []string {
	var ids []string
	seen := map[string]bool{}
	for id := h.head; id != "" && !seen[id]; id = h.parent[id] {
		seen[id] = true
		ids = append(ids, id)
	}
	slices.Reverse(ids)
	return ids
}

// Events returns the active branch's events in the view, in log order.
// The caller must not change them.
func (h *History) Events() []events.Event {
	return h.events[:len(h.events):len(h.events)]
}

// NavigateEvent returns the state update that moves the head to eventID,
// or to the empty tree when eventID is nil. Logging it and adding it to the
// history navigates.
func NavigateEvent(eventID *string) *events.ConversationStateUpdateEvent {
	var value any
	if eventID != nil {
		value = *eventID
	}
	return &events.ConversationStateUpdateEvent{Key: LeafKey, Value: strictjson.MustMarshal(value)}
}

// InView reports whether an event is part of what the LLM sees.
func InView(ev events.Event) bool {
	switch ev.(type) {
	case *events.MessageEvent, *events.ActionEvent, *events.ObservationEvent, *events.AgentErrorEvent,
		*events.UserRejectObservation, *events.Condensation, *events.CondensationRequest:
		return true
	}
	return false
}

// FinalResponse is the message of the branch's last finish action, else
// the text of its last agent message, else "".
func (h *History) FinalResponse() string {
	for i := len(h.events) - 1; i >= 0; i-- {
		switch e := h.events[i].(type) {
		case *events.ActionEvent:
			if f, ok := e.Action.(*events.FinishAction); ok {
				return f.Message
			}
		case *events.MessageEvent:
			if e.Source == events.SourceAgent {
				return e.LLMMessage.Text()
			}
		}
	}
	return ""
}
