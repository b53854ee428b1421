package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// A confirmation accepted while the run that waits for it is ending (it
// has set waiting_for_confirmation, endRun has not marked it over) starts
// no second run beside it: the ending run starts the next one as it ends,
// and the pending actions run once.
func TestConfirmationAcceptedAsTheWaitingRunEnds(t *testing.T) {
	ctx := context.Background()
	think := llmtest.ToolCall{Name: "think", Arguments: map[string]any{"thought": "step"}}
	srv := llmtest.New(llmtest.Reply{ToolCalls: []llmtest.ToolCall{think, think}}, llmtest.Reply{Text: "done"})
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	always := agentwire.ConfirmationPolicy{Kind: "AlwaysConfirm"}
	dir := t.TempDir()
	c, err := Create(ctx, uuid.New(), agentwire.StartConversationRequest{Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10, ConfirmationPolicy: &always},
		Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sendRun(t, c, "go")
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := c.Status(); s != agentwire.StatusWaitingForConfirmation {
		t.Fatalf("status %s, want waiting_for_confirmation", s)
	}
	// The waiting run in its last moment.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ending := make(chan struct{})
	c.do(func() { c.running, c.cancelRun, c.runDone = true, cancel, ending })
	if err := c.RespondToConfirmation(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	if call(c, func() bool { return c.runDone != ending }) {
		t.Fatal("accepting started a second run beside the ending one")
	}
	c.endRun(runCtx, ending)
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := c.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	results := map[string]int{}
	c.do(func() {
		for _, ev := range c.hist.Events() {
			if o, ok := ev.(*events.ObservationEvent); ok {
				results[o.ToolCallID]++
			}
		}
	})
	if len(results) != 2 || results["call_1_1"] != 1 || results["call_1_2"] != 1 || c.Status() != agentwire.StatusFinished {
		t.Fatalf("observations per tool call %v, status %s; want one for each of call_1_1 and call_1_2, finished", results, c.Status())
	}
}
