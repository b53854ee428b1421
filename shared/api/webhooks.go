package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/startflow"
)

// maxEventIDLen bounds event ids (the agent server's are UUIDs).
const maxEventIDLen = 256

// errTombstone marks a report on a deleted conversation (acknowledged and
// dropped).
var errTombstone = errors.New("conversation deleted")

// sandboxConversation loads (or, for a conversation created directly on the
// agent server, creates) the record of a conversation a sandbox reports on.
// A conversation of another sandbox is ErrForbidden; one deleted by the user
// is errTombstone.
func (a *API) sandboxConversation(r *http.Request, sb acs.Sandbox, rawID string) (acs.Conversation, error) {
	id, err := acs.NormalizeID(rawID)
	if err != nil {
		return acs.Conversation{}, acs.Errorf(acs.ENOTFOUND, "conversation id %q", rawID)
	}
	if sb.IsTombstone(id) {
		return acs.Conversation{}, errTombstone
	}
	c, err := a.d.Store.GetConversation(r.Context(), id)
	if err == nil {
		if c.SandboxID != sb.ID {
			return acs.Conversation{}, acs.Errorf(acs.EFORBIDDEN, "conversation %s does not belong to this sandbox", id)
		}
		return c, nil
	}
	if !errors.Is(err, acs.ErrNotFound) {
		return acs.Conversation{}, err
	}
	now := a.now()
	title := "Conversation " + id[:5]
	c = acs.Conversation{ID: id, OwnerID: sb.OwnerID, SandboxID: sb.ID, Title: &title, WorkingDir: sb.WorkingDir,
		CreatedAt: now, UpdatedAt: now}
	if err := a.d.Store.CreateConversation(r.Context(), c); err != nil && !errors.Is(err, acs.ErrConflict) {
		return acs.Conversation{}, err
	}
	if _, err := a.d.Store.UpdateSandbox(r.Context(), sb.ID, func(s *acs.Sandbox) error {
		if !s.HasSlot(id) {
			s.Slots = append(s.Slots, id) // already running there: no cap
		}
		return nil
	}); err != nil {
		return acs.Conversation{}, err
	}
	return a.d.Store.GetConversation(r.Context(), id)
}

// webhookEvents: POST /api/v1/webhooks/events/{conversation_id}. The body is
// a JSON array of events; each is stored once (by id) and state updates keep
// the conversation's execution status and metrics current.
func (a *API) webhookEvents(w http.ResponseWriter, r *http.Request) {
	sb, _ := acs.SandboxFrom(r.Context())
	received := a.now()
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	root, err := strictjson.Parse(body)
	if err != nil || root.Kind != strictjson.Array {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body"}, Msg: "The body must be a JSON array of events", Type: "list_type"}})
		return
	}
	var stored []acs.StoredEvent
	var states []*events.ConversationStateUpdateEvent
	var claims []userMessage
	used := false
	for i, v := range root.Elems {
		ev, err := events.DecodeValue(v)
		if err != nil {
			var es strictjson.Errors
			if errors.As(err, &es) {
				httpjson.WriteValidation(w, strictjson.Prefix(es, "body", i))
				return
			}
			writeErr(w, err)
			return
		}
		b := ev.EventBase()
		if len(b.ID) > maxEventIDLen {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", i, "id"}, Type: "string_too_long",
				Msg: fmt.Sprintf("event ids are at most %d characters", maxEventIDLen)}})
			return
		}
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
			claims = append(claims, userMessage{index: len(stored) - 1, event: m, digest: startflow.MessageDigest(m.LLMMessage.Content)})
		}
	}
	c, err := a.sandboxConversation(r, sb, r.PathValue("conversation_id"))
	if errors.Is(err, errTombstone) {
		httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	a.life.Touch(r.Context(), sb, used)
	if len(claims) > 0 {
		if err := a.verifyUserMessages(r, c.ID, claims, stored); err != nil {
			writeErr(w, err)
			return
		}
	}
	if _, err := a.d.Store.PutEvents(r.Context(), c.ID, stored); err != nil {
		writeErr(w, err)
		return
	}
	if _, err := a.d.Store.UpdateConversation(r.Context(), c.ID, func(conv *acs.Conversation) error {
		for _, su := range states {
			applyState(conv, su.Key, su.Value, reportTime(su.Timestamp.Time, received))
		}
		conv.UpdatedAt = a.now()
		return nil
	}); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
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
// in the transcript the control plane keeps.
func (a *API) verifyUserMessages(r *http.Request, convID string, claims []userMessage, stored []acs.StoredEvent) error {
	verified := make([]bool, len(claims))
	if _, err := a.d.Store.UpdateConversation(r.Context(), convID, func(conv *acs.Conversation) error {
		for i, u := range claims {
			verified[i] = conv.ClaimDelivery(u.digest, u.event.ID)
		}
		return nil
	}); err != nil {
		return err
	}
	for i, u := range claims {
		if verified[i] {
			continue
		}
		m := *u.event
		sender := UnverifiedSender
		m.Source, m.Sender = events.SourceEnvironment, &sender
		stored[u.index].Source, stored[u.index].JSON = string(m.Source), events.MustEncode(&m)
		slog.Info("api: a user message the control plane did not deliver is stored as unverified",
			"conversation", convID, "event", m.ID)
	}
	return nil
}

// reportTime is the time a report counts at: its own, but never later than
// when the control plane received it, so that a report dated in the future
// (a wrong clock, or a forged date) cannot outrank the reports that follow.
func reportTime(ts, received time.Time) time.Time {
	if ts.After(received) {
		return received
	}
	return ts
}

// validStatus reports whether s is an execution status of the agent server.
func validStatus(s string) bool {
	return slices.Contains(wire.ExecutionStatus("").EnumValues(), s)
}

// applyState applies one state update reported at ts. Values that are not
// valid (an unknown execution status) are ignored.
func applyState(c *acs.Conversation, key string, value json.RawMessage, ts time.Time) {
	switch key {
	case "execution_status":
		var s string
		if json.Unmarshal(value, &s) == nil && validStatus(s) && !ts.Before(c.ExecutionStatusAt) && s != string(wire.StatusDeleting) {
			c.ExecutionStatus, c.ExecutionStatusAt = s, ts
		}
	case "stats":
		var st wire.Stats
		if json.Unmarshal(value, &st) == nil && st.UsageToMetrics != nil {
			m := st.Combined()
			c.Metrics = strictjson.MustMarshal(&m)
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
			Stats           wire.Stats      `json:"stats"`
			AgentState      json.RawMessage `json:"agent_state"`
		}
		if json.Unmarshal(value, &info) == nil {
			raw, _ := json.Marshal(info.ExecutionStatus)
			applyState(c, "execution_status", raw, ts)
			if info.Stats.UsageToMetrics != nil {
				raw, _ := json.Marshal(info.Stats)
				applyState(c, "stats", raw, ts)
			}
			if len(info.AgentState) > 0 {
				applyState(c, "agent_state", info.AgentState, ts)
			}
		}
	}
}

// Limits on what a conversations report may set.
const (
	maxReportTitle = 200 // characters, as PATCH
	maxTags        = 100 // per report, and on the record
	maxTagKey      = 256 // characters
)

// conversationReport is the part of the agent server's ConversationInfo
// the control plane keeps; other fields are ignored.
type conversationReport struct {
	ID              string            `json:"id"`
	ExecutionStatus string            `json:"execution_status"`
	Stats           *wire.Stats       `json:"stats"`
	Title           *string           `json:"title"`
	Tags            map[string]string `json:"tags"`
	UpdatedAt       *string           `json:"updated_at"`
	AgentState      json.RawMessage   `json:"agent_state"`
}

// validate checks the report as the public API checks the same values:
// an execution status of the enum, a title of at most 200 characters, tags
// as the agent server takes them (at most 100), a valid updated_at. It
// returns updated_at (nil when absent or empty).
func (info *conversationReport) validate() (strictjson.Errors, *time.Time) {
	var errs strictjson.Errors
	if info.ExecutionStatus != "" && !validStatus(info.ExecutionStatus) {
		errs = append(errs, strictjson.Error{Loc: []any{"body", "execution_status"}, Type: "enum",
			Msg: strictjson.EnumMessage(wire.ExecutionStatus("").EnumValues())})
	}
	if info.Title != nil && utf8.RuneCountInString(*info.Title) > maxReportTitle {
		errs = append(errs, strictjson.Error{Loc: []any{"body", "title"}, Type: "string_too_long",
			Msg: fmt.Sprintf("title must be at most %d characters", maxReportTitle)})
	}
	if len(info.Tags) > maxTags {
		errs = append(errs, strictjson.Error{Loc: []any{"body", "tags"}, Type: "too_long", Msg: fmt.Sprintf("at most %d tags", maxTags)})
	}
	for k := range info.Tags {
		if utf8.RuneCountInString(k) > maxTagKey {
			errs = append(errs, strictjson.Error{Loc: []any{"body", "tags"}, Type: "string_too_long",
				Msg: fmt.Sprintf("tag keys are at most %d characters", maxTagKey)})
			break
		}
	}
	errs = append(errs, strictjson.Prefix((&wire.UpdateConversationRequest{Tags: info.Tags}).ValidateStrict(), "body")...)
	var updated *time.Time
	if info.UpdatedAt != nil && *info.UpdatedAt != "" {
		t, err := events.ParseTime(*info.UpdatedAt)
		if err != nil {
			errs = append(errs, strictjson.Error{Loc: []any{"body", "updated_at"}, Type: "datetime_parsing", Msg: "Input should be a valid datetime"})
		}
		updated = &t
	}
	return errs, updated
}

// webhookConversations: POST /api/v1/webhooks/conversations with the agent
// server's ConversationInfo. It keeps status, metrics, title and tags
// current. An invalid value is a 422 and nothing is stored; the report's
// updated_at counts no later than its receipt (reportTime); a title does
// not undo a later rename by the user (acs.Conversation.ApplyReportedTitle).
func (a *API) webhookConversations(w http.ResponseWriter, r *http.Request) {
	sb, _ := acs.SandboxFrom(r.Context())
	received := a.now()
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var info conversationReport
	if err := json.Unmarshal(body, &info); err != nil || info.ID == "" {
		loc := []any{"body", "id"}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" && te.Field != "id" && info.ID != "" {
			loc = []any{"body"}
			for _, f := range strings.Split(te.Field, ".") {
				loc = append(loc, f)
			}
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Input should be a valid " + te.Type.String(), Type: "type_error"}})
			return
		}
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "The body must be a ConversationInfo object with an id", Type: "missing"}})
		return
	}
	errs, updated := info.validate()
	if len(errs) > 0 {
		httpjson.WriteValidation(w, errs)
		return
	}
	if info.ExecutionStatus == string(wire.StatusDeleting) {
		httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
		return
	}
	c, err := a.sandboxConversation(r, sb, info.ID)
	if errors.Is(err, errTombstone) {
		httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	at := received
	if updated != nil {
		at = reportTime(*updated, received)
	}
	if _, err := a.d.Store.UpdateConversation(r.Context(), c.ID, func(conv *acs.Conversation) error {
		raw, _ := json.Marshal(info.ExecutionStatus)
		applyState(conv, "execution_status", raw, at)
		if info.Stats != nil && info.Stats.UsageToMetrics != nil {
			raw, _ := json.Marshal(info.Stats)
			applyState(conv, "stats", raw, at)
		}
		if info.Title != nil && strings.TrimSpace(*info.Title) != "" {
			conv.ApplyReportedTitle(*info.Title, at)
		}
		if len(info.AgentState) > 0 {
			applyState(conv, "agent_state", info.AgentState, at)
		}
		for k, v := range info.Tags {
			if conv.Tags == nil {
				conv.Tags = map[string]string{}
			}
			if _, ok := conv.Tags[k]; ok || len(conv.Tags) < maxTags {
				conv.Tags[k] = v
			}
		}
		conv.UpdatedAt = a.now()
		return nil
	}); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
}
