package agent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// Info and Status, read without asking the owner, equal the info of the state
// after each operation that changes it.
func TestInfoIsPublishedAfterEveryChange(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "echo one"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}},
		llmtest.Reply{Text: "the goal is met"},
		llmtest.Reply{Text: `{"complete": true, "score": 1, "missing": ""}`})
	t.Cleanup(srv.Close)
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	dir := t.TempDir()
	req := agentwire.StartConversationRequest{Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg, Tools: []agentwire.ToolRef{{Name: "terminal"}}},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10}
	opts := Options{Dir: filepath.Join(dir, "conv")}
	c, err := Create(ctx, uuid.New(), req, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	idle := func(t *testing.T) {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.WaitIdle(wctx); err != nil {
			t.Fatal(err)
		}
	}
	send := func(text string, run bool) func(t *testing.T) error {
		return func(t *testing.T) error {
			_, err := c.SendMessage(ctx, agentwire.SendMessageRequest{Role: "user", Content: []events.Content{events.TextItem(text)}, Run: run})
			idle(t)
			return err
		}
	}
	title, always := "a title", agentwire.ConfirmationPolicy{Kind: "AlwaysConfirm"}
	for _, op := range []struct {
		name string
		do   func(t *testing.T) error
	}{
		{"create", func(*testing.T) error { return nil }},
		{"message that runs", send("go", true)},
		{"update", func(*testing.T) error {
			return c.Update(ctx, agentwire.UpdateConversationRequest{Title: &title, Tags: map[string]string{"k": "v"}})
		}},
		{"confirmation policy", func(*testing.T) error { return c.SetConfirmationPolicy(ctx, always) }},
		{"security analyzer", func(*testing.T) error {
			return c.SetSecurityAnalyzer(ctx, json.RawMessage(`{"kind":"LLMSecurityAnalyzer"}`))
		}},
		{"switch LLM", func(*testing.T) error {
			next := cfg
			next.Model, next.UsageID = "other-model", "other"
			return c.SwitchLLM(ctx, next)
		}},
		{"secrets", func(*testing.T) error {
			return c.UpdateSecrets(ctx, map[string]agentwire.SecretSource{"TOKEN": {Kind: "StaticSecret", Value: "token-value-123"}})
		}},
		{"mark forked", func(*testing.T) error { return c.MarkForked(uuid.NewString(), "", nil) }},
		{"message", send("later", false)},
		{"navigate", func(*testing.T) error { return c.Navigate(ctx, nil) }},
		{"pause", func(*testing.T) error { return c.Pause(ctx) }},
		{"interrupt", func(*testing.T) error { return c.Interrupt(ctx) }},
		{"never confirm", func(*testing.T) error { return c.SetConfirmationPolicy(ctx, agentwire.NeverConfirm()) }},
		{"goal", func(t *testing.T) error {
			if err := c.StartGoal(ctx, "say the goal is met", 1); err != nil {
				return err
			}
			testwait.For(t, 30*time.Second, "the goal loop to end", func() bool {
				g := c.Goal()
				return g != nil && !g.Active
			})
			idle(t)
			return nil
		}},
		{"reload", func(*testing.T) error {
			if err := c.Close(); err != nil {
				return err
			}
			var err error
			c, err = Load(ctx, opts)
			return err
		}},
	} {
		if err := op.do(t); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		want := call(c, c.buildInfo)
		if got := c.Info(); !reflect.DeepEqual(got, want) {
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			t.Errorf("after %s, Info is\n%s\nwant\n%s", op.name, gb, wb)
		}
		if got := c.Status(); got != want.ExecutionStatus {
			t.Errorf("after %s, Status is %s, want %s", op.name, got, want.ExecutionStatus)
		}
	}
}
