// Package conversations is the conversation service: reading, searching and
// counting a user's conversations and their events, updating them (rename,
// repository, visibility), the delete cascade, sending messages and queuing
// pending ones, applying what sandboxes report (webhook events and
// conversation infos), and the download transcript. The V1 handlers in
// shared/api only decode a request, call one method and encode its answer.
package conversations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

// Service provides conversations over a store and the sandbox lifecycle.
type Service struct {
	Store Store
	// Sealer opens stored secrets (to refuse their values in messages and
	// titles).
	Sealer acs.Sealer
	// Life makes sandboxes ready, refreshes, touches and removes them.
	Life *sandboxes.Lifecycle
	// ResumeWait bounds how long a message waits for a paused sandbox to be
	// ready.
	ResumeWait time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Store is what the service keeps: conversations and their events, the
// sandboxes and start tasks they run on, the messages queued for them,
// and the owner's settings and secrets, whose values messages and titles
// must not carry.
type Store interface {
	acs.ConversationStore
	acs.EventStore
	acs.SandboxStore
	acs.StartTaskStore
	acs.PendingMessageStore
	acs.SettingsStore
	acs.SecretStore
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// Get returns the conversation rawID (any id form acs.NormalizeID takes) of
// the owner; another user's conversation, like a missing one or a malformed
// id, is acs.ErrNotFound ("Conversation not found: <id>").
func (s *Service) Get(ctx context.Context, ownerID, rawID string) (acs.Conversation, error) {
	id, err := acs.NormalizeID(rawID)
	if err != nil {
		return acs.Conversation{}, acs.Errorf(acs.ENOTFOUND, "Conversation not found: %s", rawID)
	}
	c, err := s.Store.GetConversation(ctx, id)
	if errors.Is(err, acs.ErrNotFound) || (err == nil && c.OwnerID != ownerID) {
		return acs.Conversation{}, acs.Errorf(acs.ENOTFOUND, "Conversation not found: %s", id)
	}
	return c, err
}

// Search lists the owner's conversations matching f, newest first; a page
// token this store did not issue wraps acs.ErrInvalid.
func (s *Service) Search(ctx context.Context, ownerID string, f acs.ConversationFilter, opts acs.ListOptions) (acs.Page[acs.Conversation], error) {
	return s.Store.SearchConversations(ctx, ownerID, f, opts)
}

// Count counts the owner's conversations matching f.
func (s *Service) Count(ctx context.Context, ownerID string, f acs.ConversationFilter) (int, error) {
	return s.Store.CountConversations(ctx, ownerID, f)
}

// Sandbox returns a sandbox record (the conversation views show its live
// status).
func (s *Service) Sandbox(ctx context.Context, id string) (acs.Sandbox, error) {
	return s.Store.GetSandbox(ctx, id)
}

// SearchEvents pages the events of conversation c (an id read by Get); a
// foreign page token wraps acs.ErrInvalid.
func (s *Service) SearchEvents(ctx context.Context, convID string, q acs.EventQuery) (acs.Page[[]byte], error) {
	return s.Store.SearchEvents(ctx, convID, q)
}

// CountEvents counts the conversation's events matching f.
func (s *Service) CountEvents(ctx context.Context, convID string, f acs.EventFilter) (int, error) {
	return s.Store.CountEvents(ctx, convID, f)
}

// GetEvents returns the conversation's events by id, nil for missing ones,
// in order.
func (s *Service) GetEvents(ctx context.Context, convID string, ids []string) ([][]byte, error) {
	return s.Store.GetEvents(ctx, convID, ids)
}

// Update applies u to conversation c (read by Get) and returns it as
// stored. A new title is the user's (acs.Conversation.RenameByUser) and is
// passed on to the agent server, best effort, when the sandbox is running.
// Invalid are the problems of the request's fields, found by its
// Validate: Update refuses them together with its own in one
// strictjson.Errors and changes nothing. Its own are an update that
// leaves a branch or provider without a repository, and a title holding
// the value of one of c's secrets.
func (s *Service) Update(ctx context.Context, c acs.Conversation, u acs.ConversationUpdate, invalid strictjson.Errors) (acs.Conversation, error) {
	if errs := append(invalid, needsRepository(c, u)...); len(errs) > 0 {
		return c, errs
	}
	if u.Title.Set {
		secrets, err := s.Secrets(ctx, c)
		if err != nil {
			return c, err
		}
		if errs := v1wire.TitleLeaks(*u.Title.Value, secrets); len(errs) > 0 {
			return c, errs
		}
	}
	c, err := s.Store.UpdateConversation(ctx, c.ID, func(conv *acs.Conversation) error {
		if u.Title.Set {
			// Reports the agent server made before it has this title no
			// longer rename the conversation.
			conv.RenameByUser(*u.Title.Value, s.now())
		}
		if u.SelectedRepository.Set {
			conv.SelectedRepository = u.SelectedRepository.Value
		}
		if u.SelectedBranch.Set {
			conv.SelectedBranch = u.SelectedBranch.Value
		}
		if u.GitProvider.Set {
			conv.GitProvider = u.GitProvider.Value
		}
		if u.Public.Set {
			conv.Public = u.Public.Value
		}
		conv.UpdatedAt = s.now()
		return nil
	})
	if err != nil {
		return c, err
	}
	if u.Title.Set {
		// Best effort: the agent server's title follows (if it is running).
		if sb, err := s.Store.GetSandbox(ctx, c.SandboxID); err == nil && sb.Status == acs.SandboxRunning {
			if _, st := s.Life.Refresh(ctx, sb); st.Status == acs.SandboxRunning {
				if err := client.NewServiceAgent(st.AgentURL, st.SessionKey).SetTitle(ctx, acs.Dashed(c.ID), *u.Title.Value); err != nil {
					slog.Warn("api: rename on the agent server", "conversation", c.ID, "error", err)
				}
			}
		}
	}
	return c, nil
}

// needsRepository refuses an update that leaves c with a branch or a
// provider but no repository, as a start request is refused.
func needsRepository(c acs.Conversation, u acs.ConversationUpdate) strictjson.Errors {
	repo, branch, provider := c.SelectedRepository != nil, c.SelectedBranch != nil, c.GitProvider != nil
	if u.SelectedRepository.Set {
		repo = u.SelectedRepository.Value != nil
	}
	if u.SelectedBranch.Set {
		branch = u.SelectedBranch.Value != nil
	}
	if u.GitProvider.Set {
		provider = u.GitProvider.Value != nil
	}
	if repo || (!branch && !provider) {
		return nil
	}
	if u.SelectedRepository.Set {
		return strictjson.Errors{{Loc: []any{"body", "selected_repository"}, Type: "value_error",
			Msg: "clearing selected_repository needs selected_branch and git_provider cleared too"}}
	}
	return strictjson.Errors{{Loc: []any{"body", "selected_branch"}, Type: "value_error",
		Msg: "selected_branch and git_provider need selected_repository"}}
}

// Secrets are the secrets of c: its owner's stored secrets and its start
// request's, which win.
func (s *Service) Secrets(ctx context.Context, c acs.Conversation) (map[string]string, error) {
	sealed := map[string]string{}
	if c.StartTaskID != "" {
		if t, err := s.Store.GetStartTask(ctx, c.StartTaskID); err == nil {
			sealed = t.SealedSecrets
		}
	}
	return startflow.MergeSecrets(ctx, s.Store, s.Sealer, c.OwnerID, sealed)
}

// Transcript calls each for every stored event of conversation convID, in
// order. The first page is read before begin is called, so an error
// before begin (started false) means nothing was produced; an error after
// it leaves a partial transcript.
func (s *Service) Transcript(ctx context.Context, convID string, begin func(), each func(ev []byte) error) (started bool, err error) {
	page, err := s.Store.SearchEvents(ctx, convID, acs.EventQuery{Limit: 100})
	if err != nil {
		return false, err
	}
	begin()
	for {
		for _, ev := range page.Items {
			if err := each(ev); err != nil {
				return true, err
			}
		}
		if page.Next == "" {
			return true, nil
		}
		page, err = s.Store.SearchEvents(ctx, convID, acs.EventQuery{Limit: 100, PageToken: page.Next})
		if err != nil {
			return true, fmt.Errorf("download events of %s: %w", convID, err)
		}
	}
}
