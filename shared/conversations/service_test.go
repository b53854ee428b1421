package conversations_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/conversations"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
)

// newService returns the service over a bbolt store and a process runtime
// that starts nothing (no sandbox of these tests runs).
func newService(t *testing.T) (*conversations.Service, *boltstore.Store) {
	t.Helper()
	dir := t.TempDir()
	store, err := boltstore.Open(filepath.Join(dir, "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt, err := procsandbox.New(procsandbox.Config{Binary: "/nonexistent/acs", Root: filepath.Join(dir, "sandboxes")})
	if err != nil {
		t.Fatal(err)
	}
	life := &sandboxes.Lifecycle{Store: store, Runtime: rt, Config: sandboxes.Config{}.Defaults()}
	return &conversations.Service{Store: store, Sealer: sealbox.FromPassphrase("conversations test"), Life: life}, store
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// seed stores a sandbox (PAUSED) with a parent conversation and its
// sub-conversation, each with an event, a start task and queued messages
// (under the conversation and under its task), and another conversation
// of the same owner on another sandbox.
func seed(t *testing.T, store acs.Store) (sb acs.Sandbox, parent, sub, other acs.Conversation) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	parent = acs.Conversation{ID: acs.NewID(), OwnerID: "alice", CreatedAt: now, UpdatedAt: now}
	sub = acs.Conversation{ID: acs.NewID(), OwnerID: "alice", ParentConversationID: &parent.ID, CreatedAt: now, UpdatedAt: now}
	parent.SubConversationIDs = []string{sub.ID}
	sb = acs.Sandbox{ID: acs.NewID(), OwnerID: "alice", Status: acs.SandboxPaused, Slots: []string{parent.ID, sub.ID}, CreatedAt: now}
	parent.SandboxID, sub.SandboxID = sb.ID, sb.ID
	osb := acs.Sandbox{ID: acs.NewID(), OwnerID: "alice", Status: acs.SandboxPaused, CreatedAt: now}
	other = acs.Conversation{ID: acs.NewID(), OwnerID: "alice", SandboxID: osb.ID, CreatedAt: now, UpdatedAt: now}
	osb.Slots = []string{other.ID}
	must(t, store.CreateSandbox(ctx, sb))
	must(t, store.CreateSandbox(ctx, osb))
	for _, c := range []acs.Conversation{parent, sub, other} {
		must(t, store.CreateConversation(ctx, c))
		if _, err := store.PutEvents(ctx, c.ID, []acs.StoredEvent{{ID: "ev-" + c.ID, Kind: "MessageEvent", Timestamp: now, JSON: []byte(`{"id":"ev-` + c.ID + `"}`)}}); err != nil {
			t.Fatal(err)
		}
		task := acs.StartTask{ID: acs.NewID(), OwnerID: "alice", Status: acs.TaskReady, ConversationID: c.ID, CreatedAt: now, UpdatedAt: now}
		must(t, store.CreateStartTask(ctx, task))
		for _, key := range []string{c.ID, "task-" + task.ID} {
			if _, err := store.AddPendingMessage(ctx, acs.PendingMessage{ID: acs.NewID(), OwnerID: "alice", Key: key, Content: []byte(`[]`), CreatedAt: now}, acs.MaxPendingMessages); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sb, parent, sub, other
}

// gone reports whether every record of c is deleted: the conversation, its
// events, its start tasks and its queued messages.
func gone(t *testing.T, store acs.Store, c acs.Conversation) bool {
	t.Helper()
	ctx := context.Background()
	_, err := store.GetConversation(ctx, c.ID)
	if err != nil && !errors.Is(err, acs.ErrNotFound) {
		t.Fatal(err)
	}
	convGone := errors.Is(err, acs.ErrNotFound)
	n, err := store.CountEvents(ctx, c.ID, acs.EventFilter{})
	must(t, err)
	tasks, err := store.SearchStartTasks(ctx, "alice", acs.StartTaskFilter{ConversationID: c.ID}, "", acs.ListOptions{Limit: 100})
	must(t, err)
	pending, err := store.ListPendingMessages(ctx, c.ID)
	must(t, err)
	all := convGone && n == 0 && len(tasks.Items) == 0 && len(pending) == 0
	none := !convGone && n == 1 && len(tasks.Items) == 1 && len(pending) == 1
	if !all && !none {
		t.Fatalf("conversation %s half deleted: record gone %v, %d events, %d tasks, %d queued", c.ID, convGone, n, len(tasks.Items), len(pending))
	}
	return all
}

func TestDeleteCascade(t *testing.T) {
	ctx := context.Background()
	t.Run("a sub-conversation", func(t *testing.T) {
		s, store := newService(t)
		sb, parent, sub, other := seed(t, store)
		must(t, s.Delete(ctx, sub))
		if !gone(t, store, sub) || gone(t, store, parent) || gone(t, store, other) {
			t.Fatal("only the sub-conversation should be gone")
		}
		p, err := store.GetConversation(ctx, parent.ID)
		must(t, err)
		if len(p.SubConversationIDs) != 0 {
			t.Fatalf("the parent still lists %v", p.SubConversationIDs)
		}
		got, err := store.GetSandbox(ctx, sb.ID)
		must(t, err)
		if !slices.Equal(got.Slots, []string{parent.ID}) || !got.IsTombstone(sub.ID) || got.IsTombstone(parent.ID) {
			t.Fatalf("sandbox after deleting the sub-conversation: slots %v, tombstones %v", got.Slots, got.Tombstones)
		}
	})
	t.Run("a parent takes its sub-conversations and its emptied sandbox", func(t *testing.T) {
		s, store := newService(t)
		sb, parent, sub, other := seed(t, store)
		must(t, s.Delete(ctx, parent))
		if !gone(t, store, parent) || !gone(t, store, sub) || gone(t, store, other) {
			t.Fatal("the parent and its sub-conversation should be gone, and only they")
		}
		if _, err := store.GetSandbox(ctx, sb.ID); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("the emptied sandbox: %v", err)
		}
		if _, err := store.GetSandbox(ctx, other.SandboxID); err != nil {
			t.Fatalf("another sandbox of the owner: %v", err)
		}
	})
	t.Run("twice, and with the sandbox already gone", func(t *testing.T) {
		s, store := newService(t)
		sb, parent, _, _ := seed(t, store)
		must(t, store.DeleteSandbox(ctx, sb.ID))
		must(t, s.Delete(ctx, parent))
		must(t, s.Delete(ctx, parent))
		if !gone(t, store, parent) {
			t.Fatal("the parent should be gone")
		}
	})
}

func TestGetIsOwnerScoped(t *testing.T) {
	s, store := newService(t)
	_, parent, _, _ := seed(t, store)
	ctx := context.Background()
	for _, tc := range []struct {
		owner, id string
		found     bool
	}{
		{"alice", parent.ID, true},
		{"alice", acs.Dashed(parent.ID), true},
		{"bob", parent.ID, false},
		{"alice", acs.NewID(), false},
		{"alice", "not-an-id", false},
	} {
		c, err := s.Get(ctx, tc.owner, tc.id)
		if tc.found && (err != nil || c.ID != parent.ID) {
			t.Errorf("Get(%s, %s) = %s, %v", tc.owner, tc.id, c.ID, err)
		}
		if !tc.found && !errors.Is(err, acs.ErrNotFound) {
			t.Errorf("Get(%s, %s): %v, want not found", tc.owner, tc.id, err)
		}
	}
}
