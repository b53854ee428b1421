package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// Tool is a function offered to the LLM.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of the arguments
}

// Request is one completion request. Its messages are those of Segments,
// in order, then Messages. The client only reads them, so a segment may be
// shared with other requests.
type Request struct {
	Segments [][]events.Message
	Messages []events.Message
	Tools    []Tool
}

// Usage counts the tokens of one completion.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
}

// Response is one completion.
type Response struct {
	ID               string // the llm_response_id of the events it produces
	Model            string
	Content          string
	ReasoningContent string
	ThinkingBlocks   []events.ThinkingItem // the provider's thinking_blocks (Anthropic via LiteLLM)
	ToolCalls        []events.MessageToolCall
	FinishReason     string
	Usage            Usage
	Cost             float64 // USD, from configured prices or the proxy's cost header
	PromptTokenIDs   []int   // only when the endpoint returns token ids
	ResponseTokenIDs []int
	Latency          time.Duration
	RawRequest       json.RawMessage // the request body sent
	RawResponse      json.RawMessage // the response body (non-streaming) or accumulated completion
}

// Delta is a piece of a streamed response.
type Delta struct {
	Content          string
	ReasoningContent string
}

// Error kinds, matched with errors.Is.
var (
	ErrContextWindow = errors.New("context window exceeded")
	ErrAuth          = errors.New("LLM authentication failed")
	ErrRateLimit     = errors.New("LLM rate limited")
	ErrTransient     = errors.New("transient LLM error")
	ErrBadRequest    = errors.New("LLM rejected the request")
	ErrNotConfigured = errors.New("LLM not configured")
	// ErrNotFound is a 404: the model (or the endpoint's path) does not
	// exist there. It does not heal by waiting.
	ErrNotFound = errors.New("LLM model or endpoint not found")
	// ErrConnection is a failure to reach the endpoint at all: its name
	// does not resolve, nothing listens there, or TLS fails. It does not
	// heal by waiting.
	ErrConnection = errors.New("cannot reach the LLM")
	// ErrTimeout is a request that got no answer in time (the config's
	// timeout, or the network's). It may heal: it is retried.
	ErrTimeout = errors.New("LLM request timed out")
)

// Error is an LLM failure with its classification and HTTP status (0 when no
// response arrived).
type Error struct {
	Kind       error
	StatusCode int
	Message    string
	RetryAfter time.Duration
	// Filled in by Client.Complete: the endpoint and model the call went
	// to, and, when retries ran out, how many retries were made and how
	// long they waited in all.
	BaseURL string
	Model   string
	Retries int
	Waited  time.Duration
}

func (e *Error) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%v (HTTP %d): %s", e.Kind, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Kind }

// Retryable reports whether the error is worth retrying: rate limits,
// 408 and 5xx answers, timeouts and dropped connections may heal; a name
// that does not resolve, a refused connection, 401/403, 404 and other 4xx
// answers do not.
func (e *Error) Retryable() bool {
	return e.Kind == ErrTransient || e.Kind == ErrRateLimit || e.Kind == ErrTimeout
}

// Detail is the error as a user reads it in a ConversationErrorEvent: what
// failed and what to change. It never contains the API key (the caller
// masks the key in Message too, see Client.Complete).
func (e *Error) Detail() string {
	where := "the LLM endpoint"
	if e.BaseURL != "" {
		where = "the LLM endpoint " + e.BaseURL
	}
	var b strings.Builder
	switch e.Kind {
	case ErrAuth:
		fmt.Fprintf(&b, "%s refused the API key (HTTP %d): %s. Check LLM_API_KEY, or the API key saved in your LLM settings.", where, e.StatusCode, e.Message)
	case ErrNotFound:
		fmt.Fprintf(&b, "%s does not know model %q (HTTP %d): %s. Check LLM_MODEL (or the model in your LLM settings) and LLM_BASE_URL.", where, e.Model, e.StatusCode, e.Message)
	case ErrConnection:
		fmt.Fprintf(&b, "Cannot reach %s: %s. Check LLM_BASE_URL (unset means OpenAI's hosted API) and the network; to try ACS without a model, run `acs llmtest` and point LLM_BASE_URL at it.", where, e.Message)
	case ErrBadRequest:
		fmt.Fprintf(&b, "%s rejected the request (HTTP %d): %s. Check the model (LLM_MODEL) and its parameters in your LLM settings.", where, e.StatusCode, e.Message)
	case ErrContextWindow:
		fmt.Fprintf(&b, "The conversation no longer fits model %q's context window (HTTP %d): %s. Configure a condenser or start a new conversation.", e.Model, e.StatusCode, e.Message)
	case ErrNotConfigured:
		fmt.Fprintf(&b, "No LLM is configured: %s. Set LLM_MODEL, LLM_BASE_URL and LLM_API_KEY.", e.Message)
	default:
		b.WriteString(e.Error())
	}
	if e.Retries > 0 {
		fmt.Fprintf(&b, " Gave up after %d retries over %s; send a message to try again.", e.Retries, e.Waited.Round(time.Second))
	} else if !e.Retryable() {
		b.WriteString(" Send a message to try again once it is fixed.")
	}
	return b.String()
}

// Reason is a short, key-free description of a retryable failure, for the
// retry notices clients show ("rate limited (HTTP 429)").
func (e *Error) Reason() string {
	switch {
	case e.Kind == ErrRateLimit:
		return fmt.Sprintf("rate limited (HTTP %d): %s", e.StatusCode, e.Message)
	case e.StatusCode != 0:
		return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Message)
}

// Code is a short class name for ConversationErrorEvent.code.
func (e *Error) Code() string {
	switch e.Kind {
	case ErrContextWindow:
		return "LLMContextWindowExceedError"
	case ErrAuth:
		return "LLMAuthenticationError"
	case ErrRateLimit:
		return "LLMRateLimitError"
	case ErrTransient:
		return "LLMServiceUnavailableError"
	case ErrNotConfigured:
		return "LLMNotConfiguredError"
	case ErrNotFound:
		return "LLMNotFoundError"
	case ErrConnection:
		return "LLMConnectionError"
	case ErrTimeout:
		return "LLMTimeoutError"
	}
	return "LLMBadRequestError"
}

// RetryEvent describes a retry the client is about to wait for.
type RetryEvent struct {
	Attempt    int // 1-based number of the retry
	MaxRetries int // the config's num_retries
	Err        *Error
	Wait       time.Duration
}

// Client calls one configured endpoint. It is safe for concurrent use.
type Client struct {
	cfg    Config
	api    *chatAPI
	sleep  func(context.Context, time.Duration) error
	OnWait func(RetryEvent) // optional; called before each backoff wait
}

// New builds a client. A missing base URL uses the OpenAI default.
func New(cfg Config) *Client {
	return &Client{cfg: cfg, api: newChatAPI(cfg), sleep: sleepCtx}
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff is the wait before retry number attempt (1-based): the config's
// backoff (Config.Backoff), and at least the server's Retry-After.
func (c *Client) backoff(attempt int, e *Error) time.Duration {
	d := c.cfg.Backoff(attempt)
	if e.RetryAfter > d {
		d = e.RetryAfter
	}
	return d
}

// Complete sends req and returns the completion. Failures that may heal
// (rate limits, 408, 5xx, timeouts, dropped connections) are retried up to
// NumRetries times with backoff; failures that will not (see
// Error.Retryable) end the call at once. The last failure is returned as
// *Error with the endpoint, the model and the retries made filled in, and
// the API key masked out of its message. When the config has stream=true
// the response is streamed and each piece is passed to onDelta (which may
// be nil). ctx cancellation aborts the call in flight.
func (c *Client) Complete(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	body, err := c.api.body(params, c.cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("encode the LLM request: %w", err)
	}
	// The request is kept only for completion logs: encoding a long history
	// twice per call is not free.
	var raw json.RawMessage
	if c.cfg.LogCompletions {
		raw, _ = json.Marshal(params)
	}
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, body, raw, onDelta)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var le *Error
		if !errors.As(err, &le) {
			return nil, err
		}
		c.annotate(le)
		if !le.Retryable() || attempt >= c.cfg.NumRetries {
			if le.Retryable() {
				le.Retries, le.Waited = attempt, waited
			}
			return nil, err
		}
		wait := c.backoff(attempt+1, le)
		slog.Warn("llm: retrying", "attempt", attempt+1, "wait", wait, "error", le.Error())
		if c.OnWait != nil {
			c.OnWait(RetryEvent{Attempt: attempt + 1, MaxRetries: c.cfg.NumRetries, Err: le, Wait: wait})
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
		waited += wait
	}
}

// annotate fills in where the failed call went and masks the API key out
// of the endpoint's message (some providers echo part of it).
func (c *Client) annotate(e *Error) {
	e.Model = c.cfg.APIModel()
	e.BaseURL = "https://api.openai.com/v1 (the default)"
	if c.cfg.BaseURL != nil && *c.cfg.BaseURL != "" {
		e.BaseURL = *c.cfg.BaseURL
	}
	if c.cfg.APIKey != nil && len(*c.cfg.APIKey) >= 4 {
		e.Message = strings.ReplaceAll(e.Message, *c.cfg.APIKey, "<redacted>")
	}
}

// params is the request for req. When the config streams, it asks for the
// usage in the stream's last chunk.
func (c *Client) params(req Request) (*chatRequest, error) {
	p := &chatRequest{Model: c.cfg.APIModel()}
	for i := range len(req.Segments) + 1 {
		seg := req.Messages
		if i < len(req.Segments) {
			seg = req.Segments[i]
		}
		for _, m := range seg {
			mp, err := messageParam(m)
			if err != nil {
				return nil, err
			}
			p.Messages = append(p.Messages, mp)
		}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, chatTool{Type: "function",
			Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if c.cfg.Temperature != nil {
		p.Temperature = c.cfg.Temperature
	}
	if c.cfg.TopP != nil {
		p.TopP = c.cfg.TopP
	}
	if c.cfg.MaxOutputTokens != nil {
		n := int64(*c.cfg.MaxOutputTokens)
		p.MaxCompletionTokens = &n
	}
	if c.cfg.Seed != nil {
		n := int64(*c.cfg.Seed)
		p.Seed = &n
	}
	if c.cfg.ReasoningEffort != nil && *c.cfg.ReasoningEffort != "" && *c.cfg.ReasoningEffort != "none" {
		p.ReasoningEffort = *c.cfg.ReasoningEffort
	}
	if c.cfg.Stream {
		p.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return p, nil
}

// messageParam is m as a request message: system and tool messages carry
// their text, an assistant turn its text (left out when it is empty and
// there are tool calls), tool calls and thinking blocks, and any other role
// is a user message, of text parts and image parts when it has an image.
// It fails only when the thinking blocks do not encode.
func messageParam(m events.Message) (chatMessage, error) {
	text := m.Text()
	switch m.Role {
	case events.RoleSystem:
		return chatMessage{Role: "system", Content: text}, nil
	case events.RoleTool:
		id := ""
		if m.ToolCallID != nil {
			id = *m.ToolCallID
		}
		return chatMessage{Role: "tool", Content: text, ToolCallID: &id}, nil
	case events.RoleAssistant:
		a := chatMessage{Role: "assistant"}
		if text != "" || len(m.ToolCalls) == 0 {
			a.Content = text
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: tc.ID, Type: "function",
				Function: chatFunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		// Thinking blocks go back with their turn: Anthropic (through
		// LiteLLM) requires a tool-use turn's signed thinking when
		// extended thinking is on. Only a provider that sent them gets
		// them back. reasoning_content is not resent (DeepSeek refuses it).
		if len(m.ThinkingBlocks) > 0 {
			raw, err := strictjson.Marshal(m.ThinkingBlocks)
			if err != nil {
				return chatMessage{}, fmt.Errorf("encode thinking blocks: %w", err)
			}
			a.ThinkingBlocks = raw
		}
		return a, nil
	default:
		var parts []contentPart
		images := false
		for _, ct := range m.Content {
			switch ct := ct.(type) {
			case *events.TextContent:
				parts = append(parts, contentPart{Type: "text", Text: &ct.Text})
			case *events.ImageContent:
				for _, u := range ct.ImageURLs {
					images = true
					parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: u}})
				}
			}
		}
		if !images {
			return chatMessage{Role: "user", Content: text}, nil
		}
		return chatMessage{Role: "user", Content: parts}, nil
	}
}

// once makes one attempt to send body and returns the completion, or the
// failure classified. raw is the request as completion logs keep it. A
// streamed completion passes its pieces to onDelta.
func (c *Client) once(ctx context.Context, body []byte, raw json.RawMessage, onDelta func(Delta)) (*Response, error) {
	start := time.Now()
	reqCtx := ctx
	if c.api.timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, c.api.timeout)
		defer cancel()
	}
	if c.cfg.Stream {
		var acc streamAccumulator
		var reasoning strings.Builder
		var thinking []events.ThinkingItem
		httpResp, err := c.api.stream(reqCtx, body, func(chunk *chatChunk) {
			acc.add(chunk)
			if len(chunk.Choices) == 0 {
				return
			}
			delta := &chunk.Choices[0].Delta
			d := Delta{Content: string(delta.Content)}
			if delta.ReasoningContent != nil {
				var s string
				if json.Unmarshal(delta.ReasoningContent, &s) == nil {
					d.ReasoningContent = s
					reasoning.WriteString(s)
				}
			}
			if delta.ThinkingBlocks != nil {
				thinking = appendThinkingDeltas(thinking, parseThinkingBlocks(delta.ThinkingBlocks))
			}
			if onDelta != nil && (d.Content != "" || d.ReasoningContent != "") {
				onDelta(d)
			}
		})
		if err != nil {
			return nil, classify(ctx, err)
		}
		completion := acc.completion()
		resp := c.convert(completion, httpResp)
		if resp.ReasoningContent == "" {
			resp.ReasoningContent = reasoning.String()
		}
		if len(resp.ThinkingBlocks) == 0 {
			resp.ThinkingBlocks = thinking
		}
		resp.Latency, resp.RawRequest = time.Since(start), raw
		if c.cfg.LogCompletions {
			resp.RawResponse, _ = json.Marshal(completion)
		}
		return resp, nil
	}
	completion, rawResp, httpResp, err := c.api.complete(reqCtx, body)
	if err != nil {
		return nil, classify(ctx, err)
	}
	if len(completion.Choices) == 0 {
		return nil, &Error{Kind: ErrTransient, StatusCode: 200, Message: "the response has no choices"}
	}
	resp := c.convert(completion, httpResp)
	resp.Latency, resp.RawRequest = time.Since(start), raw
	resp.RawResponse = rawResp
	return resp, nil
}

// convert reads the first choice, the token ids, the usage and the cost
// (the configured prices, else the proxy's x-litellm-response-cost header)
// of a completion.
func (c *Client) convert(cc *chatCompletion, httpResp *http.Response) *Response {
	r := &Response{ID: string(cc.ID), Model: string(cc.Model)}
	if r.ID == "" {
		r.ID = "chatcmpl-" + events.NewID()
	}
	if len(cc.Choices) > 0 {
		ch := cc.Choices[0]
		r.Content = string(ch.Message.Content)
		r.FinishReason = string(ch.FinishReason)
		if ch.Message.ReasoningContent != nil {
			var s string
			if json.Unmarshal(ch.Message.ReasoningContent, &s) == nil {
				r.ReasoningContent = s
			}
		}
		if ch.Message.ThinkingBlocks != nil {
			r.ThinkingBlocks = parseThinkingBlocks(ch.Message.ThinkingBlocks)
		}
		for _, tc := range ch.Message.ToolCalls {
			args := string(tc.Function.Arguments)
			if args == "" {
				args = "{}"
			}
			r.ToolCalls = append(r.ToolCalls, events.MessageToolCall{ID: string(tc.ID), Name: string(tc.Function.Name), Arguments: args, Origin: events.OriginCompletion})
		}
		if ch.TokenIDs != nil {
			_ = json.Unmarshal(ch.TokenIDs, &r.ResponseTokenIDs)
		}
	}
	if cc.PromptTokenIDs != nil {
		_ = json.Unmarshal(cc.PromptTokenIDs, &r.PromptTokenIDs)
	}
	u := cc.Usage
	r.Usage = Usage{
		PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens),
		CacheReadTokens: int64(u.PromptTokensDetails.CachedTokens), ReasoningTokens: int64(u.CompletionTokensDetails.ReasoningTokens),
	}
	if c.cfg.InputCostPerToken != nil {
		r.Cost += float64(u.PromptTokens) * *c.cfg.InputCostPerToken
	}
	if c.cfg.OutputCostPerToken != nil {
		r.Cost += float64(u.CompletionTokens) * *c.cfg.OutputCostPerToken
	}
	if httpResp != nil {
		if v := httpResp.Header.Get("x-litellm-response-cost"); v != "" && r.Cost == 0 {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				r.Cost = f
			}
		}
	}
	return r
}

// parseThinkingBlocks decodes a thinking_blocks list as LiteLLM returns it:
// {"type":"thinking","thinking","signature"} and {"type":"redacted_thinking",
// "data"} items. Other item types, and anything that is not a list, are
// ignored: the field is an extra the provider may shape as it likes.
func parseThinkingBlocks(raw []byte) []events.ThinkingItem {
	var items []struct {
		Type      string  `json:"type"`
		Thinking  *string `json:"thinking"`
		Signature *string `json:"signature"`
		Data      *string `json:"data"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []events.ThinkingItem
	for _, it := range items {
		switch it.Type {
		case "thinking", "":
			b := &events.ThinkingBlock{Type: "thinking", Signature: it.Signature}
			if it.Thinking != nil {
				b.Thinking = *it.Thinking
			}
			if b.Signature != nil && *b.Signature == "" {
				b.Signature = nil
			}
			out = append(out, b)
		case "redacted_thinking":
			if it.Data != nil {
				out = append(out, &events.RedactedThinkingBlock{Type: "redacted_thinking", Data: *it.Data})
			}
		}
	}
	return out
}

// appendThinkingDeltas accumulates streamed thinking_blocks: a thinking
// delta continues the last thinking block until that block is signed (the
// signature ends a block); a redacted block is whole in one delta.
func appendThinkingDeltas(acc, deltas []events.ThinkingItem) []events.ThinkingItem {
	for _, d := range deltas {
		tb, ok := d.(*events.ThinkingBlock)
		if !ok {
			acc = append(acc, d)
			continue
		}
		if n := len(acc); n > 0 {
			if last, ok := acc[n-1].(*events.ThinkingBlock); ok && last.Signature == nil {
				last.Thinking += tb.Thinking
				last.Signature = tb.Signature
				continue
			}
		}
		cp := *tb
		acc = append(acc, &cp)
	}
	return acc
}

var contextWindowHints = []string{"context length", "context_length", "context window", "maximum context", "too many tokens", "prompt is too long", "input is too long", "reduce the length"}

// classify turns a failed attempt into an *Error. ctx is the caller's: a
// deadline that is not the caller's is the request timeout (ErrTimeout);
// the caller's own cancellation is returned as is.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	var apiErr *apiError
	if errors.As(err, &apiErr) {
		e := &Error{StatusCode: apiErr.StatusCode, Message: apiMessage(apiErr)}
		e.RetryAfter = retryAfter(apiErr.Header.Get("Retry-After"))
		low := strings.ToLower(e.Message)
		switch {
		case apiErr.StatusCode == 401 || apiErr.StatusCode == 403:
			e.Kind = ErrAuth
		case apiErr.StatusCode == 429:
			e.Kind = ErrRateLimit
		case apiErr.StatusCode == 408 || apiErr.StatusCode >= 500:
			e.Kind = ErrTransient
		case containsAny(low, contextWindowHints):
			e.Kind = ErrContextWindow
		case apiErr.StatusCode == 404:
			e.Kind = ErrNotFound
		default:
			e.Kind = ErrBadRequest
		}
		return e
	}
	return &Error{Kind: networkKind(err), Message: err.Error()}
}

// networkKind classifies a failure without an HTTP answer: a name that
// does not resolve (or no resolver answers), a refused connection or a TLS
// failure will not heal (ErrConnection); a timeout may (ErrTimeout);
// anything else (a dropped connection, EOF) is transient.
func networkKind(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		// Whether the name does not exist or no resolver answers, the
		// host is not reachable under this name: waiting rarely helps.
		return ErrConnection
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return ErrConnection
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || errors.As(err, &recordErr) {
		return ErrConnection
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ErrTimeout
	}
	return ErrTransient
}

// apiMessage is what an error answer says: its error message, else the
// JSON of its "error" value cut to 500 bytes, else its status text.
func apiMessage(e *apiError) string {
	if e.Message != "" {
		return e.Message
	}
	raw := e.Raw
	if raw == "" {
		return http.StatusText(e.StatusCode)
	}
	if len(raw) > 500 {
		raw = raw[:500]
	}
	return raw
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
