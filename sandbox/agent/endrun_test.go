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

// What is asked of a run while it is ending (after the loop's last look
// at it, so the loop takes no further step for it, and before the run is
// marked over, so the request does not act by itself) is done as the run
// ends, as if asked of an idle conversation, and not lost: the HTTP
// routes answered 200 for it. A pause asked after a message wins over
// the message's run; a message after a pause runs.
func TestWhatIsAskedAsARunEndsIsDone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// ask runs while the run is ending.
		ask func(t *testing.T, c *Conversation)
		// want checks the conversation once the run that ended, and any
		// it started, are over.
		wantAgentReplies, wantCondensations int
		wantStatus                          agentwire.ExecutionStatus
	}{
		{name: "condensation", ask: func(t *testing.T, c *Conversation) {
			if err := c.RequestCondensation(ctx); err != nil {
				t.Fatal(err)
			}
		}, wantAgentReplies: 1, wantCondensations: 1, wantStatus: agentwire.StatusFinished},
		{name: "message that runs", ask: func(t *testing.T, c *Conversation) { sendRun(t, c, "and again") },
			wantAgentReplies: 2, wantStatus: agentwire.StatusFinished},
		{name: "message that runs, then a condensation", ask: func(t *testing.T, c *Conversation) {
			sendRun(t, c, "and again")
			if err := c.RequestCondensation(ctx); err != nil {
				t.Fatal(err)
			}
		}, wantAgentReplies: 2, wantCondensations: 1, wantStatus: agentwire.StatusFinished},
		{name: "message, then a pause", ask: func(t *testing.T, c *Conversation) {
			sendRun(t, c, "and again")
			if err := c.Pause(ctx); err != nil {
				t.Fatal(err)
			}
		}, wantAgentReplies: 1, wantStatus: agentwire.StatusPaused},
		{name: "pause, then a message that runs", ask: func(t *testing.T, c *Conversation) {
			// The run is paused as it runs (a finished one is not).
			c.do(func() { c.st.ExecutionStatus = agentwire.StatusRunning })
			if err := c.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			if c.Status() != agentwire.StatusPaused {
				t.Fatalf("status %s after the pause", c.Status())
			}
			sendRun(t, c, "and again")
		}, wantAgentReplies: 2, wantStatus: agentwire.StatusFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := finishedConversation(t)
			// A run in its last moment: the loop has left its steps,
			// endRun has not marked it over.
			c.do(func() { c.running = true })
			tc.ask(t, c)
			if replies, conds := count(c); replies != 1 || conds != 0 {
				t.Fatalf("%d agent replies, %d condensations while the run was still marked running; what was asked is the loop's", replies, conds)
			}
			done := make(chan struct{})
			c.endRun(ctx, done)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("endRun did not close done")
			}
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if err := c.WaitIdle(wctx); err != nil {
				t.Fatal(err)
			}
			replies, conds := count(c)
			if replies != tc.wantAgentReplies || conds != tc.wantCondensations || c.Status() != tc.wantStatus {
				t.Fatalf("%d agent replies, %d condensations, status %s; want %d, %d, %s",
					replies, conds, c.Status(), tc.wantAgentReplies, tc.wantCondensations, tc.wantStatus)
			}
			if call(c, func() bool { return c.hist.CondensationRequested() }) {
				t.Fatal("a condensation request is still unhandled")
			}
		})
	}
}

// finishedConversation is a conversation with a condenser whose first run
// (three think steps and a reply) is over.
func finishedConversation(t *testing.T) *Conversation {
	think := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "step"}}}}
	srv := llmtest.New(
		llmtest.Reply{Repeat: true, Match: func(r *llmtest.Request) bool { return r.Model == "summarizer" }, Text: "SUMMARY"},
		think, think, think, llmtest.Reply{Text: "done"}, llmtest.Reply{Text: "done again"})
	t.Cleanup(srv.Close)
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	summarizer := cfg
	summarizer.Model = "summarizer"
	dir := t.TempDir()
	req := agentwire.StartConversationRequest{Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg,
		Condenser: &agentwire.Condenser{Kind: "LLMSummarizingCondenser", LLM: &summarizer, MaxSize: 100, KeepFirst: 2}},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10}
	c, err := Create(context.Background(), uuid.New(), req, Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sendRun(t, c, "go")
	if err := c.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func sendRun(t *testing.T, c *Conversation, text string) {
	t.Helper()
	if _, err := c.SendMessage(context.Background(), agentwire.SendMessageRequest{Role: "user",
		Content: []events.Content{events.TextItem(text)}, Run: true}); err != nil {
		t.Fatal(err)
	}
}

// count is the number of the agent's messages and of condensations in c's
// history.
func count(c *Conversation) (replies, condensations int) {
	c.do(func() {
		for _, ev := range c.hist.Events() {
			switch e := ev.(type) {
			case *events.MessageEvent:
				if e.Source == events.SourceAgent {
					replies++
				}
			case *events.Condensation:
				condensations++
			}
		}
	})
	return replies, condensations
}
