// Package llmtest is an OpenAI-compatible HTTP server that replays scripted
// chat completions: text, tool calls (parallel ones too), reasoning, token
// ids, HTTP errors, delays and streaming (server-sent events). Every agent test
// runs against it over real HTTP; `acs llmtest` serves a script from a file
// for trying ACS by hand.
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ToolCall is one scripted tool call. Arguments is marshalled to the JSON
// string the API carries, unless RawArguments is set (for broken JSON).
type ToolCall struct {
	ID           string `json:"id,omitempty"`
	Name         string `json:"name"`
	Arguments    any    `json:"arguments,omitempty"`
	RawArguments string `json:"raw_arguments,omitempty"`
}

// ThinkingBlock is one item of a reply's thinking_blocks: Type "thinking"
// (the default) with Thinking and an optional Signature, or
// "redacted_thinking" with Data.
type ThinkingBlock struct {
	Type      string `json:"type,omitempty"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// wire renders the block as the provider sends it.
func (b ThinkingBlock) wire() map[string]any {
	if b.Type == "redacted_thinking" {
		return map[string]any{"type": "redacted_thinking", "data": b.Data}
	}
	m := map[string]any{"type": "thinking", "thinking": b.Thinking}
	if b.Signature != "" {
		m["signature"] = b.Signature
	}
	return m
}

func thinkingJSON(blocks []ThinkingBlock) []any {
	out := make([]any, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, b.wire())
	}
	return out
}

// Usage is the token usage reported with a reply.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// Reply is one scripted completion (or failure).
type Reply struct {
	// When set, the reply is used only for a request whose last user message
	// contains this text (case-insensitive). Replies are otherwise consumed
	// in order.
	MatchText string `json:"match_text,omitempty"`
	// Match, when set, must accept the request (Go tests only).
	Match func(*Request) bool `json:"-"`
	// Respond, when set, builds the reply from the request (Go tests only);
	// the reply's own fields are then ignored.
	Respond func(*Request) Reply `json:"-"`

	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"` // reasoning_content
	// ThinkingBlocks are returned as the message's thinking_blocks, as
	// LiteLLM does for Anthropic models.
	ThinkingBlocks []ThinkingBlock `json:"thinking_blocks,omitempty"`
	ToolCalls      []ToolCall      `json:"tool_calls,omitempty"`
	Usage          *Usage          `json:"usage,omitempty"`
	// PromptTokenIDs and ResponseTokenIDs are returned like vLLM does.
	PromptTokenIDs   []int `json:"prompt_token_ids,omitempty"`
	ResponseTokenIDs []int `json:"response_token_ids,omitempty"`

	// Status, when not 0 or 200, makes the reply an HTTP error with Error
	// as its message and RetryAfter (seconds) as the Retry-After header.
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error,omitempty"`
	RetryAfter int    `json:"retry_after,omitempty"`

	// Delay holds the response; a cancelled request ends the wait.
	Delay time.Duration `json:"delay,omitempty"`
	// Repeat keeps the reply in the script after use (a fallback).
	Repeat bool `json:"repeat,omitempty"`
}

// Message is one message of a received request.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []rawToolCall   `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type rawToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Text returns the message's text (string content or text parts joined).
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var out []string
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	return ""
}

// ToolCallNames lists the names of the message's tool calls.
func (m Message) ToolCallNames() []string {
	var out []string
	for _, tc := range m.ToolCalls {
		out = append(out, tc.Function.Name)
	}
	return out
}

// Request is a received completion request.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool            `json:"stream"`
	Header        http.Header     `json:"-"`
	Body          json.RawMessage `json:"-"`
	ReceivedAt    time.Time       `json:"-"`
	MatchedScript int             `json:"-"` // index of the reply used, -1 when none
}

// SystemText returns the text of the system message.
func (r *Request) SystemText() string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return m.Text()
		}
	}
	return ""
}

// LastUserText returns the text of the last user message.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// ToolNames lists the offered tools.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Server is a scripted OpenAI-compatible endpoint.
type Server struct {
	// URL is the base URL to configure clients with, ending in /v1.
	URL string

	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	script   []Reply
	requests []*Request
	seq      int
	changed  chan struct{}
	key      string // RequireKey's key ("": none required)
}

// RequireKey makes every route (completions and /models) answer 401, as a
// hosted endpoint does, unless the request carries "Authorization: Bearer
// key". An empty key lifts the requirement. A refused completion request
// is recorded but consumes no scripted reply.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
}

// authorized reports whether r carries the required key, answering 401
// when it does not.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key == "" || r.Header.Get("Authorization") == "Bearer "+key {
		return true
	}
	writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", 0)
	return false
}

// New starts a server on 127.0.0.1 with a random port.
func New(replies ...Reply) *Server {
	s, err := Listen("127.0.0.1:0", replies...)
	if err != nil {
		panic(fmt.Sprintf("llmtest: %v", err))
	}
	return s
}

// Listen starts a server on addr.
func Listen(addr string, replies ...Reply) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{ln: ln, script: replies, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("POST /chat/completions", s.complete)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /models", s.models)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.URL = "http://" + ln.Addr().String() + "/v1"
	go func() {
		if err := s.srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			slog.Error("llmtest: serve", "error", err)
		}
	}()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	s.srv.Close()
}

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// Remaining returns how many non-repeating replies are left unused.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.script {
		if !r.Repeat {
			n++
		}
	}
	return n
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// WaitRequests blocks until at least n requests have arrived or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		have, ch := len(s.requests), s.changed
		s.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("llmtest: %d of %d requests arrived: %w", have, n, ctx.Err())
		}
	}
}

func (s *Server) take(req *Request) (Reply, bool) {
	last := strings.ToLower(req.LastUserText())
	for i, r := range s.script {
		if r.MatchText != "" && !strings.Contains(last, strings.ToLower(r.MatchText)) {
			continue
		}
		if r.Match != nil && !r.Match(req) {
			continue
		}
		if !r.Repeat {
			s.script = append(s.script[:i:i], s.script[i+1:]...)
		}
		req.MatchedScript = i
		return r, true
	}
	req.MatchedScript = -1
	return Reply{}, false
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	body := make([]byte, 0, 4096)
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			break
		}
	}
	req := &Request{}
	if err := json.Unmarshal(body, req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), 0)
		return
	}
	req.Header, req.Body, req.ReceivedAt = r.Header.Clone(), body, time.Now()
	if !s.authorized(w, r) {
		s.mu.Lock()
		req.MatchedScript = -1
		s.requests = append(s.requests, req)
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		return
	}

	s.mu.Lock()
	reply, ok := s.take(req)
	s.requests = append(s.requests, req)
	s.seq++
	seq := s.seq
	id := fmt.Sprintf("chatcmpl-llmtest-%d", seq)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	if !ok {
		writeError(w, http.StatusInternalServerError, "llmtest: no scripted reply left for this request", 0)
		return
	}
	if reply.Respond != nil {
		reply = reply.Respond(req)
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.Error, reply.RetryAfter)
		return
	}
	if req.Stream {
		s.stream(w, id, seq, req.Model, reply)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completion(id, seq, req.Model, reply))
}

// toolCallsJSON renders tool calls; calls without an id get one unique to
// the response (seq), as providers do.
func toolCallsJSON(seq int, calls []ToolCall) []map[string]any {
	var out []map[string]any
	for i, tc := range calls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", seq, i+1)
		}
		args := tc.RawArguments
		if args == "" {
			if tc.Arguments == nil {
				args = "{}"
			} else {
				b, _ := json.Marshal(tc.Arguments)
				args = string(b)
			}
		}
		out = append(out, map[string]any{
			"index": i, "id": id, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": args},
		})
	}
	return out
}

func usageJSON(u *Usage) map[string]any {
	if u == nil {
		u = &Usage{PromptTokens: 100, CompletionTokens: 20}
	}
	return map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
		"total_tokens":              u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
}

func completion(id string, seq int, model string, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	if len(r.ThinkingBlocks) > 0 {
		msg["thinking_blocks"] = thinkingJSON(r.ThinkingBlocks)
	}
	finish := "stop"
	if len(r.ToolCalls) > 0 {
		msg["tool_calls"] = toolCallsJSON(seq, r.ToolCalls)
		finish = "tool_calls"
		if r.Text == "" {
			msg["content"] = nil
		}
	}
	choice := map[string]any{"index": 0, "message": msg, "finish_reason": finish}
	if r.ResponseTokenIDs != nil {
		choice["token_ids"] = r.ResponseTokenIDs
	}
	out := map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{choice}, "usage": usageJSON(r.Usage),
	}
	if r.PromptTokenIDs != nil {
		out["prompt_token_ids"] = r.PromptTokenIDs
	}
	return out
}

// stream writes the reply as server-sent events: reasoning and text in small
// pieces, then the tool calls, then a final chunk with usage.
func (s *Server) stream(w http.ResponseWriter, id string, seq int, model string, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any, usage map[string]any) {
		chunk := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		if usage != nil {
			chunk["usage"] = usage
			chunk["choices"] = []any{}
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, piece := range pieces(r.Reasoning) {
		send(map[string]any{"reasoning_content": piece}, nil, nil)
	}
	// Thinking blocks stream like LiteLLM's: the text of a thinking block in
	// pieces, then its signature, which ends the block; a redacted block whole.
	for _, b := range r.ThinkingBlocks {
		if b.Type == "redacted_thinking" {
			send(map[string]any{"thinking_blocks": []any{b.wire()}}, nil, nil)
			continue
		}
		for _, piece := range pieces(b.Thinking) {
			send(map[string]any{"thinking_blocks": []any{map[string]any{"type": "thinking", "thinking": piece}}}, nil, nil)
		}
		if b.Signature != "" {
			send(map[string]any{"thinking_blocks": []any{map[string]any{"type": "thinking", "thinking": "", "signature": b.Signature}}}, nil, nil)
		}
	}
	for _, piece := range pieces(r.Text) {
		send(map[string]any{"content": piece}, nil, nil)
	}
	finish := "stop"
	if len(r.ToolCalls) > 0 {
		finish = "tool_calls"
		for _, tc := range toolCallsJSON(seq, r.ToolCalls) {
			send(map[string]any{"tool_calls": []any{tc}}, nil, nil)
		}
	}
	send(map[string]any{}, finish, nil)
	send(nil, nil, usageJSON(r.Usage))
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// pieces splits s into chunks of at least 8 bytes, on rune boundaries.
func pieces(s string) []string {
	var out []string
	start := 0
	for i := range s {
		if i-start >= 8 {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string, retryAfter int) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "llmtest_error", "code": status,
	}})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{
		map[string]any{"id": "llmtest", "object": "model", "owned_by": "acs"},
	}})
}

// LoadScript decodes a JSON array of replies (the format of `acs llmtest
// --script`).
func LoadScript(data []byte) ([]Reply, error) {
	var replies []Reply
	if err := json.Unmarshal(data, &replies); err != nil {
		return nil, fmt.Errorf("parse llmtest script: %w", err)
	}
	return replies, nil
}

// ClosedURL returns an OpenAI-style base URL (…/v1) on a loopback port
// nothing listens on any more: a connection to it is refused. It panics
// when no port can be had.
func ClosedURL() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("llmtest: listen: %v", err))
	}
	u := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	return u
}
