package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/storetest"
)

func newStore(t *testing.T) acs.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
	t.Run("StartTaskWatcher", func(t *testing.T) { storetest.RunStartTaskWatcherTests(t, newStore) })
}

// TestBodySearchWithSmallScanBudget: the body-search contract holds when
// pages end early because their scan budget is spent (here after 3 messages
// or 100 bytes of text).
func TestBodySearchWithSmallScanBudget(t *testing.T) {
	for _, b := range []struct{ events, bytes int }{{3, 1 << 20}, {1000, 100}, {1, 1}} {
		restore := boltstore.SetBodyScanBudget(b.events, b.bytes)
		storetest.RunEventBodySearch(t, newStore)
		restore()
	}
}

// TestBodySearchIsBounded: a body search examines a bounded number of
// messages per page (issue 11, defect 9: it decoded every event of the
// conversation). On a conversation whose only match follows more messages
// than that, the first page is empty and has a token; following the tokens
// reaches the match. Events without text are never examined, however many.
func TestBodySearchIsBounded(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var evs []acs.StoredEvent
	add := func(kind, text string) {
		i := len(evs)
		evs = append(evs, acs.StoredEvent{ID: fmt.Sprintf("e%05d", i), Kind: kind, Source: "user", Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Text: text, JSON: []byte(fmt.Sprintf(`{"kind":%q,"id":"e%05d"}`, kind, i))})
	}
	for i := range 5000 {
		add("ObservationEvent", "")
		if i%2 == 0 {
			add("MessageEvent", fmt.Sprintf("message %d about the parser", i))
		}
	}
	add("MessageEvent", "the needle")
	if _, err := s.PutEvents(ctx, "c", evs); err != nil {
		t.Fatal(err)
	}
	q := acs.EventQuery{EventFilter: acs.EventFilter{Body: "NEEDLE"}}
	page, err := s.SearchEvents(ctx, "c", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 || page.Next == "" {
		t.Fatalf("first page: %d events, next %q; want none and a token", len(page.Items), page.Next)
	}
	var got []string
	for pages := 1; ; pages++ {
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if page.Next == "" {
			break
		}
		if pages > 10 {
			t.Fatal("more pages than 2500 messages need")
		}
		q.PageToken = page.Next
		if page, err = s.SearchEvents(ctx, "c", q); err != nil {
			t.Fatal(err)
		}
	}
	if want := string(evs[len(evs)-1].JSON); len(got) != 1 || got[0] != want {
		t.Fatalf("got %v, want [%s]", got, want)
	}
	// Events without text do not count against the budget: behind 5000
	// observations the match is on the first page.
	var obs []acs.StoredEvent
	for _, e := range evs {
		if e.Text == "" || e.Text == "the needle" {
			obs = append(obs, e)
		}
	}
	if _, err := s.PutEvents(ctx, "obs", obs); err != nil {
		t.Fatal(err)
	}
	page, err = s.SearchEvents(ctx, "obs", acs.EventQuery{EventFilter: acs.EventFilter{Body: "needle"}})
	if err != nil || len(page.Items) != 1 || page.Next != "" {
		t.Fatalf("behind observations: %d events, next %q, %v", len(page.Items), page.Next, err)
	}
}

// TestFullDiskIsStorageFull: on a full disk, a write that needs the file to
// grow fails with acs.ErrStorageFull (HTTP 507) and stores nothing; what
// was stored before is intact and writes work again once space is freed
// (issue 11, defect 7).
func TestFullDiskIsStorageFull(t *testing.T) {
	dir := diskfulltest.Dir(t, 2<<20)
	s, err := boltstore.Open(filepath.Join(dir, "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	event := func(i int) acs.StoredEvent {
		id := fmt.Sprintf("e%06d", i)
		return acs.StoredEvent{ID: id, Kind: "MessageEvent", Source: "user", Timestamp: base.Add(time.Duration(i) * time.Second),
			Text: "message " + id, JSON: []byte(fmt.Sprintf(`{"id":%q,"pad":%q}`, id, strings.Repeat("x", 1000)))}
	}
	free := diskfulltest.Fill(t, dir)
	stored := 0
	for ; stored < 100_000; stored++ {
		if _, err = s.PutEvents(ctx, "c", []acs.StoredEvent{event(stored)}); err != nil {
			break
		}
	}
	if !errors.Is(err, acs.ErrStorageFull) {
		t.Fatalf("event %d on a full disk: %v, want ErrStorageFull", stored, err)
	}
	if n, err := s.CountEvents(ctx, "c", acs.EventFilter{}); err != nil || n != stored {
		t.Fatalf("after the failed write: %d events, %v; want %d", n, err, stored)
	}
	free()
	if _, err := s.PutEvents(ctx, "c", []acs.StoredEvent{event(stored)}); err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	n, err := s.CountEvents(ctx, "c", acs.EventFilter{Body: "message e"})
	if err != nil || n != stored+1 {
		t.Fatalf("after freeing space: %d events, %v; want %d", n, err, stored+1)
	}
}

// The store does not write its free-page list (bolt's NoFreelistSync: a
// commit writes fewer pages; an open finds the free pages by scanning).
// Pages freed before a close are found again after it: writes after the
// reopen reuse them without overwriting live data, and the file stays
// consistent (bolt's own check) with every record readable.
func TestPagesFreedBeforeAReopenAreReusedSafely(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "acs.db")
	open := func() *boltstore.Store {
		s, err := boltstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	create := func(s *boltstore.Store, from, to int) {
		for i := from; i < to; i++ {
			title := strings.Repeat(fmt.Sprintf("conversation %d ", i), 20)
			c := acs.Conversation{ID: fmt.Sprintf("%032x", i), OwnerID: "u1", SandboxID: "sb", Title: &title, CreatedAt: now, UpdatedAt: now}
			if err := s.CreateConversation(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := open()
	create(s, 0, 300)
	for i := 0; i < 300; i += 2 {
		if err := s.DeleteConversation(ctx, fmt.Sprintf("%032x", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open()
	create(s, 300, 600)
	s.Close()

	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("the file is inconsistent: %v", err)
	}
	db.Close()

	s = open()
	defer s.Close()
	for i := 0; i < 600; i++ {
		_, err := s.GetConversation(ctx, fmt.Sprintf("%032x", i))
		if deleted := i < 300 && i%2 == 0; deleted != errors.Is(err, acs.ErrNotFound) || (!deleted && err != nil) {
			t.Fatalf("conversation %d (deleted: %v): %v", i, deleted, err)
		}
	}
	if n, err := s.CountConversations(ctx, "u1", acs.ConversationFilter{}); err != nil || n != 450 {
		t.Fatalf("count %d, %v; want 450", n, err)
	}
}
