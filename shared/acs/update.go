package acs

import "encoding/json"

// Field is an optional, nullable field of a partial update: Set says
// whether it was given, a nil Value clears it.
type Field[T any] struct {
	Set   bool
	Value *T
}

// ConversationUpdate is a partial update of a conversation (PATCH) whose
// fields are each valid on their own.
type ConversationUpdate struct {
	// Title renames the conversation (never nil when Set).
	Title              Field[string]
	SelectedRepository Field[string]
	SelectedBranch     Field[string]
	GitProvider        Field[string]
	Public             Field[bool]
}

// JSONField is an optional, nullable JSON object of a partial update: Set
// says whether it was given, a JSON null Value clears it.
type JSONField struct {
	Set   bool
	Value json.RawMessage
}

// SettingsUpdate is a partial update of a user's settings (fields left
// unset are kept) whose values are each valid.
type SettingsUpdate struct {
	SandboxGroupingStrategy *GroupingStrategy
	LLMModel                Field[string]
	LLMBaseURL              Field[string]
	// LLMAPIKey is sealed before it is stored; null clears it.
	LLMAPIKey Field[string]
	// ConfirmationPolicySet says ConfirmationPolicy was given (nil clears).
	ConfirmationPolicySet      bool
	ConfirmationPolicy         json.RawMessage
	MaxConversationsPerSandbox *int
	// UI sets the web frontend's own fields by name (a JSON null removes
	// one).
	UI map[string]json.RawMessage
	// AgentSettings and ConversationSettings, when Set, merge into the
	// stored objects (RFC 7386; null clears them); the *Diff forms are
	// merged after. The LLM model, base URL and key never stay in the
	// stored agent settings (they go through LLMModel, LLMBaseURL and
	// LLMAPIKey).
	AgentSettings, ConversationSettings         JSONField
	AgentSettingsDiff, ConversationSettingsDiff json.RawMessage
	// SearchAPIKey is sealed before it is stored; null clears it.
	SearchAPIKey Field[string]
}
