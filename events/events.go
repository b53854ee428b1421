// Package events is the conversation event model of the ACS interface
// specification: every event kind, action, observation, tool definition and
// nested type, with strict decoding (unknown fields, missing required fields,
// wrong enum values and broken limits are errors naming the field) and a
// canonical, byte-stable encoding. Both halves of ACS share it.
package events

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events/strictjson"
)

// Event is any conversation event. Concrete types are the pointer types of
// this package's event structs (*MessageEvent, *ActionEvent, ...).
type Event interface {
	// Kind is the discriminator, the event's type name.
	Kind() string
	// EventBase gives access to the common fields.
	EventBase() *Base
	// DefaultSource is the source used when none is given; "" means the
	// source is required.
	DefaultSource() Source
}

// Base holds the fields every event has. Events allow no other common fields.
type Base struct {
	ID        string `json:"id" acs:"required,minlen=1"`
	Timestamp Time   `json:"timestamp" acs:"required"`
	Source    Source `json:"source"`
}

// EventBase implements Event.
func (b *Base) EventBase() *Base { return b }

// NewID returns a new event id: a time-ordered UUID (version 7).
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// Condensation records that events were removed from the LLM's view, with an
// optional summary inserted at SummaryOffset.
type Condensation struct {
	Base
	ForgottenEventIDs []string `json:"forgotten_event_ids"`
	Summary           *string  `json:"summary"`
	SummaryOffset     *int     `json:"summary_offset" acs:"ge=0"`
	LLMResponseID     string   `json:"llm_response_id" acs:"required"`
}

// CondensationRequest asks the condenser to condense the history.
type CondensationRequest struct{ Base }

// CondensationSummaryEvent carries a condensation summary in the LLM view.
type CondensationSummaryEvent struct {
	Base
	Summary string `json:"summary" acs:"required"`
}

// ConversationErrorEvent reports that the run loop stopped on an error.
type ConversationErrorEvent struct {
	Base
	Code   string `json:"code" acs:"required"`
	Detail string `json:"detail" acs:"required"`
}

// ConversationStateUpdateEvent carries one changed state field (Key) and its
// new JSON value.
type ConversationStateUpdateEvent struct {
	Base
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value" acs:"nullable"`
}

// LLMCompletionLogEvent carries one LLM completion log (LogData is JSON text).
type LLMCompletionLogEvent struct {
	Base
	Filename  string `json:"filename" acs:"required"`
	LogData   string `json:"log_data" acs:"required"`
	ModelName string `json:"model_name" acs:"default=unknown"`
	UsageID   string `json:"usage_id" acs:"default=default"`
}

// ActionEvent is a tool call the agent made. Action is nil when the call could
// not be turned into an action (unknown tool, invalid arguments).
type ActionEvent struct {
	Base
	Thought                []TextContent       `json:"thought" acs:"required"`
	ReasoningContent       *string             `json:"reasoning_content"`
	ThinkingBlocks         []ThinkingItem      `json:"thinking_blocks"`
	ResponsesReasoningItem *ReasoningItemModel `json:"responses_reasoning_item"`
	Action                 Action              `json:"action" acs:"emitnull"`
	ToolName               string              `json:"tool_name" acs:"required"`
	ToolCallID             string              `json:"tool_call_id" acs:"required"`
	ToolCall               MessageToolCall     `json:"tool_call" acs:"required"`
	LLMResponseID          string              `json:"llm_response_id" acs:"required"`
	SecurityRisk           SecurityRisk        `json:"security_risk" acs:"default=UNKNOWN"`
	CriticResult           *CriticResult       `json:"critic_result"`
	Summary                *string             `json:"summary"`
}

// MessageEvent is a message from the user, the agent or the environment.
type MessageEvent struct {
	Base
	LLMMessage      Message       `json:"llm_message" acs:"required"`
	LLMResponseID   *string       `json:"llm_response_id"`
	ActivatedSkills []string      `json:"activated_skills"`
	ExtendedContent []TextContent `json:"extended_content"`
	Sender          *string       `json:"sender"`
	CriticResult    *CriticResult `json:"critic_result"`
}

// AgentErrorEvent is an error of the agent scaffold tied to one tool call; the
// conversation can continue.
type AgentErrorEvent struct {
	Base
	ToolName   string `json:"tool_name" acs:"required"`
	ToolCallID string `json:"tool_call_id" acs:"required"`
	Error      string `json:"error" acs:"required"`
}

// ObservationEvent is the result of running an action.
type ObservationEvent struct {
	Base
	ToolName    string      `json:"tool_name" acs:"required"`
	ToolCallID  string      `json:"tool_call_id" acs:"required"`
	Observation Observation `json:"observation" acs:"required"`
	ActionID    string      `json:"action_id" acs:"required"`
}

// RejectionSource says who rejected an action.
type RejectionSource string

// The rejection sources.
const (
	RejectedByUser RejectionSource = "user"
	RejectedByHook RejectionSource = "hook"
)

// EnumValues implements strictjson.Enum.
func (RejectionSource) EnumValues() []string { return []string{"user", "hook"} }

// UserRejectObservation records that the user or a hook rejected an action.
type UserRejectObservation struct {
	Base
	ToolName        string          `json:"tool_name" acs:"required"`
	ToolCallID      string          `json:"tool_call_id" acs:"required"`
	RejectionReason string          `json:"rejection_reason" acs:"default=User rejected the action"`
	RejectionSource RejectionSource `json:"rejection_source" acs:"default=user"`
	ActionID        string          `json:"action_id" acs:"required"`
}

// SystemPromptEvent carries the system prompt and the tools offered to the LLM.
type SystemPromptEvent struct {
	Base
	SystemPrompt   TextContent      `json:"system_prompt" acs:"required"`
	Tools          []ToolDefinition `json:"tools" acs:"required"`
	DynamicContext *TextContent     `json:"dynamic_context"`
}

// TokenEvent carries exact prompt and response token ids.
type TokenEvent struct {
	Base
	PromptTokenIDs   []int `json:"prompt_token_ids" acs:"required"`
	ResponseTokenIDs []int `json:"response_token_ids" acs:"required"`
}

// PauseEvent records that the user paused the agent.
type PauseEvent struct{ Base }

// Kind and DefaultSource of every event type.

func (*Condensation) Kind() string                 { return "Condensation" }
func (*CondensationRequest) Kind() string          { return "CondensationRequest" }
func (*CondensationSummaryEvent) Kind() string     { return "CondensationSummaryEvent" }
func (*ConversationErrorEvent) Kind() string       { return "ConversationErrorEvent" }
func (*ConversationStateUpdateEvent) Kind() string { return "ConversationStateUpdateEvent" }
func (*LLMCompletionLogEvent) Kind() string        { return "LLMCompletionLogEvent" }
func (*ActionEvent) Kind() string                  { return "ActionEvent" }
func (*MessageEvent) Kind() string                 { return "MessageEvent" }
func (*AgentErrorEvent) Kind() string              { return "AgentErrorEvent" }
func (*ObservationEvent) Kind() string             { return "ObservationEvent" }
func (*UserRejectObservation) Kind() string        { return "UserRejectObservation" }
func (*SystemPromptEvent) Kind() string            { return "SystemPromptEvent" }
func (*TokenEvent) Kind() string                   { return "TokenEvent" }
func (*PauseEvent) Kind() string                   { return "PauseEvent" }

func (*Condensation) DefaultSource() Source                 { return SourceEnvironment }
func (*CondensationRequest) DefaultSource() Source          { return SourceEnvironment }
func (*CondensationSummaryEvent) DefaultSource() Source     { return SourceEnvironment }
func (*ConversationErrorEvent) DefaultSource() Source       { return "" }
func (*ConversationStateUpdateEvent) DefaultSource() Source { return SourceEnvironment }
func (*LLMCompletionLogEvent) DefaultSource() Source        { return SourceEnvironment }
func (*ActionEvent) DefaultSource() Source                  { return SourceAgent }
func (*MessageEvent) DefaultSource() Source                 { return "" }
func (*AgentErrorEvent) DefaultSource() Source              { return SourceAgent }
func (*ObservationEvent) DefaultSource() Source             { return SourceEnvironment }
func (*UserRejectObservation) DefaultSource() Source        { return SourceEnvironment }
func (*SystemPromptEvent) DefaultSource() Source            { return SourceAgent }
func (*TokenEvent) DefaultSource() Source                   { return "" }
func (*PauseEvent) DefaultSource() Source                   { return SourceUser }

type eventKind struct {
	fqn string
	new func() Event
}

var eventKinds = map[string]eventKind{
	"Condensation":                 {"openhands.sdk.event.condenser.Condensation", func() Event { return &Condensation{} }},
	"CondensationRequest":          {"openhands.sdk.event.condenser.CondensationRequest", func() Event { return &CondensationRequest{} }},
	"CondensationSummaryEvent":     {"openhands.sdk.event.condenser.CondensationSummaryEvent", func() Event { return &CondensationSummaryEvent{} }},
	"ConversationErrorEvent":       {"openhands.sdk.event.conversation_error.ConversationErrorEvent", func() Event { return &ConversationErrorEvent{} }},
	"ConversationStateUpdateEvent": {"openhands.sdk.event.conversation_state.ConversationStateUpdateEvent", func() Event { return &ConversationStateUpdateEvent{} }},
	"LLMCompletionLogEvent":        {"openhands.sdk.event.llm_completion_log.LLMCompletionLogEvent", func() Event { return &LLMCompletionLogEvent{} }},
	"ActionEvent":                  {"openhands.sdk.event.llm_convertible.action.ActionEvent", func() Event { return &ActionEvent{} }},
	"MessageEvent":                 {"openhands.sdk.event.llm_convertible.message.MessageEvent", func() Event { return &MessageEvent{} }},
	"AgentErrorEvent":              {"openhands.sdk.event.llm_convertible.observation.AgentErrorEvent", func() Event { return &AgentErrorEvent{} }},
	"ObservationEvent":             {"openhands.sdk.event.llm_convertible.observation.ObservationEvent", func() Event { return &ObservationEvent{} }},
	"UserRejectObservation":        {"openhands.sdk.event.llm_convertible.observation.UserRejectObservation", func() Event { return &UserRejectObservation{} }},
	"SystemPromptEvent":            {"openhands.sdk.event.llm_convertible.system.SystemPromptEvent", func() Event { return &SystemPromptEvent{} }},
	"TokenEvent":                   {"openhands.sdk.event.token.TokenEvent", func() Event { return &TokenEvent{} }},
	"PauseEvent":                   {"openhands.sdk.event.user_action.PauseEvent", func() Event { return &PauseEvent{} }},
}

// Kinds lists every event kind, sorted.
func Kinds() []string {
	out := make([]string, 0, len(eventKinds))
	for k := range eventKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New returns a zero event of the given kind, or false for an unknown kind.
func New(kind string) (Event, bool) {
	k, ok := eventKinds[kind]
	if !ok {
		return nil, false
	}
	return k.new(), true
}

// ResolveKind maps a kind filter value to the event kind: the short name
// ("MessageEvent") or the reference's fully qualified class name
// ("openhands.sdk.event.llm_convertible.message.MessageEvent").
func ResolveKind(name string) (string, bool) {
	if _, ok := eventKinds[name]; ok {
		return name, true
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		short := name[i+1:]
		if k, ok := eventKinds[short]; ok && k.fqn == name {
			return short, true
		}
	}
	return "", false
}

// QualifiedKind returns the reference's fully qualified class name of a kind.
func QualifiedKind(kind string) string { return eventKinds[kind].fqn }

func init() {
	strictjson.RegisterUnion[Event](&strictjson.Union{
		Key:  "kind",
		Tags: Kinds(),
		New: func(tag string) (any, bool) {
			ev, ok := New(tag)
			return ev, ok
		},
		After: func(v any, present func(string) bool) []strictjson.Error {
			ev := v.(Event)
			b := ev.EventBase()
			if !present("source") {
				def := ev.DefaultSource()
				if def == "" {
					return []strictjson.Error{{Loc: []any{"source"}, Msg: "Field required", Type: "missing"}}
				}
				b.Source = def
			}
			return nil
		},
	})
}

// envelope lets the Decode functions go through a registered union.
type envelope[I any] struct {
	V I `json:"v" acs:"required"`
}

// decodeUnion decodes one value of a registered union interface strictly;
// error locations start at the value's own fields.
func decodeUnion[I any](data []byte) (I, error) {
	var zero I
	v, err := strictjson.Parse(data)
	if err != nil {
		return zero, strictjson.Errors{strictjson.FieldError(nil, "json_invalid", "JSON decode error: "+err.Error())}
	}
	return decodeUnionValue[I](v)
}

func decodeUnionValue[I any](v strictjson.Value) (I, error) {
	var env envelope[I]
	wrapped := strictjson.Value{Kind: strictjson.Object, Members: []strictjson.Member{{Key: "v", Value: v}}}
	if err := strictjson.DecodeValue(wrapped, &env); err != nil {
		if es, ok := err.(strictjson.Errors); ok {
			for i := range es {
				es[i].Loc = es[i].Loc[1:]
			}
		}
		return env.V, err
	}
	return env.V, nil
}

// Decode decodes one event strictly. Errors are strictjson.Errors whose
// locations start at the event's fields (e.g. "action.index").
func Decode(data []byte) (Event, error) { return decodeUnion[Event](data) }

// DecodeValue decodes one already parsed event strictly.
func DecodeValue(v strictjson.Value) (Event, error) { return decodeUnionValue[Event](v) }

// DecodeActionJSON decodes one action, with its "kind", strictly.
func DecodeActionJSON(data []byte) (Action, error) { return decodeUnion[Action](data) }

// DecodeObservation decodes one observation, with its "kind", strictly.
func DecodeObservation(data []byte) (Observation, error) { return decodeUnion[Observation](data) }

// Encode returns the canonical JSON of an event.
func Encode(ev Event) ([]byte, error) { return strictjson.Marshal(ev) }

// MustEncode is Encode for events built in code; it panics on an encoding
// error, which only a NaN score or invalid raw JSON can cause.
func MustEncode(ev Event) []byte { return strictjson.MustMarshal(ev) }

// Stamp gives ev a new id and the current time when they are unset, and its
// default source when none is set. It returns ev.
func Stamp[E Event](ev E) E {
	b := ev.EventBase()
	if b.ID == "" {
		b.ID = NewID()
	}
	if b.Timestamp.IsZero() {
		b.Timestamp = Now()
	}
	if b.Source == "" {
		b.Source = ev.DefaultSource()
	}
	return ev
}

// SearchText returns the lower-cased text that the events search "body"
// filter matches: for a MessageEvent its content text, extended content and
// reasoning content; "" for other kinds.
func SearchText(ev Event) string {
	m, ok := ev.(*MessageEvent)
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(m.LLMMessage.Text())
	for _, t := range m.ExtendedContent {
		b.WriteByte('\n')
		b.WriteString(t.Text)
	}
	if m.LLMMessage.ReasoningContent != nil {
		b.WriteByte('\n')
		b.WriteString(*m.LLMMessage.ReasoningContent)
	}
	return strings.ToLower(b.String())
}
