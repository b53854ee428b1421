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
func BenchmarkLoopOverheadPerStep(b *testing.B) {
	srv := llmtest.New(llmtest.Reply{Repeat: true, ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "step"}}}})
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	dir := b.TempDir()
	steps := b.N
	req := wire.StartConversationRequest{Agent: &wire.Agent{Kind: "Agent", LLM: cfg},
		Workspace: wire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: steps, StuckDetection: false}
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
