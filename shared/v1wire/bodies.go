package v1wire

// The request and response bodies of the V1 routes other than the start
// request: conversation updates, messages, settings, secrets, users and
// keys, and the review routes.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
)

// UpdateRequest is the body of PATCH /api/v1/app-conversations/{id}: only
// fields present are applied; an explicit null clears a field. title is
// accepted (the reference ignores it although its frontend sends it).
type UpdateRequest struct {
	Title              strictjson.Optional `json:"title"`
	Public             strictjson.Optional `json:"public"`
	SelectedRepository strictjson.Optional `json:"selected_repository"`
	SelectedBranch     strictjson.Optional `json:"selected_branch"`
	GitProvider        strictjson.Optional `json:"git_provider"`
}

// SendMessageRequest is the body of send-message (run defaults to true).
type SendMessageRequest struct {
	Role    events.Role      `json:"role" acs:"default=user"`
	Content []events.Content `json:"content"`
	Run     bool             `json:"run" acs:"default=true"`
}

// ValidateStrict requires a user message with content.
func (m *SendMessageRequest) ValidateStrict() []strictjson.Error {
	w := wire.SendMessageRequest{Role: m.Role, Content: m.Content}
	return w.ValidateStrict()
}

// SendMessageResponse is send-message's answer.
type SendMessageResponse struct {
	Success       bool    `json:"success"`
	SandboxStatus string  `json:"sandbox_status"`
	Message       *string `json:"message" acs:"emitnull"`
}

// PendingMessageRequest is the body of POST .../pending-messages.
type PendingMessageRequest struct {
	Role    events.Role      `json:"role" acs:"default=user"`
	Content []events.Content `json:"content"`
}

// ValidateStrict requires a user message with content.
func (m *PendingMessageRequest) ValidateStrict() []strictjson.Error {
	w := wire.SendMessageRequest{Role: m.Role, Content: m.Content}
	return w.ValidateStrict()
}

// PendingMessageResponse says whether the message was queued, and where.
type PendingMessageResponse struct {
	ID       string `json:"id"`
	Queued   bool   `json:"queued"`
	Position int    `json:"position"`
}

// Settings is what GET /api/v1/settings answers. The LLM key is never
// returned; llm_api_key_set says whether one is saved.
type Settings struct {
	SandboxGroupingStrategy    string          `json:"sandbox_grouping_strategy"`
	LLMModel                   *string         `json:"llm_model" acs:"emitnull"`
	LLMBaseURL                 *string         `json:"llm_base_url" acs:"emitnull"`
	LLMAPIKeySet               bool            `json:"llm_api_key_set"`
	ConfirmationPolicy         json.RawMessage `json:"confirmation_policy" acs:"nullable,emitnull"`
	MaxConversationsPerSandbox int             `json:"max_conversations_per_sandbox"`
	UpdatedAt                  *events.Time    `json:"updated_at" acs:"emitnull"`
}

// SettingsRequest is the body of POST /api/v1/settings: a partial update.
// Fields absent are kept; null clears llm_model, llm_base_url, llm_api_key
// and confirmation_policy.
type SettingsRequest struct {
	SandboxGroupingStrategy    *acs.GroupingStrategy `json:"sandbox_grouping_strategy"`
	LLMModel                   strictjson.Optional   `json:"llm_model"`
	LLMBaseURL                 strictjson.Optional   `json:"llm_base_url"`
	LLMAPIKey                  strictjson.Optional   `json:"llm_api_key"`
	ConfirmationPolicy         strictjson.Optional   `json:"confirmation_policy"`
	MaxConversationsPerSandbox *int                  `json:"max_conversations_per_sandbox" acs:"ge=1,le=1000"`
}

// User is a user.
type User struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Admin     bool        `json:"admin"`
	CreatedAt events.Time `json:"created_at"`
}

// NewKey is a key as made: its value is shown this once.
type NewKey struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Key       string      `json:"key"`
	CreatedAt events.Time `json:"created_at"`
}

// Key is a listed key (never its value).
type Key struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Prefix    string      `json:"prefix"`
	CreatedAt events.Time `json:"created_at"`
}

// NewUser is POST /api/v1/users's answer: the user and its first key.
type NewUser struct {
	User User   `json:"user"`
	Key  NewKey `json:"key"`
}

// NameRequest is a body with just a name.
type NameRequest struct {
	Name string `json:"name" acs:"required,minlen=1,maxlen=100"`
}

// ValidateStrict refuses blank names.
func (r *NameRequest) ValidateStrict() []strictjson.Error {
	if strings.TrimSpace(r.Name) == "" {
		return []strictjson.Error{{Loc: []any{"name"}, Msg: "name must not be blank", Type: "value_error"}}
	}
	return nil
}

// Secret describes a stored secret (never its value).
type Secret struct {
	Name        string      `json:"name"`
	Description *string     `json:"description" acs:"emitnull"`
	CreatedAt   events.Time `json:"created_at"`
	UpdatedAt   events.Time `json:"updated_at"`
}

// SecretList is GET /api/v1/secrets's answer.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}

// CreateSecretRequest is the body of POST /api/v1/secrets.
type CreateSecretRequest struct {
	Name        string  `json:"name" acs:"required"`
	Value       string  `json:"value" acs:"required"`
	Description *string `json:"description" acs:"maxlen=1000"`
}

// ValidateStrict checks the name and the value's size.
func (r *CreateSecretRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if msg := SecretNameProblem(r.Name); msg != "" {
		errs = append(errs, strictjson.Error{Loc: []any{"name"}, Msg: msg, Type: "value_error"})
	}
	errs = append(errs, valueProblems(&r.Value)...)
	return errs
}

func valueProblems(v *string) []strictjson.Error {
	switch {
	case v == nil:
		return nil
	case *v == "":
		return []strictjson.Error{{Loc: []any{"value"}, Msg: "String should have at least 1 character", Type: "string_too_short"}}
	case len(*v) > MaxSecretValueSize:
		return []strictjson.Error{{Loc: []any{"value"}, Msg: fmt.Sprintf("secret values are at most %d bytes", MaxSecretValueSize), Type: "string_too_long"}}
	}
	return nil
}

// UpdateSecretRequest is the body of PUT /api/v1/secrets/{name}.
type UpdateSecretRequest struct {
	Value       *string `json:"value"`
	Description *string `json:"description" acs:"maxlen=1000"`
}

// ValidateStrict checks the value's size.
func (r *UpdateSecretRequest) ValidateStrict() []strictjson.Error { return valueProblems(r.Value) }

// Skill is one skill of GET .../skills.
type Skill struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Content  string   `json:"content"`
	Triggers []string `json:"triggers"`
}

// SkillList is GET .../skills's answer.
type SkillList struct {
	Skills []Skill `json:"skills"`
}

// HookEvent is one event type of GET .../hooks.
type HookEvent struct {
	EventType string          `json:"event_type"`
	Matchers  json.RawMessage `json:"matchers"`
}

// HookList is GET .../hooks's answer.
type HookList struct {
	Hooks []HookEvent `json:"hooks"`
}

// RevokedSessions answers DELETE /api/v1/users/{user_id}/sessions: how many
// browser sessions were ended.
type RevokedSessions struct {
	Revoked int `json:"revoked"`
}
