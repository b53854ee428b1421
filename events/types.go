package events

import (
	"encoding/json"

	"github.com/acs-project/acs/events/strictjson"
)

// ValidationError is one problem in a request, as in a 422 body.
type ValidationError = strictjson.Error

// HTTPValidationError is the 422 response body.
type HTTPValidationError struct {
	Detail []ValidationError `json:"detail"`
}

// Source says who produced an event.
type Source string

// The event sources.
const (
	SourceAgent       Source = "agent"
	SourceUser        Source = "user"
	SourceEnvironment Source = "environment"
)

// EnumValues implements strictjson.Enum.
func (Source) EnumValues() []string { return []string{"agent", "user", "environment"} }

// SecurityRisk is the risk of an action, ordered UNKNOWN < LOW < MEDIUM < HIGH.
type SecurityRisk string

// The security risks.
const (
	RiskUnknown SecurityRisk = "UNKNOWN"
	RiskLow     SecurityRisk = "LOW"
	RiskMedium  SecurityRisk = "MEDIUM"
	RiskHigh    SecurityRisk = "HIGH"
)

// EnumValues implements strictjson.Enum.
func (SecurityRisk) EnumValues() []string { return []string{"UNKNOWN", "LOW", "MEDIUM", "HIGH"} }

// Level orders risks: UNKNOWN 0, LOW 1, MEDIUM 2, HIGH 3.
func (r SecurityRisk) Level() int {
	switch r {
	case RiskLow:
		return 1
	case RiskMedium:
		return 2
	case RiskHigh:
		return 3
	}
	return 0
}

// EventSortOrder orders event searches.
type EventSortOrder string

// The sort orders.
const (
	SortTimestamp     EventSortOrder = "TIMESTAMP"
	SortTimestampDesc EventSortOrder = "TIMESTAMP_DESC"
)

// EnumValues implements strictjson.Enum.
func (EventSortOrder) EnumValues() []string { return []string{"TIMESTAMP", "TIMESTAMP_DESC"} }

// Role is the role of an LLM message.
type Role string

// The message roles.
const (
	RoleUser      Role = "user"
	RoleSystem    Role = "system"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// EnumValues implements strictjson.Enum.
func (Role) EnumValues() []string { return []string{"user", "system", "assistant", "tool"} }

// ToolCallOrigin says which LLM API produced a tool call.
type ToolCallOrigin string

// The tool call origins.
const (
	OriginCompletion ToolCallOrigin = "completion"
	OriginResponses  ToolCallOrigin = "responses"
)

// EnumValues implements strictjson.Enum.
func (ToolCallOrigin) EnumValues() []string { return []string{"completion", "responses"} }

// Content is an item of Message.content: *TextContent or *ImageContent,
// discriminated by "type" ("text" when absent).
type Content interface{ contentType() string }

// TextContent is a block of text.
type TextContent struct {
	CachePrompt bool   `json:"cache_prompt"`
	Type        string `json:"type" acs:"const=text"`
	Text        string `json:"text" acs:"required"`
}

func (*TextContent) contentType() string { return "text" }

// ImageContent is a list of image URLs (http(s) or data: URLs).
type ImageContent struct {
	CachePrompt bool     `json:"cache_prompt"`
	Type        string   `json:"type" acs:"const=image"`
	ImageURLs   []string `json:"image_urls" acs:"required"`
}

func (*ImageContent) contentType() string { return "image" }

// Text returns a TextContent holding s.
func Text(s string) TextContent { return TextContent{Type: "text", Text: s} }

// TextItem returns a Content holding s.
func TextItem(s string) Content { t := Text(s); return &t }

// ThinkingItem is an item of thinking_blocks: *ThinkingBlock or
// *RedactedThinkingBlock, discriminated by "type".
type ThinkingItem interface{ thinkingType() string }

// ThinkingBlock is a block of model reasoning.
type ThinkingBlock struct {
	Type      string  `json:"type" acs:"const=thinking"`
	Thinking  string  `json:"thinking" acs:"required"`
	Signature *string `json:"signature"`
}

func (*ThinkingBlock) thinkingType() string { return "thinking" }

// RedactedThinkingBlock is reasoning the provider returned encrypted.
type RedactedThinkingBlock struct {
	Type string `json:"type" acs:"const=redacted_thinking"`
	Data string `json:"data" acs:"required"`
}

func (*RedactedThinkingBlock) thinkingType() string { return "redacted_thinking" }

// ReasoningItemModel is a reasoning item of the Responses API.
// EncryptedContent must never be logged or rendered.
type ReasoningItemModel struct {
	ID               *string  `json:"id"`
	Summary          []string `json:"summary"`
	Content          []string `json:"content" acs:"nullable"`
	EncryptedContent *string  `json:"encrypted_content"`
	Status           *string  `json:"status"`
}

// MessageToolCall is one tool call requested by the LLM. Arguments is the JSON
// text of the arguments.
type MessageToolCall struct {
	ID        string         `json:"id" acs:"required"`
	Name      string         `json:"name" acs:"required"`
	Arguments string         `json:"arguments" acs:"required"`
	Origin    ToolCallOrigin `json:"origin" acs:"required"`
}

// CriticResult is a predicted probability that the work succeeded.
type CriticResult struct {
	Score    float64         `json:"score" acs:"required,ge=0,le=1"`
	Message  *string         `json:"message" acs:"required"`
	Metadata json.RawMessage `json:"metadata" acs:"object,nullable"`
}

// Message is one LLM message.
type Message struct {
	Role                   Role                `json:"role" acs:"required"`
	Content                []Content           `json:"content"`
	ToolCalls              []MessageToolCall   `json:"tool_calls" acs:"nullable"`
	ToolCallID             *string             `json:"tool_call_id"`
	Name                   *string             `json:"name"`
	ReasoningContent       *string             `json:"reasoning_content"`
	ThinkingBlocks         []ThinkingItem      `json:"thinking_blocks"`
	ResponsesReasoningItem *ReasoningItemModel `json:"responses_reasoning_item"`
}

// Text concatenates the message's text content.
func (m *Message) Text() string {
	var s string
	for _, c := range m.Content {
		if t, ok := c.(*TextContent); ok {
			if s != "" {
				s += "\n"
			}
			s += t.Text
		}
	}
	return s
}

// EventPage is one page of an event search.
type EventPage struct {
	Items      []Event `json:"items" acs:"required"`
	NextPageID *string `json:"next_page_id" acs:"emitnull"`
}

func init() {
	strictjson.RegisterUnion[Content](&strictjson.Union{
		Key: "type", Default: "text", Tags: []string{"text", "image"},
		New: func(tag string) (any, bool) {
			switch tag {
			case "text":
				return &TextContent{}, true
			case "image":
				return &ImageContent{}, true
			}
			return nil, false
		},
	})
	strictjson.RegisterUnion[ThinkingItem](&strictjson.Union{
		Key: "type", Default: "thinking", Tags: []string{"thinking", "redacted_thinking"},
		New: func(tag string) (any, bool) {
			switch tag {
			case "thinking":
				return &ThinkingBlock{}, true
			case "redacted_thinking":
				return &RedactedThinkingBlock{}, true
			}
			return nil, false
		},
	})
}
