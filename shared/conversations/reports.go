package conversations

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
)

// What sandboxes report (the agent server's webhooks): events, and
// conversation infos. A report counts no later than its receipt
// (acs.ReportTime); status and agent-state reports older than the last applied
// do not undo it; a reported title does not undo a later rename by the
// user.

// ErrTombstone is the answer for a report on a conversation the user
// deleted: the caller acknowledges it and drops it.
var ErrTombstone = errors.New("conversation deleted")

// ErrStarting is the answer for a report on a conversation a start is
// still creating (its record is not stored yet): the sandbox retries the
// report later (it is an acs.ErrConflict, 409).
var ErrStarting = acs.Errorf(acs.ECONFLICT, "The conversation is still starting; retry the report shortly")

// MaxTags bounds the tags a report may set (and the record keeps).
const MaxTags = 100

// SandboxConversation loads (or, for a conversation created directly on
// the agent server, creates) the record of a conversation sandbox sb
// reports on. A malformed id is acs.ErrNotFound, a conversation of another
// sandbox acs.ErrForbidden, one deleted by the user ErrTombstone, one a
// start is still creating ErrStarting.
func (s *Service) SandboxConversation(ctx context.Context, sb acs.Sandbox, rawID string) (acs.Conversation, error) {
	id, err := acs.NormalizeID(rawID)
	if err != nil {
		return acs.Conversation{}, acs.Errorf(acs.ENOTFOUND, "conversation id %q", rawID)
	}
	if sb.IsTombstone(id) {
		return acs.Conversation{}, ErrTombstone
	}
	c, err := s.Store.GetConversation(ctx, id)
	if err == nil {
		if c.SandboxID != sb.ID {
			return acs.Conversation{}, acs.Errorf(acs.EFORBIDDEN, "conversation %s does not belong to this sandbox", id)
		}
		return c, nil
	}
	if !errors.Is(err, acs.ErrNotFound) {
		return acs.Conversation{}, err
	}
	if sb.HasSlot(id) {
		// A start placed it here and has not stored its record yet (it
		// creates the conversation on the agent server meanwhile): the
		// report waits for that record rather than make another.
		if starting, err := s.startingHere(ctx, sb, id); err != nil || starting {
			return acs.Conversation{}, cmp.Or[error](err, ErrStarting)
		}
	}
	now := s.now()
	title := acs.FallbackTitle(id)
	c = acs.Conversation{ID: id, OwnerID: sb.OwnerID, SandboxID: sb.ID, Title: &title, WorkingDir: sb.WorkingDir,
		CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateConversation(ctx, c); err != nil && !errors.Is(err, acs.ErrConflict) {
		return acs.Conversation{}, err
	}
	if _, err := s.Store.UpdateSandbox(ctx, sb.ID, func(x *acs.Sandbox) error {
		if !x.HasSlot(id) {
			x.Slots = append(x.Slots, id) // already running there: no cap
		}
		return nil
	}); err != nil {
		return acs.Conversation{}, err
	}
	return s.Store.GetConversation(ctx, id)
}

// startingHere reports whether an unfinished start task of sb's owner is
// starting conversation id (on sb: the caller found id's slot there).
func (s *Service) startingHere(ctx context.Context, sb acs.Sandbox, id string) (bool, error) {
	page, err := s.Store.SearchStartTasks(ctx, sb.OwnerID, acs.StartTaskFilter{ConversationID: id}, acs.SortCreatedAtDesc, acs.ListOptions{Limit: 10})
	if err != nil {
		return false, fmt.Errorf("find the start of conversation %s: %w", id, err)
	}
	for _, t := range page.Items {
		if !t.Status.Done() {
			return true, nil
		}
	}
	return false, nil
}

// ReportEvents applies a batch of events sandbox sb reports on conversation
// rawID, received at received: each is stored once (by id), state updates
// keep the conversation's execution status and metrics current, a user
// message counts as a use of the sandbox. A user message the control plane
// did not deliver is stored as the environment's (UnverifiedSender). It
// returns SandboxConversation's errors (ErrTombstone: drop the batch).
func (s *Service) ReportEvents(ctx context.Context, sb acs.Sandbox, rawID string, evs []events.Event, received time.Time) error {
	var stored []acs.StoredEvent
	var states []*events.ConversationStateUpdateEvent
	var claims []userMessage
	used := false
	for _, ev := range evs {
		b := ev.EventBase()
		stored = append(stored, acs.StoredEvent{ID: b.ID, Kind: ev.Kind(), Source: string(b.Source), Timestamp: b.Timestamp.Time,
			Text: events.SearchText(ev), JSON: events.MustEncode(ev)})
		if su, ok := ev.(*events.ConversationStateUpdateEvent); ok {
			states = append(states, su)
		}
		// A user message sent straight to the agent server reaches the
		// control plane only here: it is a use of the sandbox (placement's
		// LEAST_RECENTLY_USED), like send-message.
		if m, ok := ev.(*events.MessageEvent); ok && b.Source == events.SourceUser {
			used = true
			claims = append(claims, userMessage{index: len(stored) - 1, event: m, digest: sandboxes.MessageDigest(m.LLMMessage.Content)})
		}
	}
	c, err := s.SandboxConversation(ctx, sb, rawID)
	if err != nil {
		return err
	}
	s.Life.Touch(ctx, sb, used)
	if len(claims) > 0 {
		if err := s.verifyUserMessages(ctx, c, claims, stored); err != nil {
			return err
		}
	}
	if _, err := s.Store.PutEvents(ctx, c.ID, stored); err != nil {
		return err
	}
	title, err := s.firstMessageTitle(ctx, c, claims)
	if err != nil {
		return err
	}
	_, err = s.Store.UpdateConversation(ctx, c.ID, func(conv *acs.Conversation) error {
		for _, su := range states {
			ApplyState(conv, su.Key, su.Value, acs.ReportTime(su.Timestamp.Time, received))
		}
		conv.TitleByFirstMessage(title)
		conv.UpdatedAt = s.now()
		return nil
	})
	return err
}

// firstMessageTitle is the title an untitled conversation c (one started
// without a message, whose first message went straight to the agent
// server) takes from the first user message of a batch
// (acs.TitleFromMessage); "" when c has a title, the batch no user message
// with text, or the title would hold the value of one of c's secrets.
func (s *Service) firstMessageTitle(ctx context.Context, c acs.Conversation, claims []userMessage) (string, error) {
	if !c.Untitled() {
		return "", nil
	}
	for _, u := range claims {
		var parts []string
		for _, item := range u.event.LLMMessage.Content {
			if tc, ok := item.(*events.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		title := acs.TitleFromMessage(strings.Join(parts, "\n"))
		if title == "" {
			continue
		}
		secrets, err := s.Secrets(ctx, c)
		if err != nil {
			return "", err
		}
		if len(acs.SecretsIn(title, secrets)) > 0 {
			return "", nil
		}
		return title, nil
	}
	return "", nil
}

// UnverifiedSender marks (in "sender") a MessageEvent a sandbox reported
// with source "user" that matches no message the control plane delivered:
// it is stored with source "environment" (see verifyUserMessages).
const UnverifiedSender = "unverified-user"

// userMessage is a MessageEvent with source "user" in a webhook batch.
type userMessage struct {
	index  int // in the batch's stored events
	event  *events.MessageEvent
	digest string
}

// verifyUserMessages keeps a user MessageEvent as the user's only when it
// matches a message the control plane delivered to the conversation
// (acs.Conversation.ClaimDelivery). Any other one (a message a client sent
// straight to the agent server, or one a sandbox made up) is stored with
// nothing dropped but with source "environment" and sender
// UnverifiedSender, so that a sandbox cannot put words in the user's mouth
// in the transcript the control plane keeps. c is the conversation as read
// after the batch arrived: the claims are written only when they take a
// delivery from it.
func (s *Service) verifyUserMessages(ctx context.Context, c acs.Conversation, claims []userMessage, stored []acs.StoredEvent) error {
	probe := c
	probe.Delivered = slices.Clone(c.Delivered)
	verified := claimAll(&probe, claims)
	if !slices.Equal(probe.Delivered, c.Delivered) {
		if _, err := s.Store.UpdateConversation(ctx, c.ID, func(conv *acs.Conversation) error {
			verified = claimAll(conv, claims)
			return nil
		}); err != nil {
			return err
		}
	}
	var unverified []string
	for i, u := range claims {
		if verified[i] {
			continue
		}
		m := *u.event
		sender := UnverifiedSender
		m.Source, m.Sender = events.SourceEnvironment, &sender
		stored[u.index].Source, stored[u.index].JSON = string(m.Source), events.MustEncode(&m)
		unverified = append(unverified, string(m.ID))
	}
	if len(unverified) > 0 {
		slog.Info("api: user messages the control plane did not deliver are stored as unverified",
			"conversation", c.ID, "events", unverified)
	}
	return nil
}

// claimAll claims the delivery of each message of claims on conv, in
// order, and reports which were verified.
func claimAll(conv *acs.Conversation, claims []userMessage) []bool {
	verified := make([]bool, len(claims))
	for i, u := range claims {
		verified[i] = conv.ClaimDelivery(u.digest, u.event.ID)
	}
	return verified
}

// ValidStatus reports whether s is an execution status of the agent server.
func ValidStatus(s string) bool {
	return slices.Contains(agentwire.ExecutionStatus("").EnumValues(), s)
}

// ApplyState applies one state update (a ConversationStateUpdateEvent's key
// and value) reported at ts. Values that are not valid (an unknown
// execution status, "deleting") are ignored, and so is a status, stats or
// agent state older than the one last applied.
func ApplyState(c *acs.Conversation, key string, value json.RawMessage, ts time.Time) {
	switch key {
	case "execution_status":
		var s string
		if json.Unmarshal(value, &s) == nil && ValidStatus(s) && !ts.Before(c.ExecutionStatusAt) && s != string(agentwire.StatusDeleting) {
			c.ExecutionStatus, c.ExecutionStatusAt = s, ts
		}
	case "stats":
		var st agentwire.Stats
		// A conversation info captured before a stats event but
		// delivered after it must not undo it.
		if json.Unmarshal(value, &st) == nil && st.UsageToMetrics != nil && !ts.Before(c.MetricsAt) {
			m := st.Combined()
			c.Metrics, c.MetricsAt = strictjson.MustMarshal(&m), ts
		}
	case "agent_state":
		var as map[string]string
		// A report older than the last one applied (a conversation info
		// captured before an agent_state event but delivered after it)
		// must not undo it.
		if json.Unmarshal(value, &as) == nil && !ts.Before(c.AgentStateAt) {
			c.AgentStateAt = ts
			c.RateLimitedUntil = nil
			if v, ok := as["llm_rate_limited_until"]; ok {
				if t, err := time.Parse(time.RFC3339, v); err == nil {
					c.RateLimitedUntil = &t
				}
			}
		}
	case "full_state":
		var info struct {
			ExecutionStatus string          `json:"execution_status"`
			Stats           agentwire.Stats `json:"stats"`
			AgentState      json.RawMessage `json:"agent_state"`
		}
		if json.Unmarshal(value, &info) == nil {
			raw, _ := json.Marshal(info.ExecutionStatus)
			ApplyState(c, "execution_status", raw, ts)
			if info.Stats.UsageToMetrics != nil {
				raw, _ := json.Marshal(info.Stats)
				ApplyState(c, "stats", raw, ts)
			}
			if len(info.AgentState) > 0 {
				ApplyState(c, "agent_state", info.AgentState, ts)
			}
		}
	}
}

// Report is the part of an agent server's ConversationInfo the control
// plane keeps, validated.
type Report struct {
	ID              string
	ExecutionStatus string
	Stats           *agentwire.Stats
	Title           *string
	Tags            map[string]string
	// UpdatedAt is when the agent server made the report (nil: unknown).
	UpdatedAt  *time.Time
	AgentState json.RawMessage
}

// Apply applies the report to c as of at: the execution status, metrics,
// agent state (each unless older than what c has), a non-blank title
// (acs.Conversation.ApplyReportedTitle) and the tags (new keys only while
// c has fewer than MaxTags).
func (info *Report) Apply(c *acs.Conversation, at time.Time) {
	raw, _ := json.Marshal(info.ExecutionStatus)
	ApplyState(c, "execution_status", raw, at)
	if info.Stats != nil && info.Stats.UsageToMetrics != nil {
		raw, _ := json.Marshal(info.Stats)
		ApplyState(c, "stats", raw, at)
	}
	if info.Title != nil && strings.TrimSpace(*info.Title) != "" {
		c.ApplyReportedTitle(*info.Title, at)
	}
	if len(info.AgentState) > 0 {
		ApplyState(c, "agent_state", info.AgentState, at)
	}
	for k, v := range info.Tags {
		if c.Tags == nil {
			c.Tags = map[string]string{}
		}
		if _, ok := c.Tags[k]; ok || len(c.Tags) < MaxTags {
			c.Tags[k] = v
		}
	}
}

// ReportConversation applies a conversation info sandbox sb reports,
// received at received. A reported title is stored with the values of c's
// secrets masked (maskTitle). A report of a conversation being deleted is
// dropped; otherwise it returns SandboxConversation's errors (ErrTombstone:
// drop the report).
func (s *Service) ReportConversation(ctx context.Context, sb acs.Sandbox, info Report, received time.Time) error {
	if info.ExecutionStatus == string(agentwire.StatusDeleting) {
		return nil
	}
	c, err := s.SandboxConversation(ctx, sb, info.ID)
	if err != nil {
		return err
	}
	at := received
	if info.UpdatedAt != nil {
		at = acs.ReportTime(*info.UpdatedAt, received)
	}
	if err := s.maskTitle(ctx, c, &info); err != nil {
		return err
	}
	_, err = s.Store.UpdateConversation(ctx, c.ID, func(conv *acs.Conversation) error {
		info.Apply(conv, at)
		conv.UpdatedAt = s.now()
		return nil
	})
	return err
}

// maskTitle replaces in the title of info the value of every secret of c
// (Secrets) by acs.SecretHidden: the control plane does not trust a
// sandbox to keep them out. A title c already has is left as it is.
func (s *Service) maskTitle(ctx context.Context, c acs.Conversation, info *Report) error {
	if info.Title == nil || (c.Title != nil && *c.Title == *info.Title) {
		return nil
	}
	secrets, err := s.Secrets(ctx, c)
	if err != nil {
		return fmt.Errorf("mask the title of %s: %w", c.ID, err)
	}
	if masked := acs.MaskSecrets(*info.Title, secrets); masked != *info.Title {
		slog.Info("api: a reported title held a secret's value; it is stored masked", "conversation", c.ID)
		info.Title = &masked
	}
	return nil
}
