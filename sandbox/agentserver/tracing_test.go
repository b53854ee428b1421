package agentserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/secrets"
	"github.com/acs-project/acs/sandbox/telemetry"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// TestTracingTree runs a conversation with observability settings and
// checks the exported span tree: conversation → named span → LLM and tool
// calls, with tags and metadata on every span and the conversation id as the
// trace id.
func TestTracingTree(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := telemetry.NewProvider("test", sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	dir := t.TempDir()
	e := buildEnv(t, envOptions{dir: dir, adjust: func(c *agentserver.Config) { c.TracerProvider = tp }},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "echo traced"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{"command": "view", "path": "/nonexistent/file"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}},
	)

	id := e.create(map[string]any{
		"observability_span_name": "nightly-eval",
		"observability_tags":      []string{"eval", "nightly"},
		"observability_metadata":  map[string]any{"team": "core", "run": 7, "ratio": 0.5, "flags": []bool{true, false}, "names": []string{"a", "b"}},
		"initial_message":         userMessage("go", true),
	}, "terminal", "file_editor")
	e.waitStatus(id, "finished")
	e.stop() // closing the conversation ends its spans

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	roots := byName["conversation"]
	if len(roots) != 1 {
		t.Fatalf("want one conversation span, got %d (%v)", len(roots), names(spans))
	}
	root := roots[0]
	if root.Parent.IsValid() {
		t.Fatal("the conversation span must be a root")
	}
	if got := strings.ReplaceAll(id, "-", ""); root.SpanContext.TraceID().String() != got {
		t.Fatalf("trace id %s, want the conversation id %s", root.SpanContext.TraceID(), got)
	}
	checks := map[string]attribute.Value{
		"tags":           attribute.StringSliceValue([]string{"eval", "nightly"}),
		"metadata.team":  attribute.StringValue("core"),
		"metadata.run":   attribute.Int64Value(7),
		"metadata.ratio": attribute.Float64Value(0.5),
		"metadata.flags": attribute.BoolSliceValue([]bool{true, false}),
		"metadata.names": attribute.StringSliceValue([]string{"a", "b"}),
	}
	// Tags and metadata are on every span, not only on the root (which a
	// killed process never ends, so never exports).
	for _, s := range spans {
		attrs := attrMap(s.Attributes)
		for k, want := range checks {
			if got, ok := attrs[k]; !ok || got.Emit() != want.Emit() || got.Type() != want.Type() {
				t.Errorf("span %s: attribute %s = %v, want %v", s.Name, k, got.Emit(), want.Emit())
			}
		}
	}
	named := byName["nightly-eval"]
	if len(named) != 1 || named[0].Parent.SpanID() != root.SpanContext.SpanID() {
		t.Fatalf("the named span must be the root's only child: %v", names(spans))
	}
	parent := named[0].SpanContext.SpanID()
	llmSpans := byName["chat openai/test-model"]
	toolSpans := slices.Concat(byName["execute_tool terminal"], byName["execute_tool file_editor"], byName["execute_tool finish"])
	if len(llmSpans) != 3 || len(toolSpans) != 3 {
		t.Fatalf("want 3 LLM and 3 tool spans, got %v", names(spans))
	}
	for _, s := range append(llmSpans, toolSpans...) {
		if s.Parent.SpanID() != parent || s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("span %s is not under the named span", s.Name)
		}
	}
	for _, s := range llmSpans {
		a := attrMap(s.Attributes)
		if a["gen_ai.usage.input_tokens"].AsInt64() == 0 || a["gen_ai.response.id"].AsString() == "" {
			t.Errorf("LLM span lacks usage: %v", s.Attributes)
		}
	}
	// The file_editor call failed in a way the model can act on (is_error):
	// its span has an error status; the others do not.
	for _, s := range toolSpans {
		wantErr := s.Name == "execute_tool file_editor"
		if (s.Status.Code.String() == "Error") != wantErr {
			t.Errorf("span %s status %v", s.Name, s.Status)
		}
	}
}

// TestTracingMasksSecrets checks that secret values never reach the exported
// spans: a tool call fails with an error about a connection made with the
// secret (an MCP server reached through a URL and header filled from the
// secrets stops answering), then the LLM rejects a request with a message
// quoting the secret. The failed spans carry the errors masked, and the
// metadata like every span.
func TestTracingMasksSecrets(t *testing.T) {
	const secret = "trace-secret-4b5c6d7e"
	exp := tracetest.NewInMemoryExporter()
	tp := telemetry.NewProvider("test", sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	var broken atomic.Bool
	mcpHandler := mcptest.HTTPHandler("remote_", "")
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			// Drop the connection: the client's error names the URL.
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	defer remote.Close()

	dir := t.TempDir()
	e := buildEnv(t, envOptions{dir: dir, adjust: func(c *agentserver.Config) {
		c.TracerProvider = tp
		c.MCPConnectTimeout = 10 * time.Second
	}},
		llmtest.Reply{Respond: func(*llmtest.Request) llmtest.Reply {
			broken.Store(true) // the MCP server fails from now on
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "remote_echo", Arguments: map[string]any{"text": "hi"}}}}
		}},
		llmtest.Reply{Status: http.StatusBadRequest, Error: "the key " + secret + " is not valid here"},
	)

	e.create(map[string]any{
		"observability_metadata": map[string]any{"team": "core"},
		"secrets":                map[string]any{"TRACE_TOKEN": secret},
		"plugins": []any{map[string]any{"source": "inline", "mcp_servers": map[string]any{"remote": map[string]any{
			"url": remote.URL + "/?k=${TRACE_TOKEN}", "headers": map[string]any{"Authorization": "Bearer ${TRACE_TOKEN}"}}}}},
		"initial_message": userMessage("go", true),
	})
	// Wait for the failed LLM call's span (it is exported as it ends).
	failedLLM := func(s tracetest.SpanStub) bool {
		return strings.HasPrefix(s.Name, "chat ") && s.Status.Code == codes.Error
	}
	if !testwait.Until(20*time.Second, func() bool { return slices.ContainsFunc(exp.GetSpans(), failedLLM) }) {
		t.Fatalf("no failed LLM span exported: %v", names(exp.GetSpans()))
	}
	e.stop()

	spans := exp.GetSpans()
	var toolSpan, llmSpan *tracetest.SpanStub
	for i, s := range spans {
		switch {
		case s.Name == "execute_tool remote_echo":
			toolSpan = &spans[i]
		case failedLLM(s):
			llmSpan = &spans[i]
		}
	}
	if toolSpan == nil || llmSpan == nil {
		t.Fatalf("want the remote_echo tool span and a failed LLM span, got %v", names(spans))
	}
	if toolSpan.Status.Code != codes.Error || !strings.Contains(toolSpan.Status.Description, "rejected by transport") {
		t.Errorf("tool span status %v %q, want the transport error", toolSpan.Status.Code, toolSpan.Status.Description)
	}
	// The LLM's message quoted the secret: the status and the recorded
	// error say so, masked.
	if !strings.Contains(llmSpan.Status.Description, "the key "+secrets.Hidden) {
		t.Errorf("LLM span status %q, want the masked message", llmSpan.Status.Description)
	}
	if len(llmSpan.Events) == 0 || !strings.Contains(attrMap(llmSpan.Events[0].Attributes)["exception.message"].Emit(), secrets.Hidden) {
		t.Errorf("LLM span should record the masked error: %v", llmSpan.Events)
	}
	for _, s := range []*tracetest.SpanStub{toolSpan, llmSpan} {
		if a := attrMap(s.Attributes); a["metadata.team"].AsString() != "core" {
			t.Errorf("span %s lacks the metadata: %v", s.Name, s.Attributes)
		}
	}
	// No secret anywhere in what was exported: names, attributes, status,
	// events (recorded errors).
	for _, s := range spans {
		text := []string{s.Name, s.Status.Description}
		for _, kv := range s.Attributes {
			text = append(text, kv.Value.Emit())
		}
		for _, ev := range s.Events {
			text = append(text, ev.Name)
			for _, kv := range ev.Attributes {
				text = append(text, kv.Value.Emit())
			}
		}
		if strings.Contains(strings.Join(text, "\n"), secret) {
			t.Errorf("span %s exports the secret: %q", s.Name, text)
		}
	}
}

// TestObservabilityMetadataRefused checks the 422 for metadata values that
// are not scalars or homogeneous scalar arrays.
func TestObservabilityMetadataRefused(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		meta any
		loc  string
	}{
		{"object value", map[string]any{"k": map[string]any{"x": 1}}, `["body","observability_metadata","k"]`},
		{"null value", map[string]any{"k": nil}, `["body","observability_metadata","k"]`},
		{"mixed array", map[string]any{"k": []any{"a", 1}}, `["body","observability_metadata","k",1]`},
		{"nested array", map[string]any{"k": []any{[]any{1}}}, `["body","observability_metadata","k",0]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/api/conversations", map[string]any{"agent": e.agent(), "workspace": map[string]any{"working_dir": e.work},
				"observability_metadata": tc.meta})
			if r.status != 422 || !strings.Contains(string(r.body), tc.loc) {
				t.Fatalf("%d %s (want 422 at %s)", r.status, r.body, tc.loc)
			}
		})
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
