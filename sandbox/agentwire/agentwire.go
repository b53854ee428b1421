// Package agentwire holds the agent server's request and response types, shared by
// the agent server and the control plane's client. Requests decode strictly
// with strictjson (unknown keys are 422 errors).
package agentwire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/pathguard"
	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
)

// ExecutionStatus is a conversation's agent state, in the reference's
// lower-case wire form.
type ExecutionStatus string

// The execution statuses. Deleting only appears in webhook payloads.
const (
	StatusIdle                   ExecutionStatus = "idle"
	StatusRunning                ExecutionStatus = "running"
	StatusPaused                 ExecutionStatus = "paused"
	StatusWaitingForConfirmation ExecutionStatus = "waiting_for_confirmation"
	StatusFinished               ExecutionStatus = "finished"
	StatusError                  ExecutionStatus = "error"
	StatusStuck                  ExecutionStatus = "stuck"
	StatusDeleting               ExecutionStatus = "deleting"
)

// EnumValues implements strictjson.Enum.
func (ExecutionStatus) EnumValues() []string {
	return []string{"idle", "running", "paused", "waiting_for_confirmation", "finished", "error", "stuck", "deleting"}
}

// Terminal reports whether the status ends a run for good (finished, error,
// stuck).
func (s ExecutionStatus) Terminal() bool {
	return s == StatusFinished || s == StatusError || s == StatusStuck
}

// ToolRef names a tool to enable, with its parameters.
type ToolRef struct {
	Name   string          `json:"name" acs:"required,minlen=1"`
	Params json.RawMessage `json:"params" acs:"object,default={}"`
}

// AgentContext carries skills, prompt suffixes and secrets for the agent.
type AgentContext struct {
	Skills              []json.RawMessage       `json:"skills"`
	SystemMessageSuffix *string                 `json:"system_message_suffix"`
	UserMessageSuffix   *string                 `json:"user_message_suffix"`
	Secrets             map[string]SecretSource `json:"secrets" acs:"nullable"`
	// LoadUserSkills (user and organisation skills) and LoadProjectSkills
	// default to true in ACS (false in the reference, where clients must
	// remember to ask for AGENTS.md).
	LoadUserSkills    bool            `json:"load_user_skills" acs:"default=true"`
	LoadPublicSkills  bool            `json:"load_public_skills"`
	LoadProjectSkills bool            `json:"load_project_skills" acs:"default=true"`
	MarketplacePath   *string         `json:"marketplace_path"`
	CurrentDatetime   json.RawMessage `json:"current_datetime" acs:"nullable"`
}

// Agent is the agent configuration of a conversation.
type Agent struct {
	Kind                   string           `json:"kind" acs:"default=Agent"`
	LLM                    llmconfig.Config `json:"llm" acs:"required"`
	Tools                  []ToolRef        `json:"tools"`
	MCPConfig              json.RawMessage  `json:"mcp_config" acs:"object,nullable"`
	FilterToolsRegex       *string          `json:"filter_tools_regex"`
	AgentContext           *AgentContext    `json:"agent_context"`
	SystemPromptFilename   *string          `json:"system_prompt_filename"`
	SecurityPolicyFilename *string          `json:"security_policy_filename"`
	SystemPromptKwargs     json.RawMessage  `json:"system_prompt_kwargs" acs:"object,nullable"`
	Condenser              *Condenser       `json:"condenser"`
	Critic                 json.RawMessage  `json:"critic" acs:"object,nullable"`
	IncludeDefaultTools    []string         `json:"include_default_tools" acs:"nullable"`
}

// ValidateStrict accepts the two agent kinds.
func (a *Agent) ValidateStrict() []strictjson.Error {
	if a.Kind != "Agent" {
		return []strictjson.Error{{Loc: []any{"kind"}, Msg: "Input should be 'Agent' (ACP agents are not supported)", Type: "literal_error"}}
	}
	return nil
}

// Redact returns a copy with secrets replaced by "**********".
func (a Agent) Redact() Agent {
	a.LLM = a.LLM.Redact()
	if a.AgentContext != nil {
		ctx := *a.AgentContext
		ctx.Secrets = RedactSecrets(ctx.Secrets)
		a.AgentContext = &ctx
	}
	return a
}

// Workspace is where a conversation works.
type Workspace struct {
	Kind       *string `json:"kind"`
	Type       *string `json:"type"` // sent by the TypeScript client; ignored
	WorkingDir string  `json:"working_dir" acs:"required,minlen=1"`
}

// ValidateStrict requires an absolute working directory that a directory
// can have (no NUL byte, at most pathguard.PathMax bytes, no name over
// pathguard.NameMax bytes).
func (w *Workspace) ValidateStrict() []strictjson.Error {
	if !strings.HasPrefix(w.WorkingDir, "/") {
		return []strictjson.Error{{Loc: []any{"working_dir"}, Msg: "working_dir must be an absolute path", Type: "value_error"}}
	}
	if err := pathguard.Check(w.WorkingDir); err != nil {
		return []strictjson.Error{{Loc: []any{"working_dir"}, Msg: "Value error, " + err.Error(), Type: "value_error"}}
	}
	return nil
}

// ConfirmationPolicyKind is one of the three policies.
type ConfirmationPolicyKind string

// EnumValues implements strictjson.Enum.
func (ConfirmationPolicyKind) EnumValues() []string {
	return []string{"NeverConfirm", "AlwaysConfirm", "ConfirmRisky"}
}

// ConfirmationPolicy decides which actions wait for the user's approval.
type ConfirmationPolicy struct {
	Kind           ConfirmationPolicyKind `json:"kind" acs:"required"`
	Threshold      *events.SecurityRisk   `json:"threshold"`
	ConfirmUnknown *bool                  `json:"confirm_unknown"`
}

// ValidateStrict allows threshold and confirm_unknown only for ConfirmRisky,
// fills their defaults (HIGH, true) and refuses an UNKNOWN threshold.
func (p *ConfirmationPolicy) ValidateStrict() []strictjson.Error {
	if p.Kind != "ConfirmRisky" {
		var errs []strictjson.Error
		if p.Threshold != nil {
			errs = append(errs, strictjson.Error{Loc: []any{"threshold"}, Msg: "Extra inputs are not permitted", Type: "extra_forbidden"})
		}
		if p.ConfirmUnknown != nil {
			errs = append(errs, strictjson.Error{Loc: []any{"confirm_unknown"}, Msg: "Extra inputs are not permitted", Type: "extra_forbidden"})
		}
		return errs
	}
	if p.Threshold == nil {
		h := events.RiskHigh
		p.Threshold = &h
	}
	if *p.Threshold == events.RiskUnknown {
		return []strictjson.Error{{Loc: []any{"threshold"}, Msg: "Threshold cannot be UNKNOWN", Type: "value_error"}}
	}
	if p.ConfirmUnknown == nil {
		t := true
		p.ConfirmUnknown = &t
	}
	return nil
}

// NeverConfirm is the default policy.
func NeverConfirm() ConfirmationPolicy { return ConfirmationPolicy{Kind: "NeverConfirm"} }

// SecretHidden stands for a secret's value wherever one is masked: in what
// the agent server writes or serves, and in titles the control plane stores.
const SecretHidden = "<secret-hidden>"

// SecretSource is a per-conversation secret: a static value or a URL to fetch
// it from. On the wire it may be a plain string, {"value": ...},
// {"kind":"StaticSecret","value":...} or
// {"kind":"LookupSecret","url":...,"headers":{...}}.
type SecretSource struct {
	Kind        string            // StaticSecret or LookupSecret
	Value       string            // StaticSecret
	URL         string            // LookupSecret
	Headers     map[string]string // LookupSecret
	Description string
}

// DecodeStrict implements strictjson.ValueDecoder.
func (s *SecretSource) DecodeStrict(v strictjson.Value) *strictjson.Error {
	*s = SecretSource{}
	if v.Kind == strictjson.String {
		s.Kind, s.Value = "StaticSecret", v.Str
		return nil
	}
	if v.Kind != strictjson.Object {
		return &strictjson.Error{Msg: "Input should be a string or a secret source object", Type: "model_type"}
	}
	var raw struct {
		Kind        *string           `json:"kind"`
		Value       *string           `json:"value"`
		URL         *string           `json:"url"`
		Headers     map[string]string `json:"headers" acs:"nullable"`
		Description *string           `json:"description"`
	}
	if err := strictjson.DecodeValue(v, &raw); err != nil {
		es := err.(strictjson.Errors)
		e := es[0]
		return &e
	}
	kind := "StaticSecret"
	if raw.Kind != nil {
		kind = *raw.Kind
	}
	if raw.Description != nil {
		s.Description = *raw.Description
	}
	switch kind {
	case "StaticSecret":
		if raw.Value == nil {
			return &strictjson.Error{Loc: []any{"value"}, Msg: "Field required", Type: "missing"}
		}
		if raw.URL != nil || raw.Headers != nil {
			return &strictjson.Error{Loc: []any{"url"}, Msg: "Extra inputs are not permitted for StaticSecret", Type: "extra_forbidden"}
		}
		s.Kind, s.Value = kind, *raw.Value
	case "LookupSecret":
		if raw.URL == nil {
			return &strictjson.Error{Loc: []any{"url"}, Msg: "Field required", Type: "missing"}
		}
		if raw.Value != nil {
			return &strictjson.Error{Loc: []any{"value"}, Msg: "Extra inputs are not permitted for LookupSecret", Type: "extra_forbidden"}
		}
		s.Kind, s.URL, s.Headers = kind, *raw.URL, raw.Headers
	default:
		return &strictjson.Error{Loc: []any{"kind"}, Msg: strictjson.EnumMessage([]string{"StaticSecret", "LookupSecret"}), Type: "enum"}
	}
	return nil
}

// AppendStrictJSON implements strictjson.ValueEncoder (the stored form, with
// the value).
func (s SecretSource) AppendStrictJSON(b []byte) ([]byte, error) {
	type static struct {
		Kind        string  `json:"kind"`
		Value       string  `json:"value"`
		Description *string `json:"description"`
	}
	type lookup struct {
		Kind        string            `json:"kind"`
		URL         string            `json:"url"`
		Headers     map[string]string `json:"headers"`
		Description *string           `json:"description"`
	}
	var desc *string
	if s.Description != "" {
		desc = &s.Description
	}
	if s.Kind == "LookupSecret" {
		return strictjson.Append(b, lookup{Kind: s.Kind, URL: s.URL, Headers: s.Headers, Description: desc})
	}
	return strictjson.Append(b, static{Kind: "StaticSecret", Value: s.Value, Description: desc})
}

// RedactSecrets returns the secrets with values and headers replaced by
// "**********".
func RedactSecrets(in map[string]SecretSource) map[string]SecretSource {
	if in == nil {
		return nil
	}
	out := make(map[string]SecretSource, len(in))
	for k, v := range in {
		if v.Kind == "LookupSecret" {
			h := map[string]string{}
			for hk := range v.Headers {
				h[hk] = llmconfig.Redacted
			}
			v.Headers = h
		} else {
			v.Value = llmconfig.Redacted
		}
		out[k] = v
	}
	return out
}

// SendMessageRequest is a user message, optionally starting a run.
type SendMessageRequest struct {
	Role    events.Role      `json:"role" acs:"default=user"`
	Content []events.Content `json:"content"`
	Run     bool             `json:"run"`
}

// ValidateStrict accepts only user messages with at least one content item
// (the reference turns other roles into a 500; ACS refuses them with 422).
func (m *SendMessageRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if m.Role != events.RoleUser {
		errs = append(errs, strictjson.Error{Loc: []any{"role"}, Msg: "Input should be 'user'", Type: "literal_error"})
	}
	if len(m.Content) == 0 {
		errs = append(errs, strictjson.Error{Loc: []any{"content"}, Msg: "List should have at least 1 item after validation, not 0", Type: "too_short"})
	}
	return errs
}

// Plugin attaches skills, hooks and MCP tool servers to a conversation. Its
// source is a directory of the sandbox (absolute, or relative to the working
// directory), a file:// URL, a git URL, or github:owner/repo; ref selects a
// branch or tag of a git source and repo_path a directory inside it. The
// plugin directory may hold .mcp.json (tool servers, where ${SKILL_ROOT} is
// the plugin directory), skills/ and hooks/hooks.json. mcp_servers adds tool
// servers inline; a source starting with "inline" (e.g. "inline:github")
// has no directory, only those servers. ${NAME} placeholders in tool-server configuration are
// filled from the conversation's secrets when the servers start.
type Plugin struct {
	Source     string          `json:"source" acs:"required,minlen=1"`
	Ref        *string         `json:"ref"`
	RepoPath   *string         `json:"repo_path"`
	Parameters json.RawMessage `json:"parameters" acs:"object,nullable"`
	MCPServers json.RawMessage `json:"mcp_servers" acs:"object,nullable"`
}

// StartConversationRequest creates a conversation on the agent server.
type StartConversationRequest struct {
	Agent                 *Agent                  `json:"agent"`
	AgentSettings         json.RawMessage         `json:"agent_settings" acs:"object,nullable"`
	AgentProfileID        *string                 `json:"agent_profile_id"`
	Workspace             Workspace               `json:"workspace" acs:"required"`
	ConversationID        *string                 `json:"conversation_id"`
	ParentConversationID  *string                 `json:"parent_conversation_id"`
	ConfirmationPolicy    *ConfirmationPolicy     `json:"confirmation_policy"`
	SecurityAnalyzer      json.RawMessage         `json:"security_analyzer" acs:"object,nullable"`
	InitialMessage        *SendMessageRequest     `json:"initial_message"`
	MaxIterations         int                     `json:"max_iterations" acs:"default=500,ge=1"`
	StuckDetection        bool                    `json:"stuck_detection" acs:"default=true"`
	Secrets               map[string]SecretSource `json:"secrets" acs:"nullable"`
	SecretsEncrypted      *bool                   `json:"secrets_encrypted"`
	ToolModuleQualnames   json.RawMessage         `json:"tool_module_qualnames" acs:"nullable"`
	ClientTools           json.RawMessage         `json:"client_tools" acs:"nullable"`
	AgentDefinitions      json.RawMessage         `json:"agent_definitions" acs:"nullable"`
	Plugins               []Plugin                `json:"plugins" acs:"nullable"`
	HookConfig            json.RawMessage         `json:"hook_config" acs:"object,nullable"`
	Tags                  map[string]string       `json:"tags" acs:"nullable"`
	UserID                *string                 `json:"user_id"`
	ObservabilitySpanName *string                 `json:"observability_span_name"`
	ObservabilityTags     []string                `json:"observability_tags" acs:"nullable"`
	ObservabilityMetadata json.RawMessage         `json:"observability_metadata" acs:"object,nullable"`
	Autotitle             bool                    `json:"autotitle" acs:"default=true"`
	TitleLLMProfile       *string                 `json:"title_llm_profile"`
	Worktree              bool                    `json:"worktree"`
	AgentLaunchAdditions  json.RawMessage         `json:"agent_launch_additions" acs:"nullable"`
}

// ValidateStrict checks ids, tags, observability metadata and that an agent
// is given.
func (r *StartConversationRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if r.Agent == nil {
		if r.AgentSettings != nil || r.AgentProfileID != nil {
			errs = append(errs, strictjson.Error{Loc: []any{"agent"}, Msg: "agent_settings and agent_profile_id are not supported; send agent", Type: "value_error"})
		} else {
			errs = append(errs, strictjson.Error{Loc: []any{"agent"}, Msg: "Field required", Type: "missing"})
		}
	}
	for _, p := range []struct {
		name string
		v    *string
	}{{"conversation_id", r.ConversationID}, {"parent_conversation_id", r.ParentConversationID}} {
		if p.v != nil {
			if _, err := ParseID(*p.v); err != nil {
				errs = append(errs, strictjson.Error{Loc: []any{p.name}, Msg: err.Error(), Type: "uuid_parsing"})
			}
		}
	}
	for k, v := range r.Tags {
		if !validTagKey(k) {
			errs = append(errs, strictjson.Error{Loc: []any{"tags", k}, Msg: "Tag keys must be lower-case letters and digits", Type: "value_error"})
		}
		if len([]rune(v)) > 256 {
			errs = append(errs, strictjson.Error{Loc: []any{"tags", k}, Msg: "String should have at most 256 characters", Type: "string_too_long"})
		}
	}
	if r.ObservabilityMetadata != nil {
		errs = append(errs, ValidateObservabilityMetadata(r.ObservabilityMetadata)...)
	}
	return errs
}

func validTagKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ParseID parses a conversation id in dashed or hex (32 characters) form.
func ParseID(s string) (uuid.UUID, error) {
	u, err := uuid.Parse(s)
	if err != nil || (len(s) != 36 && len(s) != 32) {
		return uuid.UUID{}, fmt.Errorf("Input should be a valid UUID, got %q", truncate(s, 64))
	}
	return u, nil
}

// Hex is the 32-character form of a UUID.
func Hex(u uuid.UUID) string { return strings.ReplaceAll(u.String(), "-", "") }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// TokenUsage is accumulated token usage.
type TokenUsage struct {
	Model            string `json:"model"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	CacheReadTokens  int64  `json:"cache_read_tokens"`
	CacheWriteTokens int64  `json:"cache_write_tokens"`
	ReasoningTokens  int64  `json:"reasoning_tokens"`
	ContextWindow    int64  `json:"context_window"`
	PerTurnToken     int64  `json:"per_turn_token"`
	ResponseID       string `json:"response_id"`
}

// Metrics is the usage of one LLM (MetricsSnapshot in the reference).
type Metrics struct {
	ModelName             string     `json:"model_name"`
	AccumulatedCost       float64    `json:"accumulated_cost"`
	MaxBudgetPerTask      *float64   `json:"max_budget_per_task" acs:"emitnull"`
	AccumulatedTokenUsage TokenUsage `json:"accumulated_token_usage"`
}

// Stats is usage per LLM usage id.
type Stats struct {
	UsageToMetrics map[string]*Metrics `json:"usage_to_metrics"`
}

// Combined sums every LLM's metrics (model name of the first).
func (s Stats) Combined() Metrics {
	var m Metrics
	m.ModelName = "default"
	for _, id := range sortedKeys(s.UsageToMetrics) {
		u := s.UsageToMetrics[id]
		if m.ModelName == "default" && u.ModelName != "" {
			m.ModelName = u.ModelName
		}
		m.AccumulatedCost += u.AccumulatedCost
		if u.MaxBudgetPerTask != nil {
			m.MaxBudgetPerTask = u.MaxBudgetPerTask
		}
		t := &m.AccumulatedTokenUsage
		t.PromptTokens += u.AccumulatedTokenUsage.PromptTokens
		t.CompletionTokens += u.AccumulatedTokenUsage.CompletionTokens
		t.CacheReadTokens += u.AccumulatedTokenUsage.CacheReadTokens
		t.CacheWriteTokens += u.AccumulatedTokenUsage.CacheWriteTokens
		t.ReasoningTokens += u.AccumulatedTokenUsage.ReasoningTokens
		t.ContextWindow = max(t.ContextWindow, u.AccumulatedTokenUsage.ContextWindow)
		t.PerTurnToken = u.AccumulatedTokenUsage.PerTurnToken
		t.ResponseID = u.AccumulatedTokenUsage.ResponseID
		t.Model = u.AccumulatedTokenUsage.Model
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// SecretRegistry lists the conversation's secrets (values redacted in
// responses).
type SecretRegistry struct {
	SecretSources map[string]SecretSource `json:"secret_sources"`
}

// ConversationInfo is the agent server's view of a conversation.
type ConversationInfo struct {
	ID                       string             `json:"id"`
	Agent                    Agent              `json:"agent"`
	Workspace                Workspace          `json:"workspace"`
	PersistenceDir           string             `json:"persistence_dir"`
	MaxIterations            int                `json:"max_iterations"`
	StuckDetection           bool               `json:"stuck_detection"`
	ExecutionStatus          ExecutionStatus    `json:"execution_status"`
	ConfirmationPolicy       ConfirmationPolicy `json:"confirmation_policy"`
	SecurityAnalyzer         json.RawMessage    `json:"security_analyzer" acs:"nullable"`
	ActivatedKnowledgeSkills []string           `json:"activated_knowledge_skills"`
	InvokedSkills            []string           `json:"invoked_skills"`
	BlockedActions           map[string]string  `json:"blocked_actions"`
	BlockedMessages          map[string]string  `json:"blocked_messages"`
	LastUserMessageID        *string            `json:"last_user_message_id"`
	LeafEventID              *string            `json:"leaf_event_id" acs:"emitnull"`
	Stats                    Stats              `json:"stats"`
	SecretRegistry           SecretRegistry     `json:"secret_registry"`
	AgentState               map[string]string  `json:"agent_state"`
	HookConfig               json.RawMessage    `json:"hook_config" acs:"nullable"`
	Title                    *string            `json:"title"`
	Metrics                  *Metrics           `json:"metrics"`
	CreatedAt                events.Time        `json:"created_at"`
	UpdatedAt                events.Time        `json:"updated_at"`
	Tags                     map[string]string  `json:"tags"`
	ForkedFromConversationID *string            `json:"forked_from_conversation_id"`
	ForkedFromEventID        *string            `json:"forked_from_event_id"`
	ParentConversationID     *string            `json:"parent_conversation_id"`
	SubConversationIDs       []string           `json:"sub_conversation_ids"`
	CurrentModelID           *string            `json:"current_model_id"`
	AvailableModels          []string           `json:"available_models"`
	SupportsRuntimeModel     bool               `json:"supports_runtime_model_switch"`
	LaunchedAgentProfile     json.RawMessage    `json:"launched_agent_profile" acs:"nullable"`
	ClientTools              json.RawMessage    `json:"client_tools" acs:"nullable"`
	Observability            *ObservabilityInfo `json:"observability"`
	// Goal is the status of the conversation's goal loop (absent when it
	// never had one).
	Goal *GoalStatus `json:"goal"`
}

// ConversationPage is a page of GET /api/conversations/search.
type ConversationPage struct {
	Items      []ConversationInfo `json:"items"`
	NextPageID *string            `json:"next_page_id" acs:"emitnull"`
}

// ObservabilityInfo echoes the conversation's tracing settings.
type ObservabilityInfo struct {
	SpanName *string         `json:"span_name"`
	Tags     []string        `json:"tags"`
	Metadata json.RawMessage `json:"metadata" acs:"nullable"`
}

// FinalResponse is the body of GET /api/conversations/{id}/agent_final_response
// (and of ask_agent): the agent's text.
type FinalResponse struct {
	Response string `json:"response"`
}

// Success is the body of most mutating routes.
type Success struct {
	Success bool `json:"success"`
}

// ServerInfo is the body of GET /server_info.
type ServerInfo struct {
	Uptime                           int64    `json:"uptime"`
	IdleTime                         int64    `json:"idle_time"`
	Title                            string   `json:"title"`
	Version                          string   `json:"version"`
	SDKVersion                       string   `json:"sdk_version"`
	ToolsVersion                     string   `json:"tools_version"`
	WorkspaceVersion                 string   `json:"workspace_version"`
	BuildGitSHA                      string   `json:"build_git_sha"`
	BuildGitRef                      string   `json:"build_git_ref"`
	GoVersion                        string   `json:"go_version"`
	UsableTools                      []string `json:"usable_tools"`
	RuntimeIdleTimeoutSeconds        *int64   `json:"runtime_idle_timeout_seconds" acs:"emitnull"`
	Capabilities                     []string `json:"capabilities"`
	MaxForegroundTerminalTimeoutSecs *int64   `json:"max_foreground_terminal_timeout_seconds" acs:"emitnull"`
	Docs                             *string  `json:"docs" acs:"emitnull"`
	Redoc                            *string  `json:"redoc" acs:"emitnull"`
	Implementation                   string   `json:"implementation"`
	ConversationCount                int      `json:"conversation_count"`
	RunningConversationCount         int      `json:"running_conversation_count"`
	Started                          string   `json:"started_at"`
	ProcessID                        int      `json:"pid"`
}

// Clone returns a deep copy.
func (s Stats) Clone() Stats {
	out := Stats{UsageToMetrics: make(map[string]*Metrics, len(s.UsageToMetrics))}
	for k, m := range s.UsageToMetrics {
		c := *m
		if m.MaxBudgetPerTask != nil {
			v := *m.MaxBudgetPerTask
			c.MaxBudgetPerTask = &v
		}
		out.UsageToMetrics[k] = &c
	}
	return out
}

// CondenserKind selects how history is condensed.
type CondenserKind string

// EnumValues implements strictjson.Enum.
func (CondenserKind) EnumValues() []string {
	return []string{"LLMSummarizingCondenser", "NoOpCondenser"}
}

// Condenser configures history condensation. LLMSummarizingCondenser keeps
// the first KeepFirst events, forgets a middle slice and inserts an LLM
// summary of it when the view exceeds MaxSize events (or MaxTokens prompt
// tokens), when asked, or when the context window overflows.
type Condenser struct {
	Kind            CondenserKind     `json:"kind" acs:"required"`
	LLM             *llmconfig.Config `json:"llm"`
	MaxSize         int               `json:"max_size" acs:"default=240,ge=4"`
	KeepFirst       int               `json:"keep_first" acs:"default=2,ge=0"`
	MaxTokens       *int              `json:"max_tokens" acs:"ge=1"`
	MinimumProgress float64           `json:"minimum_progress" acs:"default=0.1,ge=0,le=1"`
}

// ValidateStrict requires an LLM for the summarizing condenser and
// keep_first < max_size/2.
func (c *Condenser) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if c.Kind == "LLMSummarizingCondenser" && c.LLM == nil {
		errs = append(errs, strictjson.Error{Loc: []any{"llm"}, Msg: "Field required for LLMSummarizingCondenser", Type: "missing"})
	}
	if c.KeepFirst >= c.MaxSize/2 {
		errs = append(errs, strictjson.Error{Loc: []any{"keep_first"}, Msg: fmt.Sprintf("keep_first must be less than max_size/2 (%d)", c.MaxSize/2), Type: "value_error"})
	}
	return errs
}

// UpdateConversationRequest is the body of PATCH /api/conversations/{id}.
type UpdateConversationRequest struct {
	Title *string           `json:"title" acs:"minlen=1,maxlen=200"`
	Tags  map[string]string `json:"tags" acs:"nullable"`
}

// ValidateStrict checks tag keys and values.
func (r *UpdateConversationRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	for k, v := range r.Tags {
		if !validTagKey(k) {
			errs = append(errs, strictjson.Error{Loc: []any{"tags", k}, Msg: "Tag keys must be lower-case letters and digits", Type: "value_error"})
		}
		if len([]rune(v)) > 256 {
			errs = append(errs, strictjson.Error{Loc: []any{"tags", k}, Msg: "String should have at most 256 characters", Type: "string_too_long"})
		}
	}
	return errs
}

// ConfirmationResponse is the body of POST .../events/respond_to_confirmation.
type ConfirmationResponse struct {
	Accept bool   `json:"accept" acs:"required"`
	Reason string `json:"reason" acs:"default=User rejected the action."`
}

// SetConfirmationPolicyRequest is the body of POST .../confirmation_policy.
type SetConfirmationPolicyRequest struct {
	Policy ConfirmationPolicy `json:"policy" acs:"required"`
}

// SetSecurityAnalyzerRequest is the body of POST .../security_analyzer.
type SetSecurityAnalyzerRequest struct {
	SecurityAnalyzer json.RawMessage `json:"security_analyzer" acs:"required,object,nullable"`
}

// UpdateSecretsRequest is the body of POST .../secrets.
type UpdateSecretsRequest struct {
	Secrets map[string]SecretSource `json:"secrets" acs:"required"`
}

// AskAgentRequest is the body of POST .../ask_agent.
type AskAgentRequest struct {
	Question string `json:"question" acs:"required,minlen=1"`
}

// ForkRequest is the body of POST .../fork.
type ForkRequest struct {
	ID           *string           `json:"id"`
	Title        *string           `json:"title" acs:"minlen=1,maxlen=200"`
	Tags         map[string]string `json:"tags" acs:"nullable"`
	ResetMetrics bool              `json:"reset_metrics" acs:"default=true"`
	FromEventID  *string           `json:"from_event_id"`
}

// ValidateStrict checks the id.
func (r *ForkRequest) ValidateStrict() []strictjson.Error {
	if r.ID != nil {
		if _, err := ParseID(*r.ID); err != nil {
			return []strictjson.Error{{Loc: []any{"id"}, Msg: err.Error(), Type: "uuid_parsing"}}
		}
	}
	return nil
}

// ValidateObservabilityMetadata checks observability_metadata: every value
// must be a string, number or boolean, or an array of one of them (all items
// of one type). Errors are located at observability_metadata.<key>[.<index>].
func ValidateObservabilityMetadata(raw json.RawMessage) []strictjson.Error {
	v, err := strictjson.Parse(raw)
	if err != nil {
		return []strictjson.Error{metaErr([]any{"observability_metadata"}, "json_invalid", "invalid JSON")}
	}
	var errs []strictjson.Error
	for _, m := range v.Members {
		loc := []any{"observability_metadata", m.Key}
		switch m.Value.Kind {
		case strictjson.String, strictjson.Number, strictjson.Bool:
		case strictjson.Array:
			var kind strictjson.ValueKind
			for i, e := range m.Value.Elems {
				if e.Kind != strictjson.String && e.Kind != strictjson.Number && e.Kind != strictjson.Bool {
					errs = append(errs, metaErr(append(loc, i), "value_error", "array items must be strings, numbers or booleans"))
					break
				}
				if i == 0 {
					kind = e.Kind
				} else if e.Kind != kind {
					errs = append(errs, metaErr(append(loc, i), "value_error", "arrays must hold one type (string[], number[] or boolean[])"))
					break
				}
			}
		default:
			errs = append(errs, metaErr(loc, "value_error",
				"values must be a string, number, boolean or an array of one of them (not null or an object)"))
		}
	}
	return errs
}

func metaErr(loc []any, typ, msg string) strictjson.Error {
	return strictjson.Error{Loc: loc, Msg: msg, Type: typ}
}
