package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
)

// Service accepts start requests.
type Service struct {
	Store acs.Store
	Queue acs.Queue
	Now   func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// MaskedRequest is req as shown in the task: secret values replaced with
// "**********".
func MaskedRequest(req StartRequest) []byte {
	if len(req.Secrets) > 0 {
		masked := make(map[string]string, len(req.Secrets))
		for k := range req.Secrets {
			masked[k] = "**********"
		}
		req.Secrets = masked
	}
	return strictjson.MustMarshal(&req)
}

// Submit stores a start task for user and queues its first step. The task is
// returned in status WORKING. A conversation_id that is already in use is
// ErrConflict; a queue failure marks the task ERROR and returns
// ErrUnavailable (the caller may retry).
func (s *Service) Submit(ctx context.Context, user acs.User, req StartRequest) (acs.StartTask, error) {
	if req.AgentType == "" {
		req.AgentType = "default"
	}
	// Requests built in code get the same validation as decoded ones: the
	// worker decodes the stored request strictly.
	if err := strictjson.Unmarshal(strictjson.MustMarshal(&req), &StartRequest{}); err != nil {
		return acs.StartTask{}, fmt.Errorf("start request: %v: %w", err, acs.ErrInvalid)
	}
	convID := acs.NewID()
	if req.ConversationID != nil {
		id, err := acs.NormalizeID(*req.ConversationID)
		if err != nil {
			return acs.StartTask{}, err
		}
		if _, err := s.Store.GetConversation(ctx, id); err == nil {
			return acs.StartTask{}, fmt.Errorf("conversation %s already exists: %w", id, acs.ErrConflict)
		} else if !errors.Is(err, acs.ErrNotFound) {
			return acs.StartTask{}, err
		}
		convID = id
	}
	now := s.now()
	t := acs.StartTask{ID: acs.NewID(), OwnerID: user.ID, Status: acs.TaskWorking, ConversationID: convID,
		Request: MaskedRequest(req), Secrets: req.Secrets, CreatedAt: now, UpdatedAt: now,
		Steps: []acs.StepTiming{{Status: acs.TaskWorking, StartedAt: now}}}
	if err := s.Store.CreateStartTask(ctx, t); err != nil {
		return acs.StartTask{}, fmt.Errorf("store start task: %w", err)
	}
	if err := s.Queue.Send(ctx, acs.Message{TaskID: t.ID}, 0); err != nil {
		slog.Error("startflow: enqueue failed", "task", t.ID, "error", err)
		_, _ = s.Store.UpdateStartTask(ctx, t.ID, func(tk *acs.StartTask) error {
			tk.Fail("The start could not be queued; please retry.", s.now())
			return nil
		})
		return acs.StartTask{}, fmt.Errorf("queue start task: %w", acs.ErrUnavailable)
	}
	return t, nil
}
