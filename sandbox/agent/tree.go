package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/eventlog"
	"github.com/acs-project/acs/sandbox/wire"
)

// The conversation tree. Events carry only the spec's common fields (no
// parent_id), so the tree is derived from the append-only log instead of
// being stored in the events: every event's parent is the conversation's
// head when it was appended, and appending an event (other than a
// ConversationStateUpdateEvent, which is state bookkeeping, not a turn)
// makes it the head. Navigate records a move of the head as a
// ConversationStateUpdateEvent with key leaf_event_id (value: the event id,
// or null for the empty tree), so replaying the log on load rebuilds the
// same tree and head; the log's durability is the tree's.
//
// The LLM's history (c.history) is the events on the path from the root to
// the head, in log order, that the LLM sees (see inView).

// leafKey is the state key that records a move of the head.
const leafKey = "leaf_event_id"

// ErrEventNotFound is Navigate's error for an event that is not in the
// conversation's log.
var ErrEventNotFound = fmt.Errorf("navigate: %w", eventlog.ErrNotFound)

// treeAddLocked places ev (already in the log) in the tree. It reports
// whether ev moved the head somewhere other than the event just appended (a
// navigation), after which c.history must be rebuilt.
func (c *Conversation) treeAddLocked(ev events.Event) bool {
	id := ev.EventBase().ID
	su, isState := ev.(*events.ConversationStateUpdateEvent)
	if isState && su.Key == leafKey {
		var leaf *string
		if decodeJSON(su.Value, &leaf) == nil {
			c.head = ""
			if leaf != nil {
				c.head = *leaf
			}
		}
		return true
	}
	if c.parent == nil {
		c.parent = map[string]string{}
	}
	c.parent[id] = c.head
	if !isState {
		c.head = id
	}
	return false
}

// branchLocked returns the ids on the path from the root to the head,
// root first.
func (c *Conversation) branchLocked() []string {
	var ids []string
	seen := map[string]bool{}
	for id := c.head; id != "" && !seen[id]; id = c.parent[id] {
		seen[id] = true
		ids = append(ids, id)
	}
	slices.Reverse(ids)
	return ids
}

// rebuildHistoryLocked sets c.history to the LLM-visible events of the
// active branch, reading them from byID when given, else from the log.
func (c *Conversation) rebuildHistoryLocked(byID map[string]events.Event) error {
	h := []events.Event{}
	for _, id := range c.branchLocked() {
		ev, ok := byID[id]
		if byID == nil {
			var err error
			if ev, err = c.log.GetEvent(id); err != nil {
				return fmt.Errorf("rebuild the conversation's branch: %w", err)
			}
			ok = true
		}
		if ok && inView(ev) {
			h = append(h, ev)
		}
	}
	c.history, c.pairs = h, nil
	return nil
}

// Head returns the conversation's head (leaf_event_id): the event the next
// one will follow, or "" for the empty tree.
func (c *Conversation) Head() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head
}

// Navigate moves the conversation's head to the event eventID (nil: the
// empty tree). Later events branch from there and the LLM's next context is
// the path from the root to that event; every event stays in the log. The
// move is logged (a leaf_event_id state update) so it survives a restart.
// Errors: ErrEventNotFound for an event not in the log, ErrAlreadyRunning
// while a run or a goal loop is in progress, ErrClosed.
func (c *Conversation) Navigate(ctx context.Context, eventID *string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.running || c.goalRunning() {
		return ErrAlreadyRunning
	}
	if eventID != nil {
		if _, ok := c.log.Position(*eventID); !ok {
			return fmt.Errorf("event %s: %w", *eventID, ErrEventNotFound)
		}
	}
	var value any
	if eventID != nil {
		value = *eventID
	}
	if err := c.emitStateLocked(ctx, leafKey, value); err != nil {
		return err
	}
	if s := c.st.ExecutionStatus; s == wire.StatusFinished || s == wire.StatusStuck {
		// The branch the status described is no longer the active one.
		if err := c.setStatusLocked(ctx, wire.StatusIdle); err != nil {
			return err
		}
	}
	c.changed()
	return nil
}

// IsEventNotFound reports whether err is Navigate's unknown-event error.
func IsEventNotFound(err error) bool { return errors.Is(err, ErrEventNotFound) }
