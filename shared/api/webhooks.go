package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/conversations"
)

// maxEventIDLen bounds event ids (the agent server's are UUIDs).
const maxEventIDLen = 256

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
	evs := make([]events.Event, 0, len(root.Elems))
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
		if len(ev.EventBase().ID) > maxEventIDLen {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", i, "id"}, Type: "string_too_long",
				Msg: fmt.Sprintf("event ids are at most %d characters", maxEventIDLen)}})
			return
		}
		evs = append(evs, ev)
	}
	err = a.conv.ReportEvents(r.Context(), sb, r.PathValue("conversation_id"), evs, received)
	if err != nil && !errors.Is(err, conversations.ErrTombstone) {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// UnverifiedSender marks (in "sender") a MessageEvent a sandbox reported
// with source "user" that matches no message the control plane delivered:
// it is stored with source "environment".
const UnverifiedSender = conversations.UnverifiedSender

// Limits on what a conversations report may set.
const (
	maxReportTitle = 200                   // characters, as PATCH
	maxTags        = conversations.MaxTags // per report, and on the record
	maxTagKey      = 256                   // characters
)

// conversationReport is the part of the agent server's ConversationInfo
// the control plane keeps; other fields are ignored.
type conversationReport struct {
	ID              string            `json:"id"`
	ExecutionStatus string            `json:"execution_status"`
	Stats           *agentwire.Stats  `json:"stats"`
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
	if info.ExecutionStatus != "" && !conversations.ValidStatus(info.ExecutionStatus) {
		errs = append(errs, strictjson.Error{Loc: []any{"body", "execution_status"}, Type: "enum",
			Msg: strictjson.EnumMessage(agentwire.ExecutionStatus("").EnumValues())})
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
	errs = append(errs, strictjson.Prefix((&agentwire.UpdateConversationRequest{Tags: info.Tags}).ValidateStrict(), "body")...)
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
	err := a.conv.ReportConversation(r.Context(), sb, conversations.Report{ID: info.ID, ExecutionStatus: info.ExecutionStatus,
		Stats: info.Stats, Title: info.Title, Tags: info.Tags, UpdatedAt: updated, AgentState: info.AgentState}, received)
	if err != nil && !errors.Is(err, conversations.ErrTombstone) {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}
