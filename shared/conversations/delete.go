package conversations

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
)

// Delete deletes conversation c (read by Get) and its sub-conversations,
// which go first. Each is deleted on the agent server (or marked for
// deletion there, by a tombstone on its sandbox, when the sandbox is
// paused), with its record, events, start tasks and queued messages; its
// slot is released, and a sandbox left without conversations is removed
// too. A conversation or sandbox already gone is not an error; a store
// failure stops the cascade and is returned (running Delete again finishes
// it).
func (s *Service) Delete(ctx context.Context, c acs.Conversation) error {
	var subs []acs.Conversation
	opts := acs.ListOptions{Limit: 100}
	for {
		page, err := s.Store.SearchConversations(ctx, c.OwnerID, acs.ConversationFilter{IncludeSubConversations: true}, opts)
		if err != nil {
			return err
		}
		for _, x := range page.Items {
			if x.ParentConversationID != nil && *x.ParentConversationID == c.ID {
				subs = append(subs, x)
			}
		}
		if page.Next == "" {
			break
		}
		opts.PageToken = page.Next
	}
	for _, x := range append(subs, c) {
		if err := s.remove(ctx, x); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) remove(ctx context.Context, c acs.Conversation) error {
	sb, err := s.Store.GetSandbox(ctx, c.SandboxID)
	hasSandbox := err == nil
	if err != nil && !errors.Is(err, acs.ErrNotFound) {
		return err
	}
	if hasSandbox && !sb.Status.ReadOnly() {
		// A tombstone first: reports the agent server still sends about the
		// conversation are dropped, and it is deleted there (again) the
		// next time the sandbox is ready, should this call miss it.
		if _, err := s.Store.UpdateSandbox(ctx, sb.ID, func(x *acs.Sandbox) error {
			if !x.IsTombstone(c.ID) {
				x.Tombstones = append(x.Tombstones, c.ID)
			}
			return nil
		}); err != nil && !errors.Is(err, acs.ErrNotFound) {
			return err
		}
		if _, st := s.Life.Refresh(ctx, sb); st.Status == acs.SandboxRunning {
			if err := client.NewServiceAgent(st.AgentURL, st.SessionKey).DeleteConversation(ctx, acs.Dashed(c.ID)); err != nil {
				slog.Warn("api: delete on the agent server", "conversation", c.ID, "error", err)
			}
		}
	}
	if c.ParentConversationID != nil {
		if _, err := s.Store.UpdateConversation(ctx, *c.ParentConversationID, func(p *acs.Conversation) error {
			p.SubConversationIDs = slices.DeleteFunc(p.SubConversationIDs, func(id string) bool { return id == c.ID })
			return nil
		}); err != nil && !errors.Is(err, acs.ErrNotFound) {
			return err
		}
	}
	if err := s.Store.DeleteConversation(ctx, c.ID); err != nil && !errors.Is(err, acs.ErrNotFound) {
		return err
	}
	if err := s.Store.DeleteEvents(ctx, c.ID); err != nil {
		return err
	}
	for {
		tasks, err := s.Store.SearchStartTasks(ctx, c.OwnerID, acs.StartTaskFilter{ConversationID: c.ID}, "", acs.ListOptions{Limit: 100})
		if err != nil {
			return err
		}
		for _, t := range tasks.Items {
			if err := s.Store.DeleteStartTask(ctx, t.ID); err != nil && !errors.Is(err, acs.ErrNotFound) {
				return err
			}
			s.dropPending(ctx, "task-"+t.ID)
		}
		if tasks.Next == "" {
			break
		}
	}
	s.dropPending(ctx, c.ID)
	if !hasSandbox {
		return nil
	}
	sb, err = s.Store.UpdateSandbox(ctx, sb.ID, func(x *acs.Sandbox) error { x.Release(c.ID); return nil })
	if err != nil {
		if errors.Is(err, acs.ErrNotFound) {
			return nil
		}
		return err
	}
	if sb.ConversationCount() == 0 {
		// The sandbox's last conversation: the sandbox goes too.
		if err := s.Life.Remove(ctx, sb.ID); err != nil {
			return err
		}
	}
	return nil
}

// dropPending deletes the messages queued under key (best effort).
func (s *Service) dropPending(ctx context.Context, key string) {
	msgs, err := s.Store.ListPendingMessages(ctx, key)
	if err != nil {
		return
	}
	for _, m := range msgs {
		_ = s.Store.DeletePendingMessage(ctx, key, m.ID)
	}
}
