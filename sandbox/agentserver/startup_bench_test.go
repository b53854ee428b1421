package agentserver_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/telemetry"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// BenchmarkConversationStartup measures what each extension adds to making
// a conversation ready: POST /api/conversations, then a first message (which
// waits for the setup: lookups, plugins, skills, hooks, MCP servers). The
// conversation is deleted, untimed, after each iteration. Compare each case
// with "baseline".
func BenchmarkConversationStartup(b *testing.B) {
	const token = "tok-bench-0123456789"
	remote := httptest.NewServer(mcptest.RequireBearer(token, mcptest.HTTPHandler("remote_", token)))
	defer remote.Close()
	dir := b.TempDir()
	expect := filepath.Join(dir, "expected")
	os.WriteFile(expect, []byte(token), 0o600)
	stdioPlugin := filepath.Join(dir, "stdio-plugin")
	writeFiles(b, stdioPlugin, map[string]string{".mcp.json": `{"mcpServers": {"local": {"command": "` + os.Args[0] +
		`", "args": ["-test.run=^$"], "env": {"ACS_MCP_TEST_SERVER": "stdio", "ACS_MCP_TEST_PREFIX": "local_",
		"ACS_MCP_EXPECT_FILE": "` + expect + `", "API_TOKEN": "${API_TOKEN}"}}}}`})
	secrets := map[string]any{"API_TOKEN": token}

	cases := []struct {
		name    string
		adjust  func(*agentserver.Config)
		fixture map[string]string
		extra   map[string]any
	}{
		{name: "baseline"},
		{name: "skills-50-files", fixture: skillFixture(50)},
		{name: "hooks-hooks.json-and-a-prompt-hook", fixture: map[string]string{".openhands/hooks.json": `{
			"pre_tool_use": [{"matcher": "terminal", "hooks": [{"type": "command", "command": "true"}]}],
			"user_prompt_submit": [{"hooks": [{"type": "command", "command": "true"}]}]}`}},
		{name: "secrets-static", extra: map[string]any{"secrets": secrets}},
		{name: "mcp-stdio-server", extra: map[string]any{"secrets": secrets,
			"plugins": []any{map[string]any{"source": stdioPlugin}}}},
		{name: "mcp-http-server", extra: map[string]any{"secrets": secrets,
			"plugins": []any{map[string]any{"source": "inline:remote", "mcp_servers": map[string]any{"remote": map[string]any{
				"url": remote.URL, "headers": map[string]any{"Authorization": "Bearer ${API_TOKEN}"}}}}}}},
		{name: "tracing", adjust: func(c *agentserver.Config) {
			c.TracerProvider = telemetry.NewProvider("bench", sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
		}, extra: map[string]any{"observability_span_name": "bench", "observability_tags": []string{"a"}}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnvWith(b, tc.adjust, llmtest.Reply{Repeat: true, Text: "ok"})
			writeFiles(b, e.work, tc.fixture)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := e.create(tc.extra, "terminal")
				if r := e.post("/api/conversations/"+id+"/events", userMessage("hi", false)); r.status != 200 {
					b.Fatalf("message: %d %s", r.status, r.body)
				}
				b.StopTimer()
				e.call("DELETE", "/api/conversations/"+id, nil)
				b.StartTimer()
			}
		})
	}
}

func skillFixture(n int) map[string]string {
	files := map[string]string{"AGENTS.md": "Run the tests before you commit."}
	for i := range n {
		files[fmt.Sprintf(".openhands/skills/skill-%02d.md", i)] = fmt.Sprintf(
			"---\nname: skill-%02d\ntriggers: [topic%02d, other%02d]\ndescription: skill %d\n---\n# Skill %d\n\nSome guidance text for the agent.\n", i, i, i, i, i)
	}
	return files
}
