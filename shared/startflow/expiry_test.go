package startflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/startflow"
)

func expiryStore(t *testing.T, now time.Time) (*boltstore.Store, *startflow.Worker) {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	w := startflow.NewWorker(store, nil, nil, nil, startflow.Config{})
	w.Now = func() time.Time { return now }
	return store, w
}

func TestExpireStale(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store, w := expiryStore(t, now)
	tasks := []struct {
		id     string
		status acs.StartTaskStatus
		age    time.Duration
		want   acs.StartTaskStatus
	}{
		{"stuck-waiting", acs.TaskWaitingForSandbox, 2 * time.Hour, acs.TaskError},
		{"stuck-working", acs.TaskWorking, 61 * time.Minute, acs.TaskError},
		{"recent", acs.TaskPreparingRepository, 10 * time.Minute, acs.TaskPreparingRepository},
		{"finished", acs.TaskReady, 5 * time.Hour, acs.TaskReady},
		{"failed", acs.TaskError, 5 * time.Hour, acs.TaskError},
	}
	for _, tc := range tasks {
		err := store.CreateStartTask(ctx, acs.StartTask{ID: tc.id, OwnerID: "alice", Status: tc.status,
			CreatedAt: now.Add(-tc.age), UpdatedAt: now.Add(-tc.age), Request: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ended, err := w.ExpireStale(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ended) != "[stuck-waiting stuck-working]" {
		t.Fatalf("ended %v", ended)
	}
	for _, tc := range tasks {
		tk, err := store.GetStartTask(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != tc.want {
			t.Errorf("%s: %s, want %s", tc.id, tk.Status, tc.want)
		}
		if tc.want == acs.TaskError && tc.status != acs.TaskError {
			if tk.Detail == nil || !strings.Contains(*tk.Detail, string(tc.status)) || !strings.Contains(*tk.Detail, "did not advance") {
				t.Errorf("%s: detail %v does not say where it stopped", tc.id, tk.Detail)
			}
		}
	}
	if again, err := w.ExpireStale(ctx, time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("second pass ended %v, %v", again, err)
	}
}

// A stale start that reserved a slot gives it back as it expires, unless
// its conversation record exists (deleting that releases it).
func TestExpireStaleGivesBackTheSlot(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store, w := expiryStore(t, now)
	sandbox := "s1"
	if err := store.CreateSandbox(ctx, acs.Sandbox{ID: sandbox, OwnerID: "alice", Status: acs.SandboxRunning,
		Slots: []string{"c-stuck", "c-recorded", "c-other"}, CreatedAt: now.Add(-3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"stuck", "recorded"} {
		if err := store.CreateStartTask(ctx, acs.StartTask{ID: id, OwnerID: "alice", Status: acs.TaskStartingConversation,
			ConversationID: "c-" + id, SandboxID: &sandbox, CreatedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-2 * time.Hour),
			Request: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.CreateConversation(ctx, acs.Conversation{ID: "c-recorded", OwnerID: "alice", SandboxID: sandbox}); err != nil {
		t.Fatal(err)
	}
	if ended, err := w.ExpireStale(ctx, time.Hour); err != nil || len(ended) != 2 {
		t.Fatalf("ended %v, %v", ended, err)
	}
	sb, err := store.GetSandbox(ctx, sandbox)
	if err != nil || fmt.Sprint(sb.Slots) != "[c-recorded c-other]" {
		t.Fatalf("slots after the expiry %v (%v), want the stuck start's given back", sb.Slots, err)
	}
}

// deadLetters is a dead-letter queue in memory (the SQS one is exercised
// against fauxqs by the sqsqueue and AWS end-to-end tests).
type deadLetters struct {
	msgs    []acs.Delivery
	deleted []string
}

func (d *deadLetters) ReceiveDead(_ context.Context, max int, _ time.Duration) ([]acs.Delivery, error) {
	n := min(max, len(d.msgs))
	out := d.msgs[:n]
	d.msgs = d.msgs[n:]
	return out, nil
}

func (d *deadLetters) DeleteDead(_ context.Context, receipt string) error {
	d.deleted = append(d.deleted, receipt)
	return nil
}

func TestDrainDeadLetters(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store, w := expiryStore(t, now)
	for id, st := range map[string]acs.StartTaskStatus{"dying": acs.TaskRunningSetupScript, "done": acs.TaskReady} {
		if err := store.CreateStartTask(ctx, acs.StartTask{ID: id, OwnerID: "alice", Status: st, CreatedAt: now, UpdatedAt: now,
			Request: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	dl := &deadLetters{}
	for i, id := range []string{"dying", "done", "gone", ""} {
		dl.msgs = append(dl.msgs, acs.Delivery{Message: acs.Message{TaskID: id}, Receipt: fmt.Sprint("r", i), ReceiveCount: 5})
	}
	for i := 4; i < 25; i++ { // more than one batch
		dl.msgs = append(dl.msgs, acs.Delivery{Receipt: fmt.Sprint("r", i)})
	}
	ended, err := w.DrainDeadLetters(ctx, dl)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ended) != "[dying]" || len(dl.deleted) != 25 {
		t.Fatalf("ended %v, deleted %d of 25", ended, len(dl.deleted))
	}
	tk, _ := store.GetStartTask(ctx, "dying")
	if tk.Status != acs.TaskError || tk.Detail == nil || !strings.Contains(*tk.Detail, "RUNNING_SETUP_SCRIPT") || !strings.Contains(*tk.Detail, "5 deliveries") {
		t.Fatalf("dying task: %s %v", tk.Status, tk.Detail)
	}
	if tk, _ := store.GetStartTask(ctx, "done"); tk.Status != acs.TaskReady {
		t.Fatalf("a finished task was changed: %s", tk.Status)
	}
}
