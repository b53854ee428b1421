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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// Tool is a function offered to the LLM.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of the arguments
}

// Request is one completion request.
type Request struct {
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
	api    openai.Client
	sleep  func(context.Context, time.Duration) error
	OnWait func(RetryEvent) // optional; called before each backoff wait
}

// New builds a client. A missing base URL uses the OpenAI default.
func New(cfg Config) *Client {
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.BaseURL != nil && *cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(*cfg.BaseURL, "/")+"/"))
	}
	key := "not-needed"
	if cfg.APIKey != nil && *cfg.APIKey != "" {
		key = *cfg.APIKey
	}
	opts = append(opts, option.WithAPIKey(key))
	if len(cfg.ExtraHeaders) > 0 {
		var h map[string]string
		if json.Unmarshal(cfg.ExtraHeaders, &h) == nil {
			for k, v := range h {
				opts = append(opts, option.WithHeader(k, v))
			}
		}
	}
	if cfg.Timeout != nil && *cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(time.Duration(*cfg.Timeout*float64(time.Second))))
	}
	return &Client{cfg: cfg, api: openai.NewClient(opts...), sleep: sleepCtx}
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
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, params, onDelta)
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

func (c *Client) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.APIModel())}
	for _, m := range req.Messages {
		mp, err := messageParam(m)
		if err != nil {
			return p, err
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: shared.FunctionParameters(t.Parameters),
		}))
	}
	if c.cfg.Temperature != nil {
		p.Temperature = openai.Float(*c.cfg.Temperature)
	}
	if c.cfg.TopP != nil {
		p.TopP = openai.Float(*c.cfg.TopP)
	}
	if c.cfg.MaxOutputTokens != nil {
		p.MaxCompletionTokens = openai.Int(int64(*c.cfg.MaxOutputTokens))
	}
	if c.cfg.Seed != nil {
		p.Seed = openai.Int(int64(*c.cfg.Seed))
	}
	if c.cfg.ReasoningEffort != nil && *c.cfg.ReasoningEffort != "" && *c.cfg.ReasoningEffort != "none" {
		p.ReasoningEffort = shared.ReasoningEffort(*c.cfg.ReasoningEffort)
	}
	return p, nil
}

func messageParam(m events.Message) (openai.ChatCompletionMessageParamUnion, error) {
	text := m.Text()
	switch m.Role {
	case events.RoleSystem:
		return openai.SystemMessage(text), nil
	case events.RoleTool:
		id := ""
		if m.ToolCallID != nil {
			id = *m.ToolCallID
		}
		return openai.ToolMessage(text, id), nil
	case events.RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(text)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
				},
			})
		}
		// Thinking blocks go back with their turn: Anthropic (through
		// LiteLLM) requires a tool-use turn's signed thinking when
		// extended thinking is on. Only a provider that sent them gets
		// them back. reasoning_content is not resent (DeepSeek refuses it).
		if len(m.ThinkingBlocks) > 0 {
			raw, err := strictjson.Marshal(m.ThinkingBlocks)
			if err != nil {
				return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("encode thinking blocks: %w", err)
			}
			a.SetExtraFields(map[string]any{"thinking_blocks": json.RawMessage(raw)})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		var parts []openai.ChatCompletionContentPartUnionParam
		images := false
		for _, ct := range m.Content {
			switch ct := ct.(type) {
			case *events.TextContent:
				parts = append(parts, openai.TextContentPart(ct.Text))
			case *events.ImageContent:
				for _, u := range ct.ImageURLs {
					images = true
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
				}
			}
		}
		if !images {
			return openai.UserMessage(text), nil
		}
		return openai.UserMessage(parts), nil
	}
}

func (c *Client) once(ctx context.Context, p openai.ChatCompletionNewParams, onDelta func(Delta)) (*Response, error) {
	start := time.Now()
	// The request body is kept only for completion logs: encoding a long
	// history twice per call is not free.
	var raw json.RawMessage
	if c.cfg.LogCompletions {
		raw, _ = json.Marshal(p)
	}
	var httpResp *http.Response
	reqOpts := []option.RequestOption{option.WithResponseInto(&httpResp)}
	if len(c.cfg.LiteLLMExtraBody) > 0 {
		var extra map[string]any
		if json.Unmarshal(c.cfg.LiteLLMExtraBody, &extra) == nil {
			for k, v := range extra {
				reqOpts = append(reqOpts, option.WithJSONSet(k, v))
			}
		}
	}
	var completion *openai.ChatCompletion
	if c.cfg.Stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		if c.cfg.LogCompletions {
			raw, _ = json.Marshal(p)
		}
		stream := c.api.Chat.Completions.NewStreaming(ctx, p, reqOpts...)
		acc := openai.ChatCompletionAccumulator{}
		var reasoning strings.Builder
		var thinking []events.ThinkingItem
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 {
				d := Delta{Content: chunk.Choices[0].Delta.Content}
				if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
					var s string
					if json.Unmarshal([]byte(f.Raw()), &s) == nil {
						d.ReasoningContent = s
						reasoning.WriteString(s)
					}
				}
				if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["thinking_blocks"]; ok {
					thinking = appendThinkingDeltas(thinking, parseThinkingBlocks(f.Raw()))
				}
				if onDelta != nil && (d.Content != "" || d.ReasoningContent != "") {
					onDelta(d)
				}
			}
		}
		if err := stream.Err(); err != nil {
			return nil, classify(ctx, err, httpResp)
		}
		stream.Close()
		completion = &acc.ChatCompletion
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
	completion, err := c.api.Chat.Completions.New(ctx, p, reqOpts...)
	if err != nil {
		return nil, classify(ctx, err, httpResp)
	}
	if len(completion.Choices) == 0 {
		return nil, &Error{Kind: ErrTransient, StatusCode: 200, Message: "the response has no choices"}
	}
	resp := c.convert(completion, httpResp)
	resp.Latency, resp.RawRequest = time.Since(start), raw
	resp.RawResponse = json.RawMessage(completion.RawJSON())
	return resp, nil
}

func (c *Client) convert(cc *openai.ChatCompletion, httpResp *http.Response) *Response {
	r := &Response{ID: cc.ID, Model: cc.Model}
	if r.ID == "" {
		r.ID = "chatcmpl-" + events.NewID()
	}
	if len(cc.Choices) > 0 {
		ch := cc.Choices[0]
		r.Content = ch.Message.Content
		r.FinishReason = ch.FinishReason
		if f, ok := ch.Message.JSON.ExtraFields["reasoning_content"]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil {
				r.ReasoningContent = s
			}
		}
		if f, ok := ch.Message.JSON.ExtraFields["thinking_blocks"]; ok {
			r.ThinkingBlocks = parseThinkingBlocks(f.Raw())
		}
		for _, tc := range ch.Message.ToolCalls {
			args := tc.Function.Arguments
			if args == "" {
				args = "{}"
			}
			r.ToolCalls = append(r.ToolCalls, events.MessageToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args, Origin: events.OriginCompletion})
		}
		if f, ok := ch.JSON.ExtraFields["token_ids"]; ok {
			_ = json.Unmarshal([]byte(f.Raw()), &r.ResponseTokenIDs)
		}
	}
	if f, ok := cc.JSON.ExtraFields["prompt_token_ids"]; ok {
		_ = json.Unmarshal([]byte(f.Raw()), &r.PromptTokenIDs)
	}
	u := cc.Usage
	r.Usage = Usage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		CacheReadTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
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
func parseThinkingBlocks(raw string) []events.ThinkingItem {
	var items []struct {
		Type      string  `json:"type"`
		Thinking  *string `json:"thinking"`
		Signature *string `json:"signature"`
		Data      *string `json:"data"`
	}
	if json.Unmarshal([]byte(raw), &items) != nil {
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

// classify turns a client error into an *Error. ctx is the caller's: a
// deadline that is not the caller's is the request timeout (ErrTimeout);
// the caller's own cancellation is returned as is.
func classify(ctx context.Context, err error, httpResp *http.Response) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		e := &Error{StatusCode: apiErr.StatusCode, Message: apiMessage(apiErr)}
		if apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header.Get("Retry-After"))
		}
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

func apiMessage(e *openai.Error) string {
	if e.Message != "" {
		return e.Message
	}
	raw := e.RawJSON()
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
