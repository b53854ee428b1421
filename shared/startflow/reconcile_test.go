package startflow_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/v1wire"
)

// idleEnv is a start worker over real process sandboxes whose agents call
// an LLM that answers only once the test opens its gate, and a reconciler
// whose clock is an hour ahead: every sandbox is idle by its recorded
// activity, so only work in progress keeps it from being paused. No webhook
// is configured: the store never hears of a run from the agent server,
// which is what a control plane sees while a webhook is late.
type idleEnv struct {
	*env
	llm  *llmtest.Server
	gate chan struct{}
	open func()
	life *sandboxes.Lifecycle
}

func newIdleEnv(t *testing.T) *idleEnv {
	t.Helper()
	e := &idleEnv{env: newEnv(t, envOptions{timeout: 60 * time.Second}), gate: make(chan struct{})}
	var once sync.Once
	e.open = func() { once.Do(func() { close(e.gate) }) }
	e.llm = llmtest.New(llmtest.Reply{Repeat: true, Respond: func(*llmtest.Request) llmtest.Reply {
		<-e.gate
		return llmtest.Reply{Text: "Done."}
	}})
	t.Cleanup(e.llm.Close)
	t.Cleanup(e.open) // before the LLM closes (cleanups run last first)
	e.w.Config.LLM.BaseURL = &e.llm.URL
	cfg := e.w.Config.Sandboxes
	cfg.IdlePause = time.Minute
	e.life = &sandboxes.Lifecycle{Store: e.store, Runtime: e.rt, Config: cfg,
		Now: func() time.Time { return time.Now().Add(time.Hour) }}
	return e
}

// submit submits a start with an initial message (run as given).
func (e *idleEnv) submit(t *testing.T, text string, run bool) acs.StartTask {
	t.Helper()
	tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{
		InitialMessage: &agentwire.SendMessageRequest{Role: "user", Content: []events.Content{events.TextItem(text)}, Run: run}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// stepUntil runs the task's steps until it reaches status.
func (e *idleEnv) stepUntil(t *testing.T, id string, status acs.StartTaskStatus) acs.StartTask {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		tk, err := e.store.GetStartTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == status {
			return tk
		}
		if tk.Status.Done() || time.Now().After(deadline) {
			t.Fatalf("task %s is %s (detail %v), want %s", id, tk.Status, tk.Detail, status)
		}
		delay, _, err := e.w.Step(ctx, tk)
		if err != nil {
			t.Fatalf("step %s: %v", tk.Status, err)
		}
		redeliveryDelay(delay)
	}
}

// reconcile runs a reconciler pass and reports whether it paused sandbox
// id; a paused sandbox must read PAUSED, a spared one RUNNING.
func (e *idleEnv) reconcile(t *testing.T, id string) bool {
	t.Helper()
	rep, err := e.life.Reconcile(ctx)
	if err != nil || len(rep.Failed) > 0 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	paused := slices.Contains(rep.Paused, id)
	sb, err := e.store.GetSandbox(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[bool]acs.SandboxStatus{true: acs.SandboxPaused, false: acs.SandboxRunning}[paused]; sb.Status != want {
		t.Fatalf("sandbox %s is %s after a pass that paused %v", id, sb.Status, rep.Paused)
	}
	return paused
}

// agent returns a client for the sandbox's agent server.
func (e *idleEnv) agent(t *testing.T, sandboxID string) *client.Agent {
	t.Helper()
	st, err := e.rt.Status(ctx, sandboxID)
	if err != nil || st.AgentURL == "" {
		t.Fatalf("sandbox %s: %+v %v", sandboxID, st, err)
	}
	return client.NewServiceAgent(st.AgentURL, st.SessionKey)
}

// agentStatus waits until the agent server reports the conversation in
// status want.
func agentStatus(t *testing.T, c *client.Agent, convID string, want agentwire.ExecutionStatus) {
	t.Helper()
	var infos []*agentwire.ConversationInfo
	var err error
	if !testwait.Until(60*time.Second, func() bool {
		infos, err = c.GetConversations(ctx, convID)
		return err == nil && len(infos) == 1 && infos[0] != nil && infos[0].ExecutionStatus == want
	}) {
		t.Fatalf("conversation %s never became %s on its agent server (%v, %v)", convID, want, infos, err)
	}
}

// Rule 10's counterpart: a run that a message started is work, though the
// control plane has not heard of it from the agent server's webhook yet
// (late, or retried after a failure). The reconciler asks the agent server
// rather than pausing the sandbox under the run; once the run is over, the
// sandbox is idle and paused.
func TestReconcileSparesARunNotReportedYet(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run starts a run on a new conversation and returns its
		// conversation and sandbox ids.
		run func(t *testing.T, e *idleEnv) (string, string)
	}{
		{"the initial message of a start", func(t *testing.T, e *idleEnv) (string, string) {
			tk := e.stepUntil(t, e.submit(t, "work on this", true).ID, acs.TaskReady)
			return tk.ConversationID, *tk.SandboxID
		}},
		{"a message sent to a started conversation", func(t *testing.T, e *idleEnv) (string, string) {
			tk := e.stepUntil(t, e.submit(t, "wait for my go", false).ID, acs.TaskReady)
			c := e.agent(t, *tk.SandboxID)
			agentStatus(t, c, tk.ConversationID, agentwire.StatusIdle)
			// What send-message does once the sandbox is ready.
			if err := sandboxes.DeliverMessage(ctx, e.store, c, acs.Dashed(tk.ConversationID), &agentwire.SendMessageRequest{
				Role: events.RoleUser, Content: []events.Content{events.TextItem("go")}, Run: true}); err != nil {
				t.Fatal(err)
			}
			return tk.ConversationID, *tk.SandboxID
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIdleEnv(t)
			convID, sandboxID := tc.run(t, e)
			if c, err := e.store.GetConversation(ctx, convID); err != nil || c.ExecutionStatus == "running" {
				t.Fatalf("setup: the store must not know of the run yet: %+v %v", c, err)
			}
			agent := e.agent(t, sandboxID)
			agentStatus(t, agent, convID, agentwire.StatusRunning)
			if e.reconcile(t, sandboxID) {
				t.Fatal("the sandbox was paused while its agent was running")
			}
			e.open()
			agentStatus(t, agent, convID, agentwire.StatusFinished)
			if !e.reconcile(t, sandboxID) {
				t.Fatal("the sandbox was not paused once its agent had finished")
			}
		})
	}
}

// Rule 10's counterpart: a sandbox on which a conversation is being started
// is not idle, though the start's steps (waiting for the sandbox, the
// clone, the setup script, hooks, skills) record no activity: pausing it
// would kill the step's command and fail the start. Once the start is
// READY and its agent idle, the sandbox is idle and paused.
func TestReconcileSparesAStartInProgress(t *testing.T) {
	e := newIdleEnv(t)
	tk := e.submit(t, "wait for my go", false)
	// (Without a repository the preparation, setup-script and hooks steps
	// have nothing to do, and are recorded with the skills step once the
	// sandbox answers: the task rests at the conversation's start next.)
	for _, status := range []acs.StartTaskStatus{acs.TaskStartingConversation} {
		cur := e.stepUntil(t, tk.ID, status)
		if e.reconcile(t, *cur.SandboxID) {
			t.Fatalf("the sandbox was paused while its start was %s", status)
		}
	}
	// A crash after the step recorded the conversation but before the agent
	// server created it: the record exists, the start goes on.
	cur := e.stepUntil(t, tk.ID, acs.TaskStartingConversation)
	now := time.Now().UTC()
	if err := e.store.CreateConversation(ctx, acs.Conversation{ID: cur.ConversationID, OwnerID: "alice", SandboxID: *cur.SandboxID,
		StartTaskID: cur.ID, ExecutionStatus: string(agentwire.StatusIdle), CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if e.reconcile(t, *cur.SandboxID) {
		t.Fatal("the sandbox was paused while its start was creating the conversation")
	}
	done := e.stepUntil(t, tk.ID, acs.TaskReady)
	agentStatus(t, e.agent(t, *done.SandboxID), done.ConversationID, agentwire.StatusIdle)
	if !e.reconcile(t, *done.SandboxID) {
		t.Fatal("the sandbox was not paused once its start was READY and its agent idle")
	}
}

// staleListing is a store whose listing of every sandbox is older than the
// records (an eventually consistent index, or a pass slower than the
// traffic): it shows each sandbox's activity an hour earlier.
type staleListing struct{ acs.Store }

func (s staleListing) ListAllSandboxes(ctx context.Context, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	page, err := s.Store.ListAllSandboxes(ctx, opts)
	for i := range page.Items {
		sb := &page.Items[i]
		sb.CreatedAt, sb.LastUsedAt, sb.LastActivityAt = sb.CreatedAt.Add(-time.Hour), sb.LastUsedAt.Add(-time.Hour), sb.LastActivityAt.Add(-time.Hour)
	}
	return page, err
}

// The idle rule reads the sandbox's record when it examines it: activity
// recorded after the pass listed the sandboxes counts.
func TestReconcileReadsActivityAfterTheListing(t *testing.T) {
	e := newIdleEnv(t)
	tk := e.stepUntil(t, e.submit(t, "wait for my go", false).ID, acs.TaskReady)
	agentStatus(t, e.agent(t, *tk.SandboxID), tk.ConversationID, agentwire.StatusIdle)
	e.life.Store = staleListing{e.store}
	e.life.Now = nil
	if e.reconcile(t, *tk.SandboxID) {
		t.Fatal("a sandbox used a moment ago was paused by a pass that listed it before")
	}
	e.life.Now = func() time.Time { return time.Now().Add(time.Hour) }
	if !e.reconcile(t, *tk.SandboxID) {
		t.Fatal("an idle sandbox was not paused")
	}
}
