package v1wire

import (
	"encoding/json"

	"github.com/acs-project/acs/events"
)

// Step is one recorded start-task step (an ACS extension).
type Step struct {
	Status    string      `json:"status"`
	StartedAt events.Time `json:"started_at"`
	Detail    *string     `json:"detail" acs:"emitnull"`
}

// StartTask is AppConversationStartTask.
type StartTask struct {
	ID                string          `json:"id"`
	CreatedByUserID   *string         `json:"created_by_user_id" acs:"emitnull"`
	Status            string          `json:"status"`
	Detail            *string         `json:"detail" acs:"emitnull"`
	AppConversationID *string         `json:"app_conversation_id" acs:"emitnull"`
	SandboxID         *string         `json:"sandbox_id" acs:"emitnull"`
	AgentServerURL    *string         `json:"agent_server_url" acs:"emitnull"`
	Request           json.RawMessage `json:"request"`
	CreatedAt         events.Time     `json:"created_at"`
	UpdatedAt         events.Time     `json:"updated_at"`
	Placement         *string         `json:"placement" acs:"emitnull"`
	Steps             []Step          `json:"steps"`
}

// Conversation is AppConversation.
type Conversation struct {
	ID                   string            `json:"id"`
	CreatedByUserID      *string           `json:"created_by_user_id" acs:"emitnull"`
	SandboxID            string            `json:"sandbox_id"`
	SelectedRepository   *string           `json:"selected_repository" acs:"emitnull"`
	SelectedBranch       *string           `json:"selected_branch" acs:"emitnull"`
	GitProvider          *string           `json:"git_provider" acs:"emitnull"`
	Title                *string           `json:"title" acs:"emitnull"`
	Trigger              *string           `json:"trigger" acs:"emitnull"`
	PRNumber             []int             `json:"pr_number"`
	LLMModel             *string           `json:"llm_model" acs:"emitnull"`
	AgentKind            string            `json:"agent_kind"`
	Metrics              json.RawMessage   `json:"metrics" acs:"emitnull"`
	ParentConversationID *string           `json:"parent_conversation_id" acs:"emitnull"`
	SubConversationIDs   []string          `json:"sub_conversation_ids"`
	Public               *bool             `json:"public" acs:"emitnull"`
	Tags                 map[string]string `json:"tags"`
	CreatedAt            events.Time       `json:"created_at"`
	UpdatedAt            events.Time       `json:"updated_at"`
	SandboxStatus        string            `json:"sandbox_status"`
	ExecutionStatus      *string           `json:"execution_status" acs:"emitnull"`
	ConversationURL      *string           `json:"conversation_url" acs:"emitnull"`
	SessionAPIKey        *string           `json:"session_api_key" acs:"emitnull"`
}

// ExposedURL is a URL a sandbox exposes.
type ExposedURL struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Port int    `json:"port"`
}

// Sandbox is SandboxInfo.
type Sandbox struct {
	ID              string       `json:"id"`
	CreatedByUserID *string      `json:"created_by_user_id" acs:"emitnull"`
	SandboxSpecID   string       `json:"sandbox_spec_id"`
	Status          string       `json:"status"`
	SessionAPIKey   *string      `json:"session_api_key" acs:"emitnull"`
	ExposedURLs     []ExposedURL `json:"exposed_urls" acs:"nullable,emitnull"`
	CreatedAt       events.Time  `json:"created_at"`
	// ACS extensions.
	Detail        *string     `json:"detail" acs:"emitnull"`
	Conversations int         `json:"conversation_count"`
	LastUsedAt    events.Time `json:"last_used_at"`
}

// Spec is SandboxSpecInfo.
type Spec struct {
	ID         string            `json:"id"`
	Command    []string          `json:"command" acs:"nullable,emitnull"`
	CreatedAt  events.Time       `json:"created_at"`
	InitialEnv map[string]string `json:"initial_env"`
	WorkingDir string            `json:"working_dir"`
}

// Page is {items, next_page_id}.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextPageID *string `json:"next_page_id" acs:"emitnull"`
}
