package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func sec(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

// writeV1 writes a file as the first version did: no meta bucket, empty
// owner-index values, no update-time task index, a conversation counter on
// sandboxes.
func writeV1(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw := func(v any) []byte { // domain values as their stored records
		marshal := storerecord.Marshal
		if _, ok := v.(map[string]any); ok {
			marshal = json.Marshal
		}
		b, err := marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bUsers, bKeys, bKeyHash, bTasks, bTasksOwner, bSandboxes, bSandboxHash,
			bSandboxOwner, bConvs, bConvOwner, bConvSandbox, bEvents, bEventIDs} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		parent := "c1"
		for i := 1; i <= 3; i++ {
			title := fmt.Sprint("Old conversation ", i)
			c := acs.Conversation{ID: fmt.Sprint("c", i), OwnerID: "u1", SandboxID: "s1", Title: &title,
				CreatedAt: sec(i), UpdatedAt: sec(i)}
			if i == 3 {
				c.ParentConversationID = &parent
			}
			tx.Bucket(bConvs).Put([]byte(c.ID), raw(c))
			tx.Bucket(bConvOwner).Put(ownerKey(c.OwnerID, c.CreatedAt, c.ID), nil)
			tx.Bucket(bConvSandbox).Put(sandboxKey(c.SandboxID, c.ID), nil)
		}
		for i := 1; i <= 3; i++ {
			tk := acs.StartTask{ID: fmt.Sprint("t", i), OwnerID: "u1", Status: acs.TaskReady,
				ConversationID: fmt.Sprint("c", i), CreatedAt: sec(i), UpdatedAt: sec(10 - i)}
			tx.Bucket(bTasks).Put([]byte(tk.ID), raw(tk))
			tx.Bucket(bTasksOwner).Put(ownerKey(tk.OwnerID, tk.CreatedAt, tk.ID), nil)
		}
		old := map[string]any{"id": "s1", "owner_id": "u1", "status": "RUNNING", "conversations": 3,
			"created_at": sec(0), "updated_at": sec(0), "last_used_at": sec(0)}
		tx.Bucket(bSandboxes).Put([]byte("s1"), raw(old))
		tx.Bucket(bSandboxOwner).Put(ownerKey("u1", sec(0), "s1"), nil)
		empty := map[string]any{"id": "s2", "owner_id": "u1", "status": "RUNNING", "conversations": 0,
			"created_at": sec(1), "updated_at": sec(1), "last_used_at": sec(1)}
		tx.Bucket(bSandboxes).Put([]byte("s2"), raw(empty))
		tx.Bucket(bSandboxOwner).Put(ownerKey("u1", sec(1), "s2"), nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenMigratesVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "acs.db")
	writeV1(t, path)
	for round := 0; round < 2; round++ { // the second Open finds nothing to do
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.SearchConversations(ctx, "u1", acs.ConversationFilter{TitleContains: "old"}, acs.ListOptions{})
		if err != nil || len(page.Items) != 2 || page.Items[0].ID != "c2" {
			t.Fatalf("round %d: search %+v, %v", round, page.Items, err)
		}
		if n, err := s.CountConversations(ctx, "u1", acs.ConversationFilter{}); err != nil || n != 2 {
			t.Fatalf("round %d: count %d, %v", round, n, err)
		}
		tasks, err := s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{ConversationID: "c3"}, acs.SortUpdatedAt, acs.ListOptions{})
		if err != nil || len(tasks.Items) != 1 || tasks.Items[0].ID != "t3" {
			t.Fatalf("round %d: tasks by update %+v, %v", round, tasks.Items, err)
		}
		wantSlots := "[c1 c2 c3]"
		if round == 1 {
			wantSlots = "[c1 c3]" // released in round 0, not migrated again
		}
		sb, err := s.GetSandbox(ctx, "s1")
		if err != nil || fmt.Sprint(sb.Slots) != wantSlots {
			t.Fatalf("round %d: sandbox slots %v, %v", round, sb.Slots, err)
		}
		sb2, err := s.GetSandbox(ctx, "s2")
		if err != nil || len(sb2.Slots) != 0 {
			t.Fatalf("round %d: empty sandbox slots %v, %v", round, sb2.Slots, err)
		}
		if round == 0 {
			if _, err := s.UpdateSandbox(ctx, "s1", func(sb *acs.Sandbox) error { sb.Release("c2"); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutSecret(ctx, acs.Secret{OwnerID: "u1", Name: "N", Sealed: "x"}); err != nil {
			t.Fatalf("new bucket: %v", err)
		}
		s.Close()
	}
}

// An owner-index entry without its value (never written by this version)
// still filters correctly, from the record.
func TestIndexEntryWithoutValue(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	title := "Needle"
	c := acs.Conversation{ID: "c1", OwnerID: "u1", SandboxID: "s1", Title: &title, CreatedAt: sec(1), UpdatedAt: sec(1)}
	if err := s.CreateConversation(ctx, c); err != nil {
		t.Fatal(err)
	}
	tk := acs.StartTask{ID: "t1", OwnerID: "u1", ConversationID: "c1", CreatedAt: sec(1), UpdatedAt: sec(1)}
	if err := s.CreateStartTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bConvOwner).Put(ownerKey("u1", sec(1), "c1"), nil); err != nil {
			return err
		}
		return tx.Bucket(bTasksOwner).Put(ownerKey("u1", sec(1), "t1"), []byte{})
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.CountConversations(ctx, "u1", acs.ConversationFilter{TitleContains: "needle", SandboxID: "s1"})
	if err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
	if n, err := s.CountStartTasks(ctx, "u1", acs.StartTaskFilter{ConversationID: "c1"}); err != nil || n != 1 {
		t.Fatalf("task count %d, %v", n, err)
	}
}

// A version 2 file has no index of unfinished tasks: opening it indexes the
// unfinished ones (and only those) for the reconciler.
func TestOpenMigratesVersion2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acs.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, st := range []acs.StartTaskStatus{acs.TaskWorking, acs.TaskReady, acs.TaskWaitingForSandbox, acs.TaskError} {
		tk := acs.StartTask{ID: fmt.Sprint("t", i), OwnerID: "u1", Status: st, CreatedAt: sec(i), UpdatedAt: sec(10 - i)}
		if err := s.CreateStartTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	// Back to version 2: no open-task index.
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bTasksOpen); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bTasksOpen); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(metaSchema, []byte{2})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListUnfinishedStartTasks(ctx, sec(100), 100); len(got) != 0 {
		t.Fatalf("version 2 fixture still indexed: %v", got)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ListUnfinishedStartTasks(ctx, sec(100), 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.ID)
	}
	if fmt.Sprint(ids) != "[t2 t0]" {
		t.Fatalf("unfinished after migration: %v, want [t2 t0]", ids)
	}
}

// A version 3 file has no text index of events: opening it indexes the
// messages stored so far, so body searches and counts find them.
func TestOpenMigratesVersion3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acs.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, conv := range []string{"c1", "c2"} {
		_, err := s.PutEvents(ctx, conv, []acs.StoredEvent{
			{ID: conv + "-m1", Kind: "MessageEvent", Source: "user", Timestamp: sec(1), Text: "fix the bug in " + conv, JSON: []byte(`{"id":"` + conv + `-m1"}`)},
			{ID: conv + "-a1", Kind: "ActionEvent", Source: "agent", Timestamp: sec(2), JSON: []byte(`{"id":"` + conv + `-a1"}`)},
			{ID: conv + "-m2", Kind: "MessageEvent", Source: "agent", Timestamp: sec(3), Text: "bug fixed", JSON: []byte(`{"id":"` + conv + `-m2"}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Back to version 3: no text index.
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bEventText); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(metaSchema, []byte{3})
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, conv := range []string{"c1", "c2"} {
		page, err := s.SearchEvents(ctx, conv, acs.EventQuery{EventFilter: acs.EventFilter{Body: "BUG"}, Desc: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%s", page.Items); got != fmt.Sprintf(`[{"id":"%s-m2"} {"id":"%s-m1"}]`, conv, conv) {
			t.Fatalf("%s: body search after migration: %s", conv, got)
		}
		if n, err := s.CountEvents(ctx, conv, acs.EventFilter{Body: "in " + conv}); err != nil || n != 1 {
			t.Fatalf("%s: count %d, %v", conv, n, err)
		}
	}
}
