package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agent/history"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/eventlog"
)

// The conversation tree is c.hist (see package history): it is derived from
// the append-only log, and Navigate logs each move of the head, so the
// log's durability is the tree's. The history keeps only the active
// branch's events; after a navigation they are read from the log.

// ErrEventNotFound is Navigate's error for an event that is not in the
// conversation's log.
var ErrEventNotFound = fmt.Errorf("navigate: %w", eventlog.ErrNotFound)

// loadBranch gives c.hist the events of its active branch, reading
// them from byID when given, else from the log.
func (c *Conversation) loadBranch(byID map[string]events.Event) error {
	ids := c.hist.Branch()
	evs := make([]events.Event, 0, len(ids))
	for _, id := range ids {
		ev, ok := byID[id]
		if byID == nil {
			var err error
			if ev, err = c.log.GetEvent(id); err != nil {
				return fmt.Errorf("rebuild the conversation's branch: %w", err)
			}
			ok = true
		}
		if ok {
			evs = append(evs, ev)
		}
	}
	c.hist.SetBranch(evs)
	return nil
}

// Head returns the conversation's head (leaf_event_id): the event the next
// one will follow, or "" for the empty tree.
func (c *Conversation) Head() string {
	return call(c, func() string { return c.hist.Head() })
}

// Navigate moves the conversation's head to the event eventID (nil: the
// empty tree). Later events branch from there and the LLM's next context is
// the path from the root to that event; every event stays in the log. The
// move is logged (a leaf_event_id state update) so it survives a restart.
// Errors: ErrEventNotFound for an event not in the log, ErrAlreadyRunning
// while a run or a goal loop is in progress, ErrClosed.
func (c *Conversation) Navigate(ctx context.Context, eventID *string) error {
	return call(c, func() error {
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
		if err := c.emit(ctx, history.NavigateEvent(eventID)); err != nil {
			return err
		}
		if s := c.st.ExecutionStatus; s == agentwire.StatusFinished || s == agentwire.StatusStuck {
			// The branch the status described is no longer the active one.
			if err := c.setStatus(ctx, agentwire.StatusIdle); err != nil {
				return err
			}
		}
		c.markChanged()
		return nil
	})
}

// IsEventNotFound reports whether err is Navigate's unknown-event error.
func IsEventNotFound(err error) bool { return errors.Is(err, ErrEventNotFound) }
