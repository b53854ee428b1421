package acs

import (
	"encoding/json"
	"sort"
	"time"
)

// DefaultMaxConversationsPerSandbox caps conversations placed on one sandbox
// by grouping (explicit placement ignores it).
const DefaultMaxConversationsPerSandbox = 20

// Settings are a user's application settings.
type Settings struct {
	UserID                  string           `json:"user_id"`
	SandboxGroupingStrategy GroupingStrategy `json:"sandbox_grouping_strategy"`
	LLMModel                *string          `json:"llm_model,omitempty"`
	LLMBaseURL              *string          `json:"llm_base_url,omitempty"`
	// LLMAPIKeySealed is the user's LLM key, sealed (see Sealer); it is
	// never returned.
	LLMAPIKeySealed            string          `json:"llm_api_key_sealed,omitempty"`
	ConfirmationPolicy         json.RawMessage `json:"confirmation_policy,omitempty"`
	MaxConversationsPerSandbox int             `json:"max_conversations_per_sandbox"`
	UpdatedAt                  time.Time       `json:"updated_at"`
	// UI holds the OpenHands web frontend's own settings (language,
	// analytics consent, git identity, …) by name, as validated JSON: ACS
	// keeps them for the UI and does not act on them.
	UI map[string]json.RawMessage `json:"ui,omitempty"`
	// AgentSettings and ConversationSettings are the frontend's nested
	// settings objects (JSON objects). The LLM fields ACS uses live in
	// LLMModel, LLMBaseURL and LLMAPIKeySealed, never in these; no secret
	// is kept in them.
	AgentSettings        json.RawMessage `json:"agent_settings,omitempty"`
	ConversationSettings json.RawMessage `json:"conversation_settings,omitempty"`
	// SearchAPIKeySealed is the frontend's search API key, sealed.
	SearchAPIKeySealed string `json:"search_api_key_sealed,omitempty"`
	// LLMProfiles are the user's saved LLM configurations, by name;
	// ActiveLLMProfile names the one whose values LLMModel, LLMBaseURL and
	// LLMAPIKeySealed hold ("" when none, or when they were edited since).
	LLMProfiles      []LLMProfile `json:"llm_profiles,omitempty"`
	ActiveLLMProfile string       `json:"active_llm_profile,omitempty"`
	// ProviderTokens are the user's git provider tokens (sealed): they
	// clone selected_repository and list repositories.
	ProviderTokens []ProviderToken `json:"provider_tokens,omitempty"`
}

// LLMProfile is a saved LLM configuration. The key is sealed and never
// returned; Config keeps the profile's other LLM fields (a JSON object
// without model, base_url or api_key) for the UI.
type LLMProfile struct {
	Name         string          `json:"name"`
	Model        *string         `json:"model,omitempty"`
	BaseURL      *string         `json:"base_url,omitempty"`
	APIKeySealed string          `json:"api_key_sealed,omitempty"`
	Config       json.RawMessage `json:"config,omitempty"`
}

// MaxLLMProfiles caps a user's saved LLM profiles.
const MaxLLMProfiles = 50

// ProviderToken is a git provider's token (sealed, never returned) and
// the host it is for ("" for the provider's public host).
type ProviderToken struct {
	Provider string `json:"provider"`
	Host     string `json:"host,omitempty"`
	Sealed   string `json:"sealed"`
}

// ProviderToken returns the user's token record for provider.
func (s Settings) ProviderToken(provider string) (ProviderToken, bool) {
	for _, t := range s.ProviderTokens {
		if t.Provider == provider {
			return t, true
		}
	}
	return ProviderToken{}, false
}

// Profile returns the user's profile name.
func (s Settings) Profile(name string) (LLMProfile, int, bool) {
	for i, p := range s.LLMProfiles {
		if p.Name == name {
			return p, i, true
		}
	}
	return LLMProfile{}, -1, false
}

// DefaultSettings are a user's settings before they save any.
func DefaultSettings(userID string) Settings {
	return Settings{UserID: userID, SandboxGroupingStrategy: NoGrouping,
		MaxConversationsPerSandbox: DefaultMaxConversationsPerSandbox}
}

// Secret is a user's stored secret. The value is sealed and never returned.
type Secret struct {
	OwnerID     string    `json:"owner_id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Sealed      string    `json:"sealed"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// PendingMessage is a message queued for a conversation that is still
// starting (Key "task-<start task id>") or not reachable yet (Key the
// conversation id). Messages are delivered in the order they were queued.
type PendingMessage struct {
	ID        string          `json:"id"`
	OwnerID   string          `json:"owner_id"`
	Key       string          `json:"key"`
	Content   json.RawMessage `json:"content"`
	CreatedAt time.Time       `json:"created_at"`
}

// MaxPendingMessages caps the messages queued under one key.
const MaxPendingMessages = 10

// StartTaskFilter selects a user's start tasks.
type StartTaskFilter struct {
	// ConversationID matches app_conversation_id (or the conversation the
	// task is starting).
	ConversationID string
	CreatedGTE     *time.Time
}

// StartTaskSort orders start tasks.
type StartTaskSort string

// The start-task sort orders.
const (
	SortCreatedAt     StartTaskSort = "CREATED_AT"
	SortCreatedAtDesc StartTaskSort = "CREATED_AT_DESC"
	SortUpdatedAt     StartTaskSort = "UPDATED_AT"
	SortUpdatedAtDesc StartTaskSort = "UPDATED_AT_DESC"
)

// EnumValues lists the orders.
func (StartTaskSort) EnumValues() []string {
	return []string{"CREATED_AT", "CREATED_AT_DESC", "UPDATED_AT", "UPDATED_AT_DESC"}
}

// SortSandboxes orders sandboxes newest first (the store's order).
func SortSandboxes(s []Sandbox) {
	sort.SliceStable(s, func(i, j int) bool { return s[i].CreatedAt.After(s[j].CreatedAt) })
}

// Quota holds a user's claims on running sandboxes: sandboxes being
// started or resumed, counted against the per-user running cap until their
// records show them (see sandboxes.Lifecycle). Claims are made in one atomic
// update, so concurrent starts cannot all pass the cap.
//
// Placement is the user's placement lock: with a grouping strategy, only
// the start task holding it chooses or creates a sandbox, so concurrent
// starts that find no sandbox share the one the first of them creates
// instead of each creating their own.
type Quota struct {
	UserID    string               `json:"user_id"`
	Claims    map[string]time.Time `json:"claims"`
	Placement *PlacementLock       `json:"placement,omitempty"`
}

// PlacementLock is held by one start task until Until (a crashed holder's
// lock lapses). Created names the sandbox the last holder created, which a
// later holder considers even when the owner's sandbox index (eventually
// consistent in some stores) does not list it yet.
type PlacementLock struct {
	Task    string    `json:"task"`
	Until   time.Time `json:"until"`
	Created string    `json:"created,omitempty"`
}
