package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

func ptr[T any](v T) *T { return &v }

func client(s *llmtest.Server, mod func(*llm.Config)) *llm.Client {
	cfg := llm.Config{Model: "litellm_proxy/test-model", BaseURL: &s.URL, APIKey: ptr("sk-test"),
		NumRetries: 3, RetryMinWait: 0.001, RetryMaxWait: 0.01, RetryMultiplier: 2}
	if mod != nil {
		mod(&cfg)
	}
	return llm.New(cfg)
}

func userReq(text string) llm.Request {
	return llm.Request{
		Messages: []events.Message{
			{Role: "system", Content: []events.Content{events.TextItem("You are a test.")}},
			{Role: "user", Content: []events.Content{events.TextItem(text)}},
		},
		Tools: []llm.Tool{{Name: "terminal", Description: "Run a command.", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"}}}},
	}
}

func TestTextAndToolCalls(t *testing.T) {
	s := llmtest.New(
		llmtest.Reply{Text: "Hello!", Reasoning: "be nice", Usage: &llmtest.Usage{PromptTokens: 11, CompletionTokens: 3, CachedTokens: 2}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "c1", Name: "terminal", Arguments: map[string]any{"command": "ls"}},
			{ID: "c2", Name: "terminal", Arguments: map[string]any{"command": "pwd"}},
		}},
	)
	defer s.Close()
	c := client(s, nil)
	r, err := c.Complete(context.Background(), userReq("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "Hello!" || r.ReasoningContent != "be nice" || r.ID == "" {
		t.Fatalf("response %+v", r)
	}
	if r.Usage.PromptTokens != 11 || r.Usage.CompletionTokens != 3 || r.Usage.CacheReadTokens != 2 {
		t.Fatalf("usage %+v", r.Usage)
	}
	r, err = c.Complete(context.Background(), userReq("run"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "c1" || r.ToolCalls[1].Arguments != `{"command":"pwd"}` || r.ToolCalls[0].Origin != "completion" {
		t.Fatalf("tool calls %+v", r.ToolCalls)
	}
	reqs := s.Requests()
	if reqs[0].Model != "test-model" {
		t.Fatalf("provider prefix not stripped: %s", reqs[0].Model)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Fatalf("auth header %q", got)
	}
	if names := reqs[0].ToolNames(); len(names) != 1 || names[0] != "terminal" {
		t.Fatalf("tools %v", names)
	}
}

func TestAssistantToolHistoryIsSent(t *testing.T) {
	s := llmtest.New(llmtest.Reply{Text: "ok"})
	defer s.Close()
	req := userReq("hi")
	req.Messages = append(req.Messages,
		events.Message{Role: "assistant", ToolCalls: []events.MessageToolCall{{ID: "c1", Name: "terminal", Arguments: `{"command":"ls"}`, Origin: "completion"}},
			ThinkingBlocks: []events.ThinkingItem{&events.ThinkingBlock{Type: "thinking", Thinking: "list it", Signature: ptr("sig-1")}}},
		events.Message{Role: "tool", ToolCallID: ptr("c1"), Content: []events.Content{events.TextItem("a.txt")}},
	)
	if _, err := client(s, nil).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	msgs := s.Requests()[0].Messages
	if len(msgs) != 4 || msgs[2].Role != "assistant" || msgs[2].ToolCallNames()[0] != "terminal" || msgs[3].ToolCallID != "c1" || msgs[3].Text() != "a.txt" {
		t.Fatalf("history not sent as expected: %+v", msgs)
	}
	// The turn's signed thinking goes back with it.
	if !strings.Contains(string(s.Requests()[0].Body), `"thinking_blocks":[{"type":"thinking","thinking":"list it","signature":"sig-1"}]`) {
		t.Fatalf("thinking blocks not sent back: %s", s.Requests()[0].Body)
	}
}

func TestErrorClassificationAndRetries(t *testing.T) {
	cases := []struct {
		name     string
		replies  []llmtest.Reply
		wantKind error
		wantReqs int
	}{
		{"auth is not retried", []llmtest.Reply{{Status: 401, Error: "bad key"}}, llm.ErrAuth, 1},
		{"bad request is not retried", []llmtest.Reply{{Status: 400, Error: "unknown parameter"}}, llm.ErrBadRequest, 1},
		{"context window", []llmtest.Reply{{Status: 400, Error: "This model's maximum context length is 8192 tokens"}}, llm.ErrContextWindow, 1},
		{"5xx retried then succeeds", []llmtest.Reply{{Status: 502}, {Status: 503}, {Text: "ok"}}, nil, 3},
		{"429 retried then succeeds", []llmtest.Reply{{Status: 429, Error: "slow down"}, {Text: "ok"}}, nil, 2},
		{"retries exhausted", []llmtest.Reply{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}}, llm.ErrTransient, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(tc.replies...)
			defer s.Close()
			var waits []llm.RetryEvent
			c := client(s, nil)
			c.OnWait = func(e llm.RetryEvent) { waits = append(waits, e) }
			_, err := c.Complete(context.Background(), userReq("x"), nil)
			if tc.wantKind == nil && err != nil {
				t.Fatal(err)
			}
			if tc.wantKind != nil && !errors.Is(err, tc.wantKind) {
				t.Fatalf("got %v, want %v", err, tc.wantKind)
			}
			if n := len(s.Requests()); n != tc.wantReqs {
				t.Fatalf("%d requests, want %d", n, tc.wantReqs)
			}
			if len(waits) != tc.wantReqs-1 {
				t.Fatalf("%d retry waits reported, want %d", len(waits), tc.wantReqs-1)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	s := llmtest.New(llmtest.Reply{Status: 429, RetryAfter: 1}, llmtest.Reply{Text: "ok"})
	defer s.Close()
	c := client(s, nil)
	var wait time.Duration
	c.OnWait = func(e llm.RetryEvent) { wait = e.Wait }
	if _, err := c.Complete(context.Background(), userReq("x"), nil); err != nil {
		t.Fatal(err)
	}
	if wait < time.Second {
		t.Fatalf("Retry-After ignored: waited %v", wait)
	}
}

func TestCancelAbortsCallInFlight(t *testing.T) {
	s := llmtest.New(llmtest.Reply{Text: "late", Delay: 30 * time.Second})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_ = s.WaitRequests(context.Background(), 1)
		cancel()
	}()
	start := time.Now()
	_, err := client(s, nil).Complete(ctx, userReq("x"), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("cancel did not abort the call")
	}
}

func TestStreaming(t *testing.T) {
	s := llmtest.New(llmtest.Reply{Text: "Streaming works fine here.", Reasoning: "thinking hard about it",
		ToolCalls: []llmtest.ToolCall{{ID: "c9", Name: "terminal", Arguments: map[string]any{"command": "echo hi"}}},
		Usage:     &llmtest.Usage{PromptTokens: 7, CompletionTokens: 9}})
	defer s.Close()
	c := client(s, func(cfg *llm.Config) { cfg.Stream = true })
	var mu sync.Mutex
	var content, reasoning strings.Builder
	n := 0
	r, err := c.Complete(context.Background(), userReq("x"), func(d llm.Delta) {
		mu.Lock()
		defer mu.Unlock()
		n++
		content.WriteString(d.Content)
		reasoning.WriteString(d.ReasoningContent)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 || content.String() != "Streaming works fine here." || reasoning.String() != "thinking hard about it" {
		t.Fatalf("deltas %d %q %q", n, content.String(), reasoning.String())
	}
	if r.Content != "Streaming works fine here." || r.ReasoningContent != "thinking hard about it" || len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"command":"echo hi"}` {
		t.Fatalf("accumulated response %+v", r)
	}
	if r.Usage.PromptTokens != 7 || r.Usage.CompletionTokens != 9 {
		t.Fatalf("usage %+v", r.Usage)
	}
	if !s.Requests()[0].Stream {
		t.Fatal("request was not a streaming request")
	}
}

func TestTokenIDsAndCost(t *testing.T) {
	s := llmtest.New(llmtest.Reply{Text: "x", PromptTokenIDs: []int{1, 2}, ResponseTokenIDs: []int{3},
		Usage: &llmtest.Usage{PromptTokens: 1000, CompletionTokens: 100}})
	defer s.Close()
	c := client(s, func(cfg *llm.Config) {
		cfg.InputCostPerToken, cfg.OutputCostPerToken = ptr(0.000001), ptr(0.00001)
	})
	r, err := c.Complete(context.Background(), userReq("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.PromptTokenIDs) != 2 || len(r.ResponseTokenIDs) != 1 {
		t.Fatalf("token ids %v %v", r.PromptTokenIDs, r.ResponseTokenIDs)
	}
	if r.Cost < 0.00199 || r.Cost > 0.00201 {
		t.Fatalf("cost %v", r.Cost)
	}
}

func TestNoScriptLeftIsAnError(t *testing.T) {
	s := llmtest.New()
	defer s.Close()
	_, err := client(s, func(c *llm.Config) { c.NumRetries = 0 }).Complete(context.Background(), userReq("x"), nil)
	if !errors.Is(err, llm.ErrTransient) || !strings.Contains(err.Error(), "no scripted reply") {
		t.Fatalf("got %v", err)
	}
}

func TestMatchText(t *testing.T) {
	s := llmtest.New(llmtest.Reply{MatchText: "banana", Text: "yellow"}, llmtest.Reply{MatchText: "apple", Text: "red"})
	defer s.Close()
	c := client(s, nil)
	r, err := c.Complete(context.Background(), userReq("An APPLE please"), nil)
	if err != nil || r.Content != "red" {
		t.Fatalf("%v %+v", err, r)
	}
	if s.Remaining() != 1 {
		t.Fatal("matched reply not consumed")
	}
}

func TestThinkingBlocks(t *testing.T) {
	blocks := []llmtest.ThinkingBlock{
		{Thinking: "first, look around the repository", Signature: "sig-1"},
		{Type: "redacted_thinking", Data: "b64data"},
		{Thinking: "then decide", Signature: "sig-2"},
	}
	want := `[{"type":"thinking","thinking":"first, look around the repository","signature":"sig-1"},` +
		`{"type":"redacted_thinking","data":"b64data"},{"type":"thinking","thinking":"then decide","signature":"sig-2"}]`
	for _, stream := range []bool{false, true} {
		s := llmtest.New(llmtest.Reply{Text: "answer", ThinkingBlocks: blocks}, llmtest.Reply{Text: "no thinking"})
		c := client(s, func(cfg *llm.Config) { cfg.Stream = stream })
		r, err := c.Complete(context.Background(), userReq("think"), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(r.ThinkingBlocks)
		if string(got) != want {
			t.Fatalf("stream=%v: thinking blocks\n got %s\nwant %s", stream, got, want)
		}
		r, err = c.Complete(context.Background(), userReq("plain"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.ThinkingBlocks != nil {
			t.Fatalf("stream=%v: thinking blocks without any sent: %v", stream, r.ThinkingBlocks)
		}
		s.Close()
	}
}

// TestFailuresThatDoNotHealEndAtOnce: each class of failure against a real
// endpoint that misbehaves (the scripted server answering an error status,
// a port nothing listens on, a name that does not resolve) gives its code
// and a detail naming what to change, after one request and no retry wait.
func TestFailuresThatDoNotHealEndAtOnce(t *testing.T) {
	const key = "sk-secret-test-key-1234"
	cases := []struct {
		name       string
		reply      *llmtest.Reply // nil: baseURL below
		baseURL    func(t *testing.T) string
		wantKind   error
		wantCode   string
		wantDetail []string
	}{
		{"401", &llmtest.Reply{Status: 401, Error: "Incorrect API key provided: " + key}, nil, llm.ErrAuth, "LLMAuthenticationError", []string{"HTTP 401", "LLM_API_KEY"}},
		{"403", &llmtest.Reply{Status: 403, Error: "forbidden"}, nil, llm.ErrAuth, "LLMAuthenticationError", []string{"HTTP 403", "LLM_API_KEY"}},
		{"404 model", &llmtest.Reply{Status: 404, Error: "The model `nope` does not exist"}, nil, llm.ErrNotFound, "LLMNotFoundError", []string{"HTTP 404", `"test-model"`, "LLM_MODEL", "LLM_BASE_URL"}},
		{"400", &llmtest.Reply{Status: 400, Error: "unknown parameter: foo"}, nil, llm.ErrBadRequest, "LLMBadRequestError", []string{"HTTP 400", "unknown parameter: foo"}},
		{"connection refused", nil, func(*testing.T) string { return llmtest.ClosedURL() }, llm.ErrConnection, "LLMConnectionError", []string{"Cannot reach", "LLM_BASE_URL", "acs llmtest"}},
		{"name does not resolve", nil, func(*testing.T) string { return "http://acs-no-such-llm.invalid/v1" }, llm.ErrConnection, "LLMConnectionError",
			[]string{"acs-no-such-llm.invalid", "LLM_BASE_URL", "acs llmtest"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s *llmtest.Server
			base := ""
			if tc.reply != nil {
				s = llmtest.New(*tc.reply, llmtest.Reply{Text: "must not be reached"})
				defer s.Close()
				base = s.URL
			} else {
				base = tc.baseURL(t)
			}
			cfg := llm.Config{Model: "openai/test-model", BaseURL: &base, APIKey: ptr(key),
				NumRetries: 5, RetryMinWait: 30, RetryMaxWait: 60, RetryMultiplier: 2}
			c := llm.New(cfg)
			waits := 0
			c.OnWait = func(llm.RetryEvent) { waits++ }
			_, err := c.Complete(context.Background(), userReq("x"), nil)
			var le *llm.Error
			if !errors.As(err, &le) || !errors.Is(err, tc.wantKind) {
				t.Fatalf("got %v, want %v", err, tc.wantKind)
			}
			if waits != 0 {
				t.Fatalf("%d retries of a failure that does not heal", waits)
			}
			if s != nil && len(s.Requests()) != 1 {
				t.Fatalf("%d requests, want 1", len(s.Requests()))
			}
			if le.Code() != tc.wantCode {
				t.Fatalf("code %s, want %s", le.Code(), tc.wantCode)
			}
			d := le.Detail()
			for _, want := range tc.wantDetail {
				if !strings.Contains(d, want) {
					t.Errorf("detail lacks %q: %s", want, d)
				}
			}
			if strings.Contains(d, key) || strings.Contains(le.Error(), key) {
				t.Fatalf("the API key leaked: %s", d)
			}
		})
	}
}

// TestHealingFailuresAreRetriedThenReported: 5xx, 429 and timeouts are
// retried with each retry announced (attempt, wait, reason); when the
// retries run out, the error says how many and how long.
func TestHealingFailuresAreRetriedThenReported(t *testing.T) {
	cases := []struct {
		name     string
		reply    llmtest.Reply
		timeout  float64
		wantKind error
		wantCode string
	}{
		{"503", llmtest.Reply{Status: 503, Error: "overloaded"}, 0, llm.ErrTransient, "LLMServiceUnavailableError"},
		{"429", llmtest.Reply{Status: 429, Error: "slow down"}, 0, llm.ErrRateLimit, "LLMRateLimitError"},
		{"timeout", llmtest.Reply{Text: "late", Delay: 5 * time.Second}, 0.05, llm.ErrTimeout, "LLMTimeoutError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reply := tc.reply
			reply.Repeat = true
			s := llmtest.New(reply)
			defer s.Close()
			c := client(s, func(cfg *llm.Config) {
				cfg.NumRetries = 2
				if tc.timeout > 0 {
					cfg.Timeout = &tc.timeout
				}
			})
			var waits []llm.RetryEvent
			c.OnWait = func(e llm.RetryEvent) { waits = append(waits, e) }
			_, err := c.Complete(context.Background(), userReq("x"), nil)
			var le *llm.Error
			if !errors.As(err, &le) || !errors.Is(err, tc.wantKind) || le.Code() != tc.wantCode {
				t.Fatalf("got %v (%T), want %v %s", err, err, tc.wantKind, tc.wantCode)
			}
			if len(waits) != 2 || waits[0].Attempt != 1 || waits[1].Attempt != 2 || waits[1].MaxRetries != 2 || waits[0].Err.Reason() == "" {
				t.Fatalf("retry notices %+v", waits)
			}
			if le.Retries != 2 || !strings.Contains(le.Detail(), "Gave up after 2 retries") {
				t.Fatalf("exhausted retries not reported: %d %s", le.Retries, le.Detail())
			}
		})
	}
}

// A request's segments are sent in order, then its messages.
func TestSegmentsAreSentBeforeMessages(t *testing.T) {
	s := llmtest.New(llmtest.Reply{Text: "ok"})
	defer s.Close()
	text := func(role, s string) events.Message {
		return events.Message{Role: events.Role(role), Content: []events.Content{events.TextItem(s)}}
	}
	shared := []events.Message{text("user", "one"), text("assistant", "two")}
	req := llm.Request{Segments: [][]events.Message{{text("system", "sys")}, shared, nil, {text("user", "three")}},
		Messages: []events.Message{text("assistant", "four")}}
	if _, err := client(s, nil).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range s.Requests()[0].Messages {
		got = append(got, m.Role+":"+m.Text())
	}
	if want := []string{"system:sys", "user:one", "assistant:two", "user:three", "assistant:four"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if shared[0].Text() != "one" || len(shared) != 2 {
		t.Fatal("the shared segment changed")
	}
}
