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

// A condensation asked for while a run is ending (after its last step, so
// the loop takes no further step to handle it, and before it is marked not
// running, so the request does not condense by itself) is handled as the
// run ends, not lost: the HTTP route answered 200 for it.
func TestACondensationAskedAsTheRunEndsIsHandled(t *testing.T) {
	think := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "step"}}}}
	srv := llmtest.New(
		llmtest.Reply{Repeat: true, Match: func(r *llmtest.Request) bool { return r.Model == "summarizer" }, Text: "SUMMARY"},
		think, think, think, llmtest.Reply{Text: "done"})
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	summarizer := cfg
	summarizer.Model = "summarizer"
	dir := t.TempDir()
	req := wire.StartConversationRequest{Agent: &wire.Agent{Kind: "Agent", LLM: cfg,
		Condenser: &wire.Condenser{Kind: "LLMSummarizingCondenser", LLM: &summarizer, MaxSize: 100, KeepFirst: 2}},
		Workspace: wire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10}
	ctx := context.Background()
	c, err := Create(ctx, uuid.New(), req, Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SendMessage(ctx, wire.SendMessageRequest{Role: "user", Content: []events.Content{events.TextItem("go")}, Run: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	condensations := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for _, ev := range c.history {
			if _, ok := ev.(*events.Condensation); ok {
				n++
			}
		}
		return n
	}
	// A run in its last moment: the loop has left its steps, endRun has
	// not yet marked it not running.
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	if err := c.RequestCondensation(ctx); err != nil {
		t.Fatal(err)
	}
	if n := condensations(); n != 0 {
		t.Fatalf("%d condensations while the run was still marked running; the request is the loop's", n)
	}
	done := make(chan struct{})
	c.endRun(ctx, done)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("endRun did not close done")
	}
	if n := condensations(); n != 1 {
		t.Fatalf("%d condensations after the run ended, want the requested one", n)
	}
	c.mu.Lock()
	pending := condensationRequested(c.history)
	c.mu.Unlock()
	if pending {
		t.Fatal("the request is still unhandled")
	}
}
