package agent_test

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// slowReceiver is how long each OnChange and OnSecrets call takes in
// TestCloseWaitsForEverythingItStarted, as a push to a far control plane.
const slowReceiver = 300 * time.Millisecond

// callbacks counts a callback's calls: those in flight, the most ever in
// flight at once, those begun after Close returned, and the status each
// call saw.
type callbacks struct {
	inFlight, most, afterClose atomic.Int32
	closed                     *atomic.Bool
	mu                         sync.Mutex
	seen                       []agentwire.ExecutionStatus
}

func (cb *callbacks) call(c *agent.Conversation) {
	if cb.closed.Load() {
		cb.afterClose.Add(1)
	}
	n := cb.inFlight.Add(1)
	defer cb.inFlight.Add(-1)
	for m := cb.most.Load(); n > m && !cb.most.CompareAndSwap(m, n); m = cb.most.Load() {
	}
	cb.mu.Lock()
	cb.seen = append(cb.seen, c.Info().ExecutionStatus)
	cb.mu.Unlock()
	time.Sleep(slowReceiver)
}

func (cb *callbacks) last() agentwire.ExecutionStatus {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if len(cb.seen) == 0 {
		return ""
	}
	return cb.seen[len(cb.seen)-1]
}

// Close returns only once every goroutine the conversation started has
// ended: its run, its setup, its tools' and secrets' work, and its
// OnChange and OnSecrets calls, slow ones included. A burst of changes
// makes one call at a time, and the last call sees the last change.
// Not parallel: it counts goroutines.
func TestCloseWaitsForEverythingItStarted(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	terminal := func(cmd string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": cmd}}}}
	}
	srv := llmtest.New(terminal("echo one"), terminal("echo two > two.txt"), terminal("cat two.txt"),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}})
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.NumRetries = &srv.URL, 0
	dir := t.TempDir()
	req := agentwire.StartConversationRequest{Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg, Tools: []agentwire.ToolRef{{Name: "terminal"}}},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10,
		Secrets: map[string]agentwire.SecretSource{"FIRST": {Kind: "StaticSecret", Value: "first-secret-value"}}}
	var closed atomic.Bool
	changes, secrets := &callbacks{closed: &closed}, &callbacks{closed: &closed}
	c, err := agent.Create(ctx, uuid.New(), req, agent.Options{Dir: filepath.Join(dir, "conv"),
		OnChange: changes.call, OnSecrets: secrets.call})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, agentwire.SendMessageRequest{Role: "user",
		Content: []events.Content{events.TextItem("go")}, Run: true}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if s := c.Status(); s != agentwire.StatusFinished {
		t.Fatalf("status %s after the run, want finished", s)
	}
	testwait.For(t, 10*time.Second, "an OnChange call that sees the finished status", func() bool {
		return changes.inFlight.Load() == 0 && changes.last() == agentwire.StatusFinished
	})
	if err := c.UpdateSecrets(ctx, map[string]agentwire.SecretSource{"SECOND": {Kind: "StaticSecret", Value: "second-secret-value"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	if left := conversationGoroutines(); len(left) > 0 {
		t.Errorf("%d goroutines of the conversation still ran when Close returned:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
	srv.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if !testwait.Until(10*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before the conversation, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
	if n := changes.afterClose.Load() + secrets.afterClose.Load(); n != 0 {
		t.Errorf("%d OnChange or OnSecrets calls began after Close returned", n)
	}
	if m := changes.most.Load(); m != 1 {
		t.Errorf("%d OnChange calls ran at once, want 1", m)
	}
}

// conversationGoroutines returns the stacks of the goroutines that run
// package agent's code or that it started.
func conversationGoroutines() []string {
	var out []string
	for _, g := range goroutineStacks() {
		if strings.Contains(g, "/sandbox/agent.") {
			out = append(out, g)
		}
	}
	return out
}

// goroutineStacks returns the stack of every goroutine, by id.
func goroutineStacks() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		out[id] = g
	}
	return out
}
