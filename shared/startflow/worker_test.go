package startflow_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

func TestMain(m *testing.M) { testbin.Main(m) }

var ctx = context.Background()

// redeliveryDelay waits the delay a step asked for before its next
// delivery, as the queue would. Legitimate sleep: the step polls a real
// sandbox and needs that real time to pass.
func redeliveryDelay(delay time.Duration) { time.Sleep(delay) }

// drive runs steps until the task is done, each from the current stored
// state, with an optional replay of every step from its stale snapshot.
func (e *env) drive(t *testing.T, id string, replay bool) acs.StartTask {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		tk, err := e.store.GetStartTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status.Done() {
			return tk
		}
		delay, _, err := e.w.Step(ctx, tk)
		if err != nil {
			// A user error ends the task; Handle does that, so go through it.
			if ferr := e.w.Handle(ctx, acs.Delivery{Message: acs.Message{TaskID: id}, Receipt: "x:1"}); ferr != nil && !strings.Contains(ferr.Error(), "receipt") {
				t.Logf("handle: %v", ferr)
			}
			continue
		}
		if replay {
			// A crash before the acknowledgement: the same delivery again.
			if _, _, err := e.w.Step(ctx, tk); err != nil {
				t.Fatalf("replaying %s: %v", tk.Status, err)
			}
		}
		redeliveryDelay(delay)
	}
	t.Fatal("task did not finish")
	return acs.StartTask{}
}

// Every step delivered twice (a crash before each acknowledgement) makes
// one sandbox, one conversation record and one conversation on the agent
// server, and delivers the initial message once: whether the record is
// stored with READY after the agent server's create (no message) or
// before it (a message: run=false, delivered after the create, or one the
// create runs).
func TestRedeliveredStepsMakeOneSandboxAndOneConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		msg   *agentwire.SendMessageRequest
		users int
	}{
		{"run=false message", &agentwire.SendMessageRequest{Role: "user", Content: []events.Content{events.TextItem("wait for my go")}, Run: false}, 1},
		{"no message", nil, 0},
		{"run=true message", &agentwire.SendMessageRequest{Role: "user", Content: []events.Content{events.TextItem("say hello")}, Run: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{InitialMessage: tc.msg})
			if err != nil {
				t.Fatal(err)
			}
			done := e.drive(t, tk.ID, true)
			e.checkOneOfEach(t, done, tc.users)
			if tc.msg != nil && !tc.msg.Run {
				st, _ := e.rt.Status(ctx, *done.SandboxID)
				infos, err := client.NewServiceAgent(st.AgentURL, st.SessionKey).GetConversations(ctx, done.ConversationID)
				if err != nil || infos[0].ExecutionStatus != "idle" {
					t.Fatalf("a run=false message ran: %v (%v)", infos, err)
				}
			}
		})
	}
}

// checkOneOfEach checks that the READY task done made one sandbox, one
// conversation record (this start's) and one conversation on the agent
// server, with users user messages.
func (e *env) checkOneOfEach(t *testing.T, done acs.StartTask, users int) {
	t.Helper()
	if done.Status != acs.TaskReady {
		t.Fatalf("task %s: %s", done.Status, *done.Detail)
	}
	var steps []string
	for _, s := range done.Steps {
		steps = append(steps, string(s.Status))
	}
	if strings.Join(steps, ",") != "WORKING,WAITING_FOR_SANDBOX,PREPARING_REPOSITORY,RUNNING_SETUP_SCRIPT,SETTING_UP_GIT_HOOKS,SETTING_UP_SKILLS,STARTING_CONVERSATION,READY" {
		t.Fatalf("steps recorded %v", steps)
	}
	if done.AppConversationID == nil || *done.AppConversationID != done.ConversationID {
		t.Fatalf("app_conversation_id %v, want %s", done.AppConversationID, done.ConversationID)
	}
	sbs, _ := e.store.ListSandboxes(ctx, "alice", acs.ListOptions{})
	if len(sbs.Items) != 1 || sbs.Items[0].ConversationCount() != 1 {
		t.Fatalf("sandboxes %+v", sbs.Items)
	}
	convs, _ := e.store.ListConversationsBySandbox(ctx, sbs.Items[0].ID)
	if len(convs) != 1 || convs[0].ID != done.ConversationID || convs[0].StartTaskID != done.ID {
		t.Fatalf("conversations %+v", convs)
	}
	st, _ := e.rt.Status(ctx, sbs.Items[0].ID)
	client := client.NewServiceAgent(st.AgentURL, st.SessionKey)
	var n int
	if err := client.Get(ctx, "/api/conversations/count", &n); err != nil || n != 1 {
		t.Fatalf("agent server has %d conversations (%v)", n, err)
	}
	var got int
	if err := client.Get(ctx, "/api/conversations/"+done.ConversationID+"/events/count?kind=MessageEvent&source=user", &got); err != nil || got != users {
		t.Fatalf("%d user messages, want %d (%v)", got, users, err)
	}
}

// failFinish is a store whose first UpdateStartTaskCreatingConversation
// fails, as a store the control plane loses between the agent server's
// create and the start's last write would.
type failFinish struct {
	acs.Store
	failed atomic.Bool
}

func (f *failFinish) UpdateStartTaskCreatingConversation(ctx context.Context, id string, fn func(*acs.StartTask) error, c acs.Conversation) (acs.StartTask, error) {
	if f.failed.CompareAndSwap(false, true) {
		return acs.StartTask{}, errors.New("injected: the store is unreachable")
	}
	return f.Store.UpdateStartTaskCreatingConversation(ctx, id, fn, c)
}

// A start whose last write fails after the agent server created the
// conversation is repaired by its retry: the create finds the conversation
// made, and the record and READY are stored once.
func TestAFailedLastWriteIsRetried(t *testing.T) {
	e := newEnv(t, envOptions{})
	ff := &failFinish{Store: e.store}
	e.w = startflow.NewWorker(ff, e.w.Queue, e.w.Runtime, e.w.Sealer, e.w.Config)
	tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done := e.drive(t, tk.ID, false)
	if !ff.failed.Load() {
		t.Fatal("the last write was not UpdateStartTaskCreatingConversation")
	}
	e.checkOneOfEach(t, done, 0)
}

func TestExplicitSandbox(t *testing.T) {
	e := newEnv(t, envOptions{})
	first, _ := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	a := e.drive(t, first.ID, false)
	sandboxID := *a.SandboxID
	second, _ := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{SandboxID: &sandboxID})
	b := e.drive(t, second.ID, false)
	if b.Status != acs.TaskReady || *b.SandboxID != sandboxID || !strings.Contains(b.Placement, "explicit") {
		t.Fatalf("explicit placement: %+v", b)
	}
	sb, _ := e.store.GetSandbox(ctx, sandboxID)
	if sb.ConversationCount() != 2 {
		t.Fatalf("sandbox holds %d conversations", sb.ConversationCount())
	}
	// Another user's sandbox is not found.
	third, _ := e.svc.Submit(ctx, acs.User{ID: "bob"}, v1wire.StartRequest{SandboxID: &sandboxID})
	c := e.drive(t, third.ID, false)
	if c.Status != acs.TaskError || !strings.Contains(*c.Detail, "Sandbox not found") {
		t.Fatalf("another user's sandbox: %s %v", c.Status, c.Detail)
	}
}

func TestSandboxFailuresEndTheTask(t *testing.T) {
	dir := t.TempDir()
	crash := filepath.Join(dir, "crash")
	os.WriteFile(crash, []byte("#!/bin/sh\necho 'agent server cannot start: disk full' >&2\nexit 3\n"), 0o755)
	hang := filepath.Join(dir, "hang")
	os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755)
	for _, tc := range []struct{ name, bin, want string }{
		{"crashes", crash, "disk full"},
		{"never ready", hang, "did not become ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{binary: tc.bin, timeout: time.Second})
			tk, _ := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
			done := e.drive(t, tk.ID, false)
			if done.Status != acs.TaskError || done.Detail == nil || !strings.Contains(*done.Detail, tc.want) {
				t.Fatalf("task %s detail %v", done.Status, done.Detail)
			}
			if last := done.Steps[len(done.Steps)-1]; last.Status != acs.TaskError || last.Detail == "" {
				t.Fatalf("the ERROR step is not recorded with its detail: %+v", last)
			}
			// The failed start gives back the slot it reserved.
			if done.SandboxID == nil {
				t.Fatal("the task never got a sandbox")
			}
			sb, err := e.store.GetSandbox(ctx, *done.SandboxID)
			if err != nil || len(sb.Slots) != 0 {
				t.Fatalf("sandbox after the failed start: slots %v, %v", sb.Slots, err)
			}
		})
	}
}

func TestSubmitRefusesUsedConversationID(t *testing.T) {
	e := newEnv(t, envOptions{binary: "/nonexistent", timeout: time.Second})
	id := strings.Repeat("1", 32)
	e.store.CreateConversation(ctx, acs.Conversation{ID: id, OwnerID: "bob"})
	_, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{ConversationID: &id})
	if !errors.Is(err, acs.ErrConflict) || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("got %v", err)
	}
}

// A redelivery that finds the task past the message's step (the worker died
// after a step) continues under a fresh message, so the receive count that
// leads to the dead-letter queue counts only deliveries without progress.
func TestRedeliveryAfterProgressGetsAFreshMessage(t *testing.T) {
	e := newEnv(t, envOptions{binary: "/nonexistent/acs", timeout: time.Second})
	now := time.Now().UTC()
	if err := e.store.CreateStartTask(ctx, acs.StartTask{ID: "t1", OwnerID: "alice", Status: acs.TaskWaitingForSandbox,
		CreatedAt: now, UpdatedAt: now, Request: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.queue.Send(ctx, acs.Message{TaskID: "t1", Step: acs.TaskWorking}, 0); err != nil {
		t.Fatal(err)
	}
	first, _ := e.queue.Receive(ctx, 1, time.Second, 10*time.Millisecond)
	// The long poll returns once the first delivery's visibility runs out.
	again, _ := e.queue.Receive(ctx, 1, time.Second, time.Minute)
	if len(first) != 1 || len(again) != 1 || again[0].ReceiveCount != 2 {
		t.Fatalf("setup: deliveries %+v then %+v", first, again)
	}
	out, err := e.w.Process(ctx, again[0])
	if err != nil || out != startflow.Rescheduled {
		t.Fatalf("process: %v %v", out, err)
	}
	fresh, _ := e.queue.Receive(ctx, 10, time.Second, time.Minute)
	if len(fresh) != 1 || fresh[0].ReceiveCount != 1 || fresh[0].Step != acs.TaskWaitingForSandbox {
		t.Fatalf("after a redelivery with progress: %+v, want one fresh message at WAITING_FOR_SANDBOX", fresh)
	}
}

// Concurrent starts that find no sandbox to join share the one the first of
// them creates (the owner's placement lock), up to the per-sandbox maximum.
func TestConcurrentGroupedStartsShareSandboxes(t *testing.T) {
	cases := []struct {
		strategy  acs.GroupingStrategy
		starts    int
		max       int
		sandboxes int
	}{
		{acs.AddToAny, 4, 10, 1},
		{acs.GroupByNewest, 4, 10, 1},
		{acs.FewestConversations, 3, 10, 1},
		{acs.LeastRecentlyUsed, 3, 10, 1},
		{acs.AddToAny, 4, 2, 2},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d-starts/max-%d", c.strategy, c.starts, c.max), func(t *testing.T) {
			e := newEnv(t, envOptions{})
			st := acs.DefaultSettings("alice")
			st.SandboxGroupingStrategy, st.MaxConversationsPerSandbox = c.strategy, c.max
			if err := e.store.PutSettings(ctx, st); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for i := 0; i < c.starts; i++ {
				tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tk.ID)
			}
			errs := make(chan error, len(ids))
			for _, id := range ids {
				go func() { errs <- e.placeOnly(id) }()
			}
			for range ids {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			sbs, err := e.store.ListSandboxes(ctx, "alice", acs.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, sb := range sbs.Items {
				total += sb.ConversationCount()
				if sb.ConversationCount() > c.max {
					t.Errorf("sandbox %s holds %d conversations (max %d)", sb.ID, sb.ConversationCount(), c.max)
				}
			}
			if len(sbs.Items) != c.sandboxes || total != c.starts {
				t.Fatalf("%d starts made %d sandboxes holding %d conversations, want %d sandboxes", c.starts, len(sbs.Items), total, c.sandboxes)
			}
			// The lock is free: unlocked, or its holder has left WORKING
			// (a start placed on an existing sandbox does not unlock).
			q, _ := e.store.UpdateQuota(ctx, "alice", func(*acs.Quota) error { return nil })
			if q.Placement == nil {
				t.Fatal("no placement lock was taken")
			}
			if !q.Placement.Until.IsZero() {
				holder, err := e.store.GetStartTask(ctx, q.Placement.Task)
				if err != nil || holder.Status == acs.TaskWorking {
					t.Fatalf("placement lock after the starts: %+v (holder %s, %v)", q.Placement, holder.Status, err)
				}
			}
			// A further start places at once, not after the lock's delay.
			next, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
			if err != nil {
				t.Fatal(err)
			}
			tk, err := e.store.GetStartTask(ctx, next.ID)
			if err != nil {
				t.Fatal(err)
			}
			if delay, _, err := e.w.Step(ctx, tk); err != nil || delay != 0 {
				t.Fatalf("a start after the others: delay %v, %v", delay, err)
			}
			if tk, _ = e.store.GetStartTask(ctx, next.ID); tk.Status == acs.TaskWorking {
				t.Fatalf("a start after the others was not placed: %s", tk.Status)
			}
		})
	}
}

// placeOnly runs the task's WORKING step (honouring its delays) until the
// task has chosen a sandbox.
func (e *env) placeOnly(id string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		tk, err := e.store.GetStartTask(ctx, id)
		if err != nil {
			return err
		}
		if tk.Status != acs.TaskWorking {
			return nil
		}
		delay, _, err := e.w.Step(ctx, tk)
		if err != nil {
			return fmt.Errorf("placing %s: %w", id, err)
		}
		redeliveryDelay(delay)
	}
	return fmt.Errorf("task %s was not placed", id)
}

// deliver runs the task's deliveries from the queue, as the worker does,
// until the task is done.
func (e *env) deliver(t *testing.T, id string) acs.StartTask {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		tk, err := e.store.GetStartTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status.Done() {
			return tk
		}
		ds, err := e.queue.Receive(ctx, 1, time.Second, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if _, err := e.w.Process(ctx, d); err != nil {
				t.Logf("process: %v", err)
			}
		}
	}
	t.Fatalf("task %s did not finish", id)
	return acs.StartTask{}
}

// A start on a sandbox whose agent server answered the worker before is
// placed without asking it again; the skills that question loaded are
// loaded beside the conversation's creation and recorded with READY: in
// the delivery that placed it, and in a redelivery after the placement.
func TestReusedStartRecordsItsSkills(t *testing.T) {
	e := newEnv(t, envOptions{})
	st := acs.DefaultSettings("alice")
	st.SandboxGroupingStrategy = acs.AddToAny
	if err := e.store.PutSettings(ctx, st); err != nil {
		t.Fatal(err)
	}
	skills := func(tk acs.StartTask) string {
		for _, s := range tk.Steps {
			if s.Status == acs.TaskSettingUpSkills {
				return s.Detail
			}
		}
		return "(no skills step)"
	}
	var sandbox string
	for _, redeliver := range []bool{false, false, true} {
		tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var done acs.StartTask
		if redeliver {
			done = e.drive(t, tk.ID, true)
		} else {
			done = e.deliver(t, tk.ID)
		}
		if done.Status != acs.TaskReady {
			t.Fatalf("start: %s %v", done.Status, done.Detail)
		}
		if sandbox == "" {
			sandbox = *done.SandboxID
		} else if *done.SandboxID != sandbox {
			t.Fatalf("start placed on %s, not on the running sandbox %s", *done.SandboxID, sandbox)
		}
		if got := skills(done); !strings.HasPrefix(got, "0 skills") {
			t.Fatalf("redelivered %v: skills step detail %q, want the skills loaded", redeliver, got)
		}
		var steps []string
		for _, s := range done.Steps {
			steps = append(steps, string(s.Status))
		}
		if strings.Join(steps, ",") != "WORKING,WAITING_FOR_SANDBOX,PREPARING_REPOSITORY,RUNNING_SETUP_SCRIPT,SETTING_UP_GIT_HOOKS,SETTING_UP_SKILLS,STARTING_CONVERSATION,READY" {
			t.Fatalf("steps recorded %v", steps)
		}
	}
}
