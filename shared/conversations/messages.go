package conversations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/v1wire"
)

// AgentError is a failed call to a conversation's agent server (its answer,
// an *client.HTTPError, or no answer); Err is the client's error.
type AgentError struct{ Err error }

func (e *AgentError) Error() string { return "agent server: " + e.Err.Error() }
func (e *AgentError) Unwrap() error { return e.Err }

// ErrQueueFull is AddPending's answer when acs.MaxPendingMessages messages
// are already queued for the conversation: ECAPACITY (so errors.Is with
// acs.ErrCapacity holds), worth retrying after 10 seconds.
var ErrQueueFull = &acs.Error{Code: acs.ECAPACITY, RetryAfter: 10 * time.Second,
	Message: fmt.Sprintf("%d messages are already queued for this conversation; wait until it has started", acs.MaxPendingMessages)}

// secretsInMessage refuses message content holding the value of one of the
// conversation's secrets (the spec's rule 4): a strictjson.Errors error.
func (s *Service) secretsInMessage(ctx context.Context, c acs.Conversation, content []events.Content) error {
	secrets, err := s.Secrets(ctx, c)
	if err != nil {
		return nil
	}
	if errs := v1wire.ContentLeaks(acs.MessageText, content, secrets, "body", "content"); len(errs) > 0 {
		return errs
	}
	return nil
}

// Live makes the conversation's sandbox ready (resuming a paused one first)
// and returns a client for its agent server. Read-only sandboxes are
// refused: MISSING (or no sandbox) acs.ErrGone, ERROR acs.ErrSandboxFailed;
// not ready in time acs.ErrConflict; the running cap acs.ErrCapacity.
func (s *Service) Live(ctx context.Context, c acs.Conversation) (acs.Sandbox, *client.Agent, error) {
	sb, err := s.Store.GetSandbox(ctx, c.SandboxID)
	if errors.Is(err, acs.ErrNotFound) {
		return sb, nil, acs.ErrArchived
	}
	if err != nil {
		return sb, nil, err
	}
	sb, client, err := s.Life.Ready(ctx, sb, s.ResumeWait)
	if err == nil {
		s.Life.Touch(ctx, sb, false)
	}
	return sb, client, err
}

// SendMessage sends a user message to conversation c (read by Get),
// resuming its sandbox first. Content holding one of the conversation's
// secret values is refused with a strictjson.Errors error; Live's errors
// are returned as they are; a failed delivery is an *AgentError.
func (s *Service) SendMessage(ctx context.Context, c acs.Conversation, content []events.Content, run bool) error {
	if err := s.secretsInMessage(ctx, c, content); err != nil {
		return err
	}
	sb, client, err := s.Live(ctx, c)
	if err != nil {
		return err
	}
	if err := sandboxes.DeliverMessage(ctx, s.Store, client, acs.Dashed(c.ID), &agentwire.SendMessageRequest{Role: events.RoleUser, Content: content, Run: run}); err != nil {
		return &AgentError{err}
	}
	s.Life.Touch(ctx, sb, true)
	return nil
}

// Pending is where AddPending put a message.
type Pending struct {
	ID string
	// Queued is false when the message was delivered at once.
	Queued   bool
	Position int
}

// AddPending takes a message for the conversation rawID of the user, or for
// "task-<start task id>" while the conversation starts. A message for a
// conversation that is ready is delivered at once (Queued false);
// otherwise it is queued (at most acs.MaxPendingMessages per conversation,
// ErrQueueFull beyond) and delivered in order when the start task reaches
// READY or the sandbox is next ready. Errors: acs.ErrNotFound (no such
// conversation or task of the user), acs.ErrConflict (the start failed),
// strictjson.Errors (content holds a secret's value), Live's errors for a
// read-only sandbox or the running cap, *AgentError for a failed delivery.
func (s *Service) AddPending(ctx context.Context, user acs.User, rawID string, content []events.Content) (Pending, error) {
	key, convID := "", ""
	if tid, ok := strings.CutPrefix(rawID, "task-"); ok {
		id, err := acs.NormalizeID(tid)
		var t acs.StartTask
		if err == nil {
			t, err = s.Store.GetStartTask(ctx, id)
		}
		if err != nil || t.OwnerID != user.ID {
			return Pending{}, acs.Errorf(acs.ENOTFOUND, "Start task not found: %s", tid)
		}
		if err := s.secretsInMessage(ctx, acs.Conversation{OwnerID: t.OwnerID, StartTaskID: t.ID}, content); err != nil {
			return Pending{}, err
		}
		switch t.Status {
		case acs.TaskError:
			detail := ""
			if t.Detail != nil {
				detail = *t.Detail
			}
			return Pending{}, acs.Errorf(acs.ECONFLICT, "The conversation failed to start: %s", detail)
		case acs.TaskReady:
			convID = t.ConversationID
		default:
			key = "task-" + t.ID
		}
	} else {
		c, err := s.Get(ctx, user.ID, rawID)
		if err != nil {
			return Pending{}, err
		}
		convID = c.ID
	}
	if convID != "" {
		c, err := s.Store.GetConversation(ctx, convID)
		if err != nil {
			return Pending{}, err
		}
		if err := s.secretsInMessage(ctx, c, content); err != nil {
			return Pending{}, err
		}
		sb, client, err := s.Live(ctx, c)
		if err == nil {
			if err := sandboxes.DeliverMessage(ctx, s.Store, client, acs.Dashed(c.ID), &agentwire.SendMessageRequest{Role: events.RoleUser, Content: content, Run: true}); err != nil {
				return Pending{}, &AgentError{err}
			}
			s.Life.Touch(ctx, sb, true)
			return Pending{ID: acs.NewID(), Queued: false, Position: 0}, nil
		}
		if !errors.Is(err, acs.ErrConflict) {
			// Read-only (410/503), the running cap (429) or a failure: the
			// same answers as send-message.
			return Pending{}, err
		}
		// Not ready in time: queue it; it is delivered the next time the
		// sandbox is ready.
		key = c.ID
		if _, err := s.Store.UpdateSandbox(ctx, c.SandboxID, func(x *acs.Sandbox) error { x.PendingFlush = true; return nil }); err != nil {
			return Pending{}, err
		}
	}
	raw, err := strictjson.Marshal(content)
	if err != nil {
		return Pending{}, err
	}
	m := acs.PendingMessage{ID: acs.NewID(), OwnerID: user.ID, Key: key, Content: raw, CreatedAt: s.now()}
	pos, err := s.Store.AddPendingMessage(ctx, m, acs.MaxPendingMessages)
	if errors.Is(err, acs.ErrCapacity) {
		return Pending{}, ErrQueueFull
	}
	if err != nil {
		return Pending{}, err
	}
	return Pending{ID: m.ID, Queued: true, Position: pos}, nil
}
