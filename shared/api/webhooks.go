package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
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
		return acs.Conversation{}, fmt.Errorf("conversation id %q: %w", rawID, acs.ErrNotFound)
	}
	if sb.IsTombstone(id) {
		return acs.Conversation{}, errTombstone
	}
	c, err := a.d.Store.GetConversation(r.Context(), id)
	if err == nil {
		if c.SandboxID != sb.ID {
			return acs.Conversation{}, fmt.Errorf("conversation %s does not belong to this sandbox: %w", id, acs.ErrForbidden)
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
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	root, err := strictjson.Parse(body)
	if err != nil || root.Kind != strictjson.Array {
		wire.WriteValidation(w, strictjson.Errors{{Loc: []any{"body"}, Msg: "The body must be a JSON array of events", Type: "list_type"}})
		return
	}
	var stored []acs.StoredEvent
	var states []*events.ConversationStateUpdateEvent
	used := false
	for i, v := range root.Elems {
		ev, err := events.DecodeValue(v)
		if err != nil {
			var es strictjson.Errors
			if errors.As(err, &es) {
				wire.WriteValidation(w, strictjson.Prefix(es, "body", i))
				return
			}
			writeErr(w, err)
			return
		}
		b := ev.EventBase()
		if len(b.ID) > maxEventIDLen {
			wire.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", i, "id"}, Type: "string_too_long",
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
		if _, ok := ev.(*events.MessageEvent); ok && b.Source == events.SourceUser {
			used = true
		}
	}
	c, err := a.sandboxConversation(r, sb, r.PathValue("conversation_id"))
	if errors.Is(err, errTombstone) {
		wire.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	a.life.Touch(r.Context(), sb, used)
	if _, err := a.d.Store.PutEvents(r.Context(), c.ID, stored); err != nil {
		writeErr(w, err)
		return
	}
	if _, err := a.d.Store.UpdateConversation(r.Context(), c.ID, func(conv *acs.Conversation) error {
		for _, su := range states {
			applyState(conv, su.Key, su.Value, su.Timestamp.Time)
		}
		conv.UpdatedAt = a.now()
		return nil
	}); err != nil {
		writeErr(w, err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
}

// applyState applies one state update reported at ts.
func applyState(c *acs.Conversation, key string, value json.RawMessage, ts time.Time) {
	switch key {
	case "execution_status":
		var s string
		if json.Unmarshal(value, &s) == nil && s != "" && !ts.Before(c.ExecutionStatusAt) && s != string(wire.StatusDeleting) {
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

// webhookConversations: POST /api/v1/webhooks/conversations with the agent
// server's ConversationInfo. It keeps status, metrics and title current.
func (a *API) webhookConversations(w http.ResponseWriter, r *http.Request) {
	sb, _ := acs.SandboxFrom(r.Context())
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var info struct {
		ID              string            `json:"id"`
		ExecutionStatus string            `json:"execution_status"`
		Stats           *wire.Stats       `json:"stats"`
		Title           *string           `json:"title"`
		Tags            map[string]string `json:"tags"`
		UpdatedAt       string            `json:"updated_at"`
		AgentState      json.RawMessage   `json:"agent_state"`
	}
	if err := json.Unmarshal(body, &info); err != nil || info.ID == "" {
		wire.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "id"}, Msg: "The body must be a ConversationInfo object with an id", Type: "missing"}})
		return
	}
	if info.ExecutionStatus == string(wire.StatusDeleting) {
		wire.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
		return
	}
	c, err := a.sandboxConversation(r, sb, info.ID)
	if errors.Is(err, errTombstone) {
		wire.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	updated, err := events.ParseTime(info.UpdatedAt)
	if err != nil {
		updated = a.now()
	}
	if _, err := a.d.Store.UpdateConversation(r.Context(), c.ID, func(conv *acs.Conversation) error {
		raw, _ := json.Marshal(info.ExecutionStatus)
		applyState(conv, "execution_status", raw, updated)
		if info.Stats != nil && info.Stats.UsageToMetrics != nil {
			raw, _ := json.Marshal(info.Stats)
			applyState(conv, "stats", raw, updated)
		}
		if info.Title != nil && *info.Title != "" {
			conv.Title = info.Title
		}
		if len(info.AgentState) > 0 {
			applyState(conv, "agent_state", info.AgentState, updated)
		}
		if len(info.Tags) > 0 {
			if conv.Tags == nil {
				conv.Tags = map[string]string{}
			}
			for k, v := range info.Tags {
				conv.Tags[k] = v
			}
		}
		conv.UpdatedAt = a.now()
		return nil
	}); err != nil {
		writeErr(w, err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
}
