package startflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

// groupedEnv is an env whose service places starts as they are submitted,
// with alice's starts grouped by strategy, at most max per sandbox, and
// one start run to READY: the sandbox the others may join, whose agent
// server has answered the worker.
func groupedEnv(t *testing.T, strategy acs.GroupingStrategy, max int) (*env, acs.StartTask) {
	t.Helper()
	e := newEnv(t, envOptions{placeOnSubmit: true})
	st := acs.DefaultSettings("alice")
	st.SandboxGroupingStrategy, st.MaxConversationsPerSandbox = strategy, max
	if err := e.store.PutSettings(ctx, st); err != nil {
		t.Fatal(err)
	}
	first, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != acs.TaskWorking {
		t.Fatalf("the first start, with no sandbox to join, was submitted %s", first.Status)
	}
	done := e.deliver(t, first.ID)
	if done.Status != acs.TaskReady {
		t.Fatalf("first start: %s %v", done.Status, done.Detail)
	}
	return e, done
}

// A start on a running sandbox whose agent server answered the worker is
// stored placed, with its slot reserved, in the write that creates it: its
// one delivery creates the conversation, and every step is recorded.
// Delivered twice (a crash before the acknowledgement), it still makes one
// conversation.
func TestAStartIsPlacedAsItIsSubmitted(t *testing.T) {
	for _, replay := range []bool{false, true} {
		t.Run(map[bool]string{false: "delivered once", true: "every step delivered twice"}[replay], func(t *testing.T) {
			e, first := groupedEnv(t, acs.AddToAny, 10)
			tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status != acs.TaskStartingConversation || tk.SandboxID == nil || *tk.SandboxID != *first.SandboxID {
				t.Fatalf("submitted %s on %v, want STARTING_CONVERSATION on %s", tk.Status, tk.SandboxID, *first.SandboxID)
			}
			stored, err := e.store.GetStartTask(ctx, tk.ID)
			if err != nil || stored.Status != acs.TaskStartingConversation {
				t.Fatalf("stored %s, %v", stored.Status, err)
			}
			sb, _ := e.store.GetSandbox(ctx, *first.SandboxID)
			if !sb.HasSlot(tk.ConversationID) {
				t.Fatalf("the placed start's slot is not reserved: %v", sb.Slots)
			}
			var done acs.StartTask
			if replay {
				done = e.drive(t, tk.ID, true)
			} else {
				done = e.deliver(t, tk.ID)
			}
			if done.Status != acs.TaskReady || *done.SandboxID != *first.SandboxID {
				t.Fatalf("start: %s on %v (%v)", done.Status, done.SandboxID, done.Detail)
			}
			var steps []string
			skills := ""
			for _, s := range done.Steps {
				steps = append(steps, string(s.Status))
				if s.Status == acs.TaskSettingUpSkills {
					skills = s.Detail
				}
			}
			if strings.Join(steps, ",") != "WORKING,WAITING_FOR_SANDBOX,PREPARING_REPOSITORY,RUNNING_SETUP_SCRIPT,SETTING_UP_GIT_HOOKS,SETTING_UP_SKILLS,STARTING_CONVERSATION,READY" {
				t.Fatalf("steps recorded %v", steps)
			}
			if !strings.HasPrefix(skills, "0 skills") {
				t.Fatalf("skills step detail %q, want the skills loaded", skills)
			}
			if !done.OwnWorkDir || done.WorkDir == first.WorkDir {
				t.Fatalf("the joining conversation's working directory %q is not its own (the first's %q)", done.WorkDir, first.WorkDir)
			}
			sb, _ = e.store.GetSandbox(ctx, *first.SandboxID)
			convs, _ := e.store.ListConversationsBySandbox(ctx, sb.ID)
			if sb.ConversationCount() != 2 || len(convs) != 2 {
				t.Fatalf("sandbox holds %d slots and %d conversation records, want 2", sb.ConversationCount(), len(convs))
			}
			st, _ := e.rt.Status(ctx, sb.ID)
			var n int
			if err := client.NewServiceAgent(st.AgentURL, st.SessionKey).Get(ctx, "/api/conversations/count", &n); err != nil || n != 2 {
				t.Fatalf("agent server has %d conversations (%v), want 2", n, err)
			}
		})
	}
}

// A start whose placement needs a wait, a round trip or a choice the
// worker makes is stored WORKING, as without a Placer, and the worker
// places it.
func TestAStartThatNeedsTheWorkerIsNotPlacedOnSubmit(t *testing.T) {
	repo := "acme/tiny"
	for _, tc := range []struct {
		name     string
		strategy acs.GroupingStrategy
		max      int
		setup    func(t *testing.T, e *env, first acs.StartTask) v1wire.StartRequest
	}{
		{"no grouping", acs.NoGrouping, 10, nil},
		{"the sandbox is full", acs.AddToAny, 1, nil},
		{"an explicit sandbox_id", acs.AddToAny, 10, func(t *testing.T, e *env, first acs.StartTask) v1wire.StartRequest {
			return v1wire.StartRequest{SandboxID: first.SandboxID}
		}},
		{"a repository to clone", acs.AddToAny, 10, func(t *testing.T, e *env, first acs.StartTask) v1wire.StartRequest {
			return v1wire.StartRequest{SelectedRepository: &repo}
		}},
		{"an agent server this worker has not heard from", acs.AddToAny, 10, func(t *testing.T, e *env, first acs.StartTask) v1wire.StartRequest {
			e.svc.Placer = startflow.NewWorker(e.w.Store, e.w.Queue, e.w.Runtime, e.w.Sealer, e.w.Config)
			return v1wire.StartRequest{}
		}},
		{"a paused sandbox", acs.AddToAny, 10, func(t *testing.T, e *env, first acs.StartTask) v1wire.StartRequest {
			sb, err := e.store.GetSandbox(ctx, *first.SandboxID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.life.Pause(ctx, sb); err != nil {
				t.Fatal(err)
			}
			return v1wire.StartRequest{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, first := groupedEnv(t, tc.strategy, tc.max)
			req := v1wire.StartRequest{}
			if tc.setup != nil {
				req = tc.setup(t, e, first)
			}
			tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, req)
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status != acs.TaskWorking || tk.SandboxID != nil {
				t.Fatalf("submitted %s on %v, want WORKING and no sandbox", tk.Status, tk.SandboxID)
			}
			sb, _ := e.store.GetSandbox(ctx, *first.SandboxID)
			if sb.HasSlot(tk.ConversationID) {
				t.Fatal("a start not placed reserved a slot")
			}
		})
	}
}

// Start answers a start placed as it was submitted once it is READY, so
// the caller needs no poll; any other start is answered as submitted.
func TestStartAnswersAPlacedStartReady(t *testing.T) {
	e, _ := groupedEnv(t, acs.AddToAny, 10)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { e.w.Run(wctx, 1); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	tk, err := e.svc.Start(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != acs.TaskReady || tk.AppConversationID == nil {
		t.Fatalf("a placed start answered %s (app_conversation_id %v), want READY", tk.Status, tk.AppConversationID)
	}
	repo := "acme/tiny"
	tk, err = e.svc.Start(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{SelectedRepository: &repo})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != acs.TaskWorking {
		t.Fatalf("a start the worker places answered %s, want WORKING", tk.Status)
	}
}

// failSend is a queue whose sends fail, as an unreachable queue's would.
type failSend struct{ acs.Queue }

func (failSend) Send(context.Context, acs.Message, time.Duration) error {
	return errors.New("injected: the queue is unreachable")
}

// A placed start whose message cannot be queued ends with ERROR and gives
// back the slot its placement reserved.
func TestAPlacedStartNotQueuedGivesBackItsSlot(t *testing.T) {
	e, first := groupedEnv(t, acs.AddToAny, 10)
	e.svc.Queue = failSend{e.queue}
	_, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if !errors.Is(err, acs.ErrUnavailable) {
		t.Fatalf("submit with the queue down: %v, want ErrUnavailable", err)
	}
	page, err := e.store.ListStartTasks(ctx, "alice", acs.ListOptions{})
	if err != nil || len(page.Items) != 2 || page.Items[0].Status != acs.TaskError || page.Items[0].SandboxID == nil {
		t.Fatalf("tasks after the failed submit: %+v, %v", page.Items, err)
	}
	sb, _ := e.store.GetSandbox(ctx, *first.SandboxID)
	if sb.ConversationCount() != 1 || sb.HasSlot(page.Items[0].ConversationID) {
		t.Fatalf("the unqueued start kept its slot: %v", sb.Slots)
	}
}
