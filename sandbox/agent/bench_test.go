package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/wire"
)

// BenchmarkLoopOverheadPerStep measures what one agent step costs besides
// the LLM call: building the view, parsing the tool call, running a think
// tool, and durably appending the step's events (stats update, action,
// observation). The LLM's time (HTTP round trip to llmtest included) is
// measured around each call and subtracted.
//
// The "with-secrets" case adds five secrets, so every event is checked (and
// would be masked) before it is logged.
func BenchmarkLoopOverheadPerStep(b *testing.B) {
	b.Run("no-secrets", func(b *testing.B) { loopOverhead(b, nil) })
	b.Run("with-secrets", func(b *testing.B) {
		loopOverhead(b, map[string]wire.SecretSource{
			"A": {Kind: "StaticSecret", Value: "alpha-secret-value-1"}, "B": {Kind: "StaticSecret", Value: "bravo-secret-value-2"},
			"C": {Kind: "StaticSecret", Value: "charlie-secret-3"}, "D": {Kind: "StaticSecret", Value: "delta-secret-value-4"},
			"E": {Kind: "StaticSecret", Value: "echo-secret-value-5"}})
	})
}

func loopOverhead(b *testing.B, secrets map[string]wire.SecretSource) {
	srv := llmtest.New(llmtest.Reply{Repeat: true, ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "step"}}}})
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	dir := b.TempDir()
	steps := b.N
	req := wire.StartConversationRequest{Agent: &wire.Agent{Kind: "Agent", LLM: cfg},
		Workspace: wire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: steps, StuckDetection: false,
		Secrets: secrets}
	c, err := Create(context.Background(), uuid.New(), req, Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	start := time.Now()
	if _, err := c.SendMessage(context.Background(), wire.SendMessageRequest{Role: "user",
		Content: []events.Content{events.TextItem("loop")}, Run: true}); err != nil {
		b.Fatal(err)
	}
	if err := c.WaitIdle(context.Background()); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	b.StopTimer()
	llmTime := time.Duration(c.llmNanos.Load())
	b.ReportMetric(float64((wall-llmTime).Microseconds())/float64(steps), "µs-overhead/step")
	b.ReportMetric(float64(llmTime.Microseconds())/float64(steps), "µs-llm/step")
}
