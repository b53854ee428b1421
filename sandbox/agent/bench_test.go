package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// BenchmarkLoopOverheadPerStep measures what one agent step costs besides
// the LLM call: building the view, parsing the tool call, running a think
// tool, and durably appending the step's events (stats update, action,
// observation). The LLM's time (HTTP round trip to llmtest included) is
// measured around each call and subtracted.
//
// Besides µs-overhead/step it reports µs-fsync-1KiB, the floor measured in
// the same run: a step of the think tool durably appends its events (stats
// update, action, observation) in one write and one fsync, which runs
// while the next step's LLM call does (emitNoWait), so it counts in
// the overhead only where it outlasts that call.
//
// The "with-secrets" case adds five secrets, so every event is checked (and
// would be masked) before it is logged.
func BenchmarkLoopOverheadPerStep(b *testing.B) {
	b.Run("no-secrets", func(b *testing.B) { loopOverhead(b, nil) })
	b.Run("with-secrets", func(b *testing.B) {
		loopOverhead(b, map[string]agentwire.SecretSource{
			"A": {Kind: "StaticSecret", Value: "alpha-secret-value-1"}, "B": {Kind: "StaticSecret", Value: "bravo-secret-value-2"},
			"C": {Kind: "StaticSecret", Value: "charlie-secret-3"}, "D": {Kind: "StaticSecret", Value: "delta-secret-value-4"},
			"E": {Kind: "StaticSecret", Value: "echo-secret-value-5"}})
	})
}

func loopOverhead(b *testing.B, secrets map[string]agentwire.SecretSource) {
	srv := llmtest.New(llmtest.Reply{Repeat: true, ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "step"}}}})
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	dir := b.TempDir()
	steps := b.N
	req := agentwire.StartConversationRequest{Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: steps, StuckDetection: false,
		Secrets: secrets}
	c, err := Create(context.Background(), uuid.New(), req, Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	floor := fsyncFloor(b, dir)
	b.ResetTimer()
	start := time.Now()
	if _, err := c.SendMessage(context.Background(), agentwire.SendMessageRequest{Role: "user",
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
	b.ReportMetric(float64(floor.Microseconds()), "µs-fsync-1KiB")
}

// fsyncFloor is the median time to append 1 KiB to a file in dir and fsync
// it, measured before the run (outside the timer): a step durably appends
// its events with one such write, so this is the floor of the overhead on
// the machine, and the two compare across machines.
func fsyncFloor(b *testing.B, dir string) time.Duration {
	f, err := os.CreateTemp(dir, "floor")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	times := make([]time.Duration, 21)
	for i := range times {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return times[len(times)/2]
}
