package v1wire

// The request and response bodies of the V1 routes other than the start
// request: conversation updates, messages, settings, secrets, users and
// keys, and the review routes.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
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
	w := agentwire.SendMessageRequest{Role: m.Role, Content: m.Content}
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
	w := agentwire.SendMessageRequest{Role: m.Role, Content: m.Content}
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
	OpenHandsSettings
}

// OpenHandsSettings are the OpenHands web frontend's settings fields, as
// GET /api/v1/settings answers them after ACS's own. Secrets are never
// returned: llm_api_key_set, search_api_key_set and provider_tokens_set
// (provider to host) say what is stored. agent_settings.llm carries the
// LLM model and base URL ACS uses, with api_key null.
type OpenHandsSettings struct {
	Language                            string             `json:"language"`
	UserConsentsToAnalytics             bool               `json:"user_consents_to_analytics"`
	EnableSoundNotifications            bool               `json:"enable_sound_notifications"`
	EnableProactiveConversationStarters bool               `json:"enable_proactive_conversation_starters"`
	EnableSolvabilityAnalysis           bool               `json:"enable_solvability_analysis"`
	MaxBudgetPerTask                    *float64           `json:"max_budget_per_task" acs:"emitnull"`
	GitUserName                         *string            `json:"git_user_name" acs:"emitnull"`
	GitUserEmail                        *string            `json:"git_user_email" acs:"emitnull"`
	GitFullClone                        bool               `json:"git_full_clone"`
	RemoteRuntimeResourceFactor         *int               `json:"remote_runtime_resource_factor" acs:"emitnull"`
	DisabledSkills                      []string           `json:"disabled_skills"`
	V1Enabled                           bool               `json:"v1_enabled"`
	SearchAPIKeySet                     bool               `json:"search_api_key_set"`
	ProviderTokensSet                   map[string]*string `json:"provider_tokens_set"`
	AgentSettings                       json.RawMessage    `json:"agent_settings"`
	ConversationSettings                json.RawMessage    `json:"conversation_settings"`
	// UI holds the other frontend fields saved (agent, confirmation_mode,
	// mcp_config, …); they are answered as top-level fields.
	UI map[string]json.RawMessage `json:"-"`
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
	OpenHandsSettingsRequest
}

// OpenHandsSettingsRequest are the OpenHands web frontend's writable
// settings fields (it posts its whole settings object). They are only
// type-checked here: the values are kept for the UI, except the LLM model,
// base URL and key inside agent_settings / agent_settings_diff (llm.*),
// which set llm_model, llm_base_url and llm_api_key, and search_api_key,
// which is sealed. agent_settings and conversation_settings (and their
// *_diff forms) merge into the stored objects (RFC 7386); a null
// agent_settings or conversation_settings clears it.
type OpenHandsSettingsRequest struct {
	Language                            *string         `json:"language" acs:"nullable,maxlen=64"`
	UserConsentsToAnalytics             *bool           `json:"user_consents_to_analytics" acs:"nullable"`
	EnableSoundNotifications            *bool           `json:"enable_sound_notifications" acs:"nullable"`
	EnableProactiveConversationStarters *bool           `json:"enable_proactive_conversation_starters" acs:"nullable"`
	EnableSolvabilityAnalysis           *bool           `json:"enable_solvability_analysis" acs:"nullable"`
	MaxBudgetPerTask                    *float64        `json:"max_budget_per_task" acs:"nullable,ge=0"`
	GitUserName                         *string         `json:"git_user_name" acs:"nullable,maxlen=256"`
	GitUserEmail                        *string         `json:"git_user_email" acs:"nullable,maxlen=256"`
	GitFullClone                        *bool           `json:"git_full_clone" acs:"nullable"`
	RemoteRuntimeResourceFactor         *int            `json:"remote_runtime_resource_factor" acs:"nullable,ge=1,le=8"`
	DisabledSkills                      []string        `json:"disabled_skills" acs:"nullable"`
	V1Enabled                           *bool           `json:"v1_enabled" acs:"nullable"`
	UserVersion                         *int            `json:"user_version" acs:"nullable"`
	Email                               *string         `json:"email" acs:"nullable,maxlen=320"`
	EmailVerified                       *bool           `json:"email_verified" acs:"nullable"`
	SandboxBaseContainerImage           *string         `json:"sandbox_base_container_image" acs:"nullable,maxlen=512"`
	SandboxRuntimeContainerImage        *string         `json:"sandbox_runtime_container_image" acs:"nullable,maxlen=512"`
	SearchAPIKey                        *string         `json:"search_api_key" acs:"nullable,maxlen=4096"`
	Agent                               *string         `json:"agent" acs:"nullable,maxlen=128"`
	ConfirmationMode                    *bool           `json:"confirmation_mode" acs:"nullable"`
	SecurityAnalyzer                    *string         `json:"security_analyzer" acs:"nullable,maxlen=128"`
	MaxIterations                       *int            `json:"max_iterations" acs:"nullable,ge=1"`
	EnableDefaultCondenser              *bool           `json:"enable_default_condenser" acs:"nullable"`
	CondenserMaxSize                    *int            `json:"condenser_max_size" acs:"nullable,ge=1"`
	MCPConfig                           json.RawMessage `json:"mcp_config" acs:"nullable,object"`
	RegisteredMarketplaces              json.RawMessage `json:"registered_marketplaces" acs:"nullable"`
	AgentSettings                       json.RawMessage `json:"agent_settings" acs:"nullable,object"`
	AgentSettingsDiff                   json.RawMessage `json:"agent_settings_diff" acs:"nullable,object"`
	ConversationSettings                json.RawMessage `json:"conversation_settings" acs:"nullable,object"`
	ConversationSettingsDiff            json.RawMessage `json:"conversation_settings_diff" acs:"nullable,object"`
}

// UIFields are the OpenHandsSettingsRequest fields kept as they are given
// (for the UI); the rest are handled by name.
var UIFields = []string{"language", "user_consents_to_analytics", "enable_sound_notifications",
	"enable_proactive_conversation_starters", "enable_solvability_analysis", "max_budget_per_task",
	"git_user_name", "git_user_email", "git_full_clone", "remote_runtime_resource_factor", "disabled_skills",
	"v1_enabled", "user_version", "email", "email_verified", "sandbox_base_container_image",
	"sandbox_runtime_container_image", "agent", "confirmation_mode", "security_analyzer", "max_iterations",
	"enable_default_condenser", "condenser_max_size", "mcp_config", "registered_marketplaces"}

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
	} else if r.Name == "search" {
		// GET /api/v1/secrets/search is the secrets page, so a secret of
		// that name could not be read back.
		errs = append(errs, strictjson.Error{Loc: []any{"name"}, Msg: "\"search\" is reserved (GET /api/v1/secrets/search lists secrets)", Type: "value_error"})
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

// settingsFields is Settings without its encoder.
type settingsFields Settings

// AppendStrictJSON implements strictjson.ValueEncoder: the fields, then the
// other web frontend fields the user saved (UI), as top-level keys.
func (s Settings) AppendStrictJSON(b []byte) ([]byte, error) {
	enc, err := strictjson.Marshal(settingsFields(s))
	if err != nil || len(s.UI) == 0 {
		return append(b, enc...), err
	}
	var have map[string]json.RawMessage
	if err := json.Unmarshal(enc, &have); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(s.UI))
	for k := range s.UI {
		if _, dup := have[k]; !dup {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	b = append(b, enc[:len(enc)-1]...)
	for _, k := range keys {
		b = append(b, ',')
		b = strictjson.AppendString(b, k)
		b = append(b, ':')
		b = append(b, s.UI[k]...)
	}
	return append(b, '}'), nil
}
