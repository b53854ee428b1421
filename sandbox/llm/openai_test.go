package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// answer is what a scripted endpoint sends: a status, headers, and a body
// written in pieces, each flushed.
type answer struct {
	status  int
	header  map[string]string
	pieces  []string
	pathLog *[]string
}

// serve starts an endpoint that sends a to every request, and returns its
// base URL.
func serve(t *testing.T, a answer) string {
	t.Helper()
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if a.pathLog != nil {
			mu.Lock()
			*a.pathLog = append(*a.pathLog, r.URL.RequestURI())
			mu.Unlock()
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		status := a.status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		for _, p := range a.pieces {
			_, _ = io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// sse renders each chunk as a server-sent event.
func sse(chunks ...string) []string {
	var out []string
	for _, c := range chunks {
		out = append(out, "data: "+c+"\n\n")
	}
	return out
}

var sseHeader = map[string]string{"Content-Type": "text/event-stream"}

// once makes one call without retries to base and returns what it gives,
// the deltas passed on included.
func once(t *testing.T, base string, mod func(*llm.Config)) (*llm.Response, []llm.Delta, error) {
	t.Helper()
	cfg := llm.Config{Model: "openai/test-model", BaseURL: &base, APIKey: ptr("sk-test")}
	if mod != nil {
		mod(&cfg)
	}
	var deltas []llm.Delta
	r, err := llm.New(cfg).Complete(context.Background(), userReq("x"), func(d llm.Delta) { deltas = append(deltas, d) })
	return r, deltas, err
}

func streaming(cfg *llm.Config) { cfg.Stream = true }

func toolCallsJSON(calls []events.MessageToolCall) string {
	b, _ := json.Marshal(calls)
	return string(b)
}

// TestStreamAccumulation: a stream's chunks make one completion. Tool call
// deltas are joined by index whatever their order, content by choice, and
// usage is summed; a chunk of another stream's id, or with an index out of
// bounds, is left out of the completion but its content is still passed
// on as a delta.
func TestStreamAccumulation(t *testing.T) {
	cases := []struct {
		name       string
		pieces     []string
		content    string
		deltas     string // the deltas' content, joined
		toolCalls  string
		usage      llm.Usage
		id, finish string
	}{
		{
			name: "interleaved tool calls over several indexes",
			pieces: sse(
				`{"id":"s","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"term","arguments":""}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"finish","arguments":"{\"m"}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"c\":"}},{"index":1,"function":{"arguments":"\":1}"}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"inal","arguments":"2}"}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"call_d","type":"function","function":{"name":"late"}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`[DONE]`),
			// Index 2 never came: its place stays, empty.
			toolCalls: `[{"id":"call_a","name":"terminal","arguments":"{\"c\":2}","origin":"completion"},` +
				`{"id":"call_b","name":"finish","arguments":"{\"m\":1}","origin":"completion"},` +
				`{"id":"","name":"","arguments":"{}","origin":"completion"},` +
				`{"id":"call_d","name":"late","arguments":"{}","origin":"completion"}]`,
			id: "s", finish: "tool_calls",
		},
		{
			name: "index -1 is the first tool call, and an index below it drops its chunk",
			pieces: sse(
				`{"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"id":"c","function":{"name":"x","arguments":"{}"}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"content":"dropped","tool_calls":[{"index":-2,"id":"bad","function":{"name":"y"}}]}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":500,"id":"far","function":{"name":"z"}}]}}]}`),
			deltas:    "dropped",
			toolCalls: `[{"id":"c","name":"x","arguments":"{}","origin":"completion"}]`,
			id:        "s",
		},
		{
			name: "usage-only final chunk",
			pieces: sse(
				`{"id":"s","choices":[{"index":0,"delta":{"content":"Hel"}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
				`{"id":"s","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":1}}}`,
				`[DONE]`),
			content: "Hello", deltas: "Hello",
			usage: llm.Usage{PromptTokens: 5, CompletionTokens: 2, CacheReadTokens: 1, ReasoningTokens: 1},
			id:    "s", finish: "stop",
		},
		{
			name: "usage of several chunks is summed",
			pieces: sse(
				`{"id":"s","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":2,"completion_tokens":1}}`,
				`{"id":"s","choices":[],"usage":{"prompt_tokens":"3","completion_tokens":4.0}}`,
				`[DONE]`),
			content: "a", deltas: "a",
			usage: llm.Usage{PromptTokens: 5, CompletionTokens: 5},
			id:    "s",
		},
		{
			name: "chunks of another id are passed on but not kept",
			pieces: sse(
				`{"id":"s","choices":[{"index":0,"delta":{"content":"a"}}]}`,
				`{"id":"other","choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":9}}`,
				`{"choices":[{"index":0,"delta":{"content":"c"}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"content":"d"}}],"usage":{"prompt_tokens":1}}`,
				`[DONE]`),
			content: "ad", deltas: "abcd",
			usage: llm.Usage{PromptTokens: 1},
			id:    "s",
		},
		{
			name: "choices by index, the first one answers",
			pieces: sse(
				`{"id":"s","choices":[{"index":1,"delta":{"content":"one"}},{"index":0,"delta":{"content":"zero"}}]}`,
				`{"id":"s","choices":[{"index":128,"delta":{"content":"out of bounds"}}]}`,
				`{"id":"s","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}`),
			content: "zero!", deltas: "oneout of bounds!",
			id: "s", finish: "stop",
		},
		{
			name: "event syntax: comments, fields, data over lines, CRLF, no [DONE]",
			pieces: []string{
				": keep-alive\n\n",
				"event: message\nid: 1\nretry: 5\ndata: {\"id\":\"s\",\n",
				"data:\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n",
				"\n\n",
				"data: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"y\"}}]}\r\n\r\n",
				// Unfinished: no blank line ends it.
				"data: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"z\"}}]}\n",
			},
			content: "xy", deltas: "xy",
			id: "s",
		},
		{
			name: "nothing after [DONE] counts",
			pieces: sse(
				`{"id":"s","choices":[{"index":0,"delta":{"content":"x"}}]}`,
				`[DONE]`,
				`{"id":"s","choices":[{"index":0,"delta":{"content":"after"}}]}`),
			content: "x", deltas: "x",
			id: "s",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, answer{header: sseHeader, pieces: tc.pieces})
			r, deltas, err := once(t, base, streaming)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, d := range deltas {
				got.WriteString(d.Content)
			}
			if got.String() != tc.deltas {
				t.Errorf("deltas %q, want %q", got.String(), tc.deltas)
			}
			if r.Content != tc.content || r.ID != tc.id || r.FinishReason != tc.finish || r.Usage != tc.usage {
				t.Errorf("response content %q id %q finish %q usage %+v, want %q %q %q %+v",
					r.Content, r.ID, r.FinishReason, r.Usage, tc.content, tc.id, tc.finish, tc.usage)
			}
			if tc.toolCalls == "" {
				tc.toolCalls = "null"
			}
			if got := toolCallsJSON(r.ToolCalls); got != tc.toolCalls {
				t.Errorf("tool calls\n got %s\nwant %s", got, tc.toolCalls)
			}
		})
	}
}

// TestStreamFailures: a stream that reports an error, or sends what is not
// a chunk, fails the call as a transient error after passing on the deltas
// before; a stream refused with an error status fails as that status.
func TestStreamFailures(t *testing.T) {
	cases := []struct {
		name     string
		a        answer
		deltas   int
		wantKind error
		status   int
		message  string
	}{
		{"error event mid-stream", answer{header: sseHeader, pieces: sse(
			`{"id":"s","choices":[{"index":0,"delta":{"content":"partial"}}]}`,
			`{"error":{"message":"upstream overloaded","type":"server_error","code":529}}`,
			`{"id":"s","choices":[{"index":0,"delta":{"content":"never"}}]}`)},
			1, llm.ErrTransient, 0, `received error while streaming: {"message":"upstream overloaded","type":"server_error","code":529}`},
		{"error event as text", answer{header: sseHeader, pieces: sse(`{"error":"boom"}`)},
			0, llm.ErrTransient, 0, "received error while streaming: boom"},
		{"data that is not JSON", answer{header: sseHeader, pieces: sse(
			`{"id":"s","choices":[{"index":0,"delta":{"content":"x"}}]}`, `{not json`)},
			1, llm.ErrTransient, 0, "invalid character 'n' looking for beginning of object key string"},
		{"refused before streaming", answer{status: 401, header: map[string]string{"Content-Type": "application/json"},
			pieces: []string{`{"error":{"message":"no key"}}`}},
			0, llm.ErrAuth, 401, "no key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, deltas, err := once(t, serve(t, tc.a), streaming)
			var le *llm.Error
			if !errors.As(err, &le) || !errors.Is(err, tc.wantKind) {
				t.Fatalf("got %v, want %v", err, tc.wantKind)
			}
			if le.StatusCode != tc.status || le.Message != tc.message {
				t.Errorf("status %d message %q, want %d %q", le.StatusCode, le.Message, tc.status, tc.message)
			}
			if len(deltas) != tc.deltas {
				t.Errorf("%d deltas passed on, want %d", len(deltas), tc.deltas)
			}
		})
	}
}

// TestErrorAnswers: an error answer is classified by its status, and its
// message is the body's error message, else the JSON of its "error" value
// cut to 500 bytes, else the status text: for a body that is not JSON, has
// no "error", or is too long to read whole.
func TestErrorAnswers(t *testing.T) {
	jsonHeader := map[string]string{"Content-Type": "application/json"}
	long := strings.Repeat("y", 600)
	cases := []struct {
		name       string
		a          answer
		wantKind   error
		message    string
		retryAfter time.Duration
	}{
		{"OpenAI error body", answer{status: 400, header: jsonHeader,
			pieces: []string{`{"error":{"message":"bad thing","type":"invalid_request_error","param":"messages","code":null}}`}},
			llm.ErrBadRequest, "bad thing", 0},
		{"context window in the message", answer{status: 400, header: jsonHeader,
			pieces: []string{`{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`}},
			llm.ErrContextWindow, "This model's maximum context length is 8192 tokens", 0},
		{"context window in the code only", answer{status: 400, header: jsonHeader,
			pieces: []string{`{"error":{"message":"","code":"context_length_exceeded"}}`}},
			llm.ErrContextWindow, `{"message":"","code":"context_length_exceeded"}`, 0},
		{"no message: the error's JSON", answer{status: 422, header: jsonHeader,
			pieces: []string{`{"error":{"type":"t","code":422,"param":"p"}}`}},
			llm.ErrBadRequest, `{"type":"t","code":422,"param":"p"}`, 0},
		{"the error's JSON is cut to 500 bytes", answer{status: 418, header: jsonHeader,
			pieces: []string{`{"error":{"type":"` + long + `"}}`}},
			llm.ErrBadRequest, (`{"type":"` + long)[:500], 0},
		{"a message that is a number", answer{status: 400, header: jsonHeader, pieces: []string{`{"error":{"message":42}}`}},
			llm.ErrBadRequest, "42", 0},
		{"error as text", answer{status: 404, header: jsonHeader, pieces: []string{`{"error":"model 'nope' not found"}`}},
			llm.ErrNotFound, "model 'nope' not found", 0},
		{"error null", answer{status: 401, header: jsonHeader, pieces: []string{`{"error":null}`}},
			llm.ErrAuth, "null", 0},
		{"body not JSON", answer{status: 500, header: map[string]string{"Content-Type": "text/plain"}, pieces: []string{"oops internal"}},
			llm.ErrTransient, "Internal Server Error", 0},
		{"HTML page", answer{status: 404, header: map[string]string{"Content-Type": "text/html"}, pieces: []string{"<html>Not here</html>"}},
			llm.ErrNotFound, "Not Found", 0},
		{"no error field", answer{status: 404, header: jsonHeader, pieces: []string{`{"detail":"Not Found"}`}},
			llm.ErrNotFound, "Not Found", 0},
		{"empty body", answer{status: 502}, llm.ErrTransient, "Bad Gateway", 0},
		{"body too long to read whole", answer{status: 400, header: jsonHeader,
			pieces: []string{`{"error":{"message":"` + strings.Repeat("b", 2<<20) + `"}}`}},
			llm.ErrBadRequest, "Bad Request", 0},
		{"Retry-After", answer{status: 429, header: map[string]string{"Content-Type": "application/json", "Retry-After": "7"},
			pieces: []string{`{"error":{"message":"slow down"}}`}},
			llm.ErrRateLimit, "slow down", 7 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				_, _, err := once(t, serve(t, tc.a), func(cfg *llm.Config) { cfg.Stream = stream })
				var le *llm.Error
				if !errors.As(err, &le) || !errors.Is(err, tc.wantKind) {
					t.Fatalf("stream=%v: got %v, want %v", stream, err, tc.wantKind)
				}
				if le.StatusCode != tc.a.status || le.Message != tc.message || le.RetryAfter != tc.retryAfter {
					t.Errorf("stream=%v: status %d message %q retry after %v, want %d %q %v",
						stream, le.StatusCode, le.Message, le.RetryAfter, tc.a.status, tc.message, tc.retryAfter)
				}
			}
		})
	}
}

// TestCompletionAnswers: a completion without stream takes any JSON type
// for its strings and counts, but a body that is not of a JSON content type
// or not a JSON object is a transient failure.
func TestCompletionAnswers(t *testing.T) {
	jsonHeader := map[string]string{"Content-Type": "application/json"}
	cases := []struct {
		name    string
		a       answer
		content string
		usage   llm.Usage
		message string // of the failure; "" when the call succeeds
	}{
		{"odd types", answer{header: jsonHeader, pieces: []string{
			`{"id":5,"model":null,"choices":[{"index":"0","message":{"content":7,"tool_calls":"none"},"finish_reason":1}],` +
				`"usage":{"prompt_tokens":"11","completion_tokens":3.0,"prompt_tokens_details":null}}`}},
			"7", llm.Usage{PromptTokens: 11, CompletionTokens: 3}, ""},
		{"JSON of a vendor type", answer{header: map[string]string{"Content-Type": "application/vnd.api+json; charset=utf-8"},
			pieces: []string{`{"choices":[{"message":{"content":"x"}}]}`}}, "x", llm.Usage{}, ""},
		{"trailing bytes are ignored", answer{header: jsonHeader,
			pieces: []string{`{"choices":[{"message":{"content":"x"}}]} trailing`}}, "x", llm.Usage{}, ""},
		{"not of a JSON content type", answer{header: map[string]string{"Content-Type": "text/plain"},
			pieces: []string{`{"choices":[{"message":{"content":"x"}}]}`}}, "", llm.Usage{},
			`the response's content type is "text/plain", not application/json`},
		{"cut short", answer{header: jsonHeader, pieces: []string{`{"id":"a",`}}, "", llm.Usage{},
			"error parsing response json: unexpected EOF"},
		{"empty", answer{header: jsonHeader}, "", llm.Usage{}, "error parsing response json: EOF"},
		{"no choices", answer{header: jsonHeader, pieces: []string{`{"id":"a","choices":[]}`}}, "", llm.Usage{},
			"the response has no choices"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _, err := once(t, serve(t, tc.a), nil)
			if tc.message != "" {
				var le *llm.Error
				if !errors.As(err, &le) || !errors.Is(err, llm.ErrTransient) || le.Message != tc.message {
					t.Fatalf("got %v, want a transient error %q", err, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != tc.content || r.Usage != tc.usage {
				t.Errorf("content %q usage %+v, want %q %+v", r.Content, r.Usage, tc.content, tc.usage)
			}
		})
	}
}

// TestRequestBody: the request carries the config's sampling parameters,
// extra body fields (which replace a field of their name) and extra headers
// (which may replace the bearer key), and a stream asks for the usage.
func TestRequestBody(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(*llm.Config)
		body   string // the request body without its messages and tools
		header map[string]string
	}{
		{"defaults", nil, `{"model":"test-model"}`, map[string]string{"Authorization": "Bearer sk-test"}},
		{"sampling", func(c *llm.Config) {
			c.Temperature, c.TopP, c.MaxOutputTokens, c.Seed, c.ReasoningEffort = ptr(0.0), ptr(0.9), ptr(100), ptr(0), ptr("high")
		}, `{"max_completion_tokens":100,"model":"test-model","reasoning_effort":"high","seed":0,"temperature":0,"top_p":0.9}`, nil},
		{"reasoning effort none is not sent", func(c *llm.Config) { c.ReasoningEffort = ptr("none") }, `{"model":"test-model"}`, nil},
		{"extra body", func(c *llm.Config) {
			c.Temperature = ptr(0.5)
			c.LiteLLMExtraBody = json.RawMessage(`{"metadata":{"user":"u"},"temperature":0.1,"big":12345678901234567890}`)
		}, `{"big":12345678901234567890,"metadata":{"user":"u"},"model":"test-model","temperature":0.1}`, nil},
		{"extra headers", func(c *llm.Config) {
			c.ExtraHeaders = json.RawMessage(`{"X-Team":"acs","Authorization":"Token abc"}`)
		}, `{"model":"test-model"}`, map[string]string{"X-Team": "acs", "Authorization": "Token abc"}},
		{"no key", func(c *llm.Config) { c.APIKey = nil }, `{"model":"test-model"}`, map[string]string{"Authorization": "Bearer not-needed"}},
		{"stream", func(c *llm.Config) {
			c.Stream = true
			c.LiteLLMExtraBody = json.RawMessage(`{"stream":false}`)
		}, `{"model":"test-model","stream":true,"stream_options":{"include_usage":true}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(llmtest.Reply{Text: "ok"})
			defer s.Close()
			if _, err := client(s, tc.mod).Complete(context.Background(), userReq("x"), nil); err != nil {
				t.Fatal(err)
			}
			got := s.Requests()[0]
			var body map[string]json.RawMessage
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			if len(body["messages"]) == 0 || len(body["tools"]) == 0 {
				t.Fatalf("no messages or tools: %s", got.Body)
			}
			delete(body, "messages")
			delete(body, "tools")
			if b, _ := json.Marshal(body); string(b) != tc.body {
				t.Errorf("body\n got %s\nwant %s", b, tc.body)
			}
			for k, v := range tc.header {
				if got.Header.Get(k) != v {
					t.Errorf("header %s: %q, want %q", k, got.Header.Get(k), v)
				}
			}
		})
	}
}

// TestBaseURL: requests go to the base URL's chat/completions, whatever
// slashes end it; its query is not sent.
func TestBaseURL(t *testing.T) {
	for _, tc := range []struct{ suffix, path string }{
		{"/v1", "/v1/chat/completions"},
		{"/v1//", "/v1/chat/completions"},
		{"", "/chat/completions"},
		{"/v1?api-version=1", "/v1/chat/completions"},
	} {
		var paths []string
		base := serve(t, answer{header: map[string]string{"Content-Type": "application/json"},
			pieces: []string{`{"choices":[{"message":{"content":"x"}}]}`}, pathLog: &paths})
		base = strings.TrimSuffix(base, "/v1") + tc.suffix
		if _, _, err := once(t, base, nil); err != nil {
			t.Fatalf("%s: %v", tc.suffix, err)
		}
		if len(paths) != 1 || paths[0] != tc.path {
			t.Errorf("base URL ending %q: requests %v, want %s", tc.suffix, paths, tc.path)
		}
	}
}

// TestRedirects: a redirect within the endpoint's origin is followed; one
// to another origin is refused, so the key does not go there.
func TestRedirects(t *testing.T) {
	var elsewhere []string
	other := serve(t, answer{header: map[string]string{"Content-Type": "application/json"},
		pieces: []string{`{"choices":[{"message":{"content":"elsewhere"}}]}`}, pathLog: &elsewhere})
	var mux http.ServeMux
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved/chat/completions", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"moved"}}]}`)
	})
	mux.HandleFunc("/away/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+"/chat/completions", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(&mux)
	defer srv.Close()
	r, _, err := once(t, srv.URL+"/v1", nil)
	if err != nil || r.Content != "moved" {
		t.Fatalf("same-origin redirect: %v %+v", err, r)
	}
	_, _, err = once(t, srv.URL+"/away", nil)
	if !errors.Is(err, llm.ErrTransient) || !strings.Contains(err.Error(), "origin must match the configured base URL") {
		t.Fatalf("redirect to another origin: got %v", err)
	}
	if len(elsewhere) != 0 {
		t.Fatalf("the request reached the other origin: %v", elsewhere)
	}
}
