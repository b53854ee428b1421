package agent_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// Two condensations asked for at once of an idle conversation condense
// its history once: both summarize the same events, and the summary that
// comes second was planned on a history the first one changed, so it is
// dropped. Both requests are handled.
func TestConcurrentCondensationsCondenseOnce(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.New(
		// The delay makes the two summaries overlap.
		llmtest.Reply{Repeat: true, Match: func(r *llmtest.Request) bool { return r.Model == "summarizer" },
			Text: "SUMMARY", Delay: 200 * time.Millisecond},
		llmtest.Reply{Repeat: true, Text: "answer"})
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	summarizer := cfg
	summarizer.Model = "summarizer"
	dir := t.TempDir()
	c, err := agent.Create(ctx, uuid.New(), agentwire.StartConversationRequest{
		Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg,
			Condenser: &agentwire.Condenser{Kind: "LLMSummarizingCondenser", LLM: &summarizer, MaxSize: 100, KeepFirst: 2}},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10},
		agent.Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 4 {
		if _, err := c.SendMessage(ctx, agentwire.SendMessageRequest{Role: "user", Run: true,
			Content: []events.Content{events.TextItem("hello")}}); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.RequestCondensation(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	raws, err := c.EventsUpTo("")
	if err != nil {
		t.Fatal(err)
	}
	var condensations, requests, lastRequest, lastCondensation int
	for i, raw := range raws {
		ev, err := events.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		switch ev.(type) {
		case *events.Condensation:
			condensations++
			lastCondensation = i
		case *events.CondensationRequest:
			requests++
			lastRequest = i
		}
	}
	if requests != 2 || condensations != 1 || lastCondensation < lastRequest {
		t.Fatalf("%d requests, %d condensations, the last condensation at %d and the last request at %d; want 2 requests handled by 1 condensation",
			requests, condensations, lastCondensation, lastRequest)
	}
}
