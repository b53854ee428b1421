// Package storetest is the conformance suite every acs.Store adapter passes.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Run runs the suite. newStore returns an empty store for each subtest.
func Run(t *testing.T, newStore func(t *testing.T) acs.Store) {
	t.Run("Users", func(t *testing.T) { testUsers(t, newStore(t)) })
	t.Run("APIKeys", func(t *testing.T) { testAPIKeys(t, newStore(t)) })
	t.Run("StartTasks", func(t *testing.T) { testStartTasks(t, newStore(t)) })
	t.Run("ConcurrentUpdatesLoseNothing", func(t *testing.T) { testConcurrentUpdates(t, newStore(t)) })
	t.Run("Sandboxes", func(t *testing.T) { testSandboxes(t, newStore(t)) })
	t.Run("SlotReservationNeverOverfills", func(t *testing.T) { testSlots(t, newStore(t)) })
	t.Run("Conversations", func(t *testing.T) { testConversations(t, newStore(t)) })
	t.Run("Events", func(t *testing.T) { testEvents(t, newStore(t)) })
	t.Run("EventPaging", func(t *testing.T) { testEventPaging(t, newStore(t)) })
	RunEventBodySearch(t, newStore)
	t.Run("StartTaskSearch", func(t *testing.T) { testStartTaskSearch(t, newStore(t)) })
	t.Run("StartTaskDelete", func(t *testing.T) { testStartTaskDelete(t, newStore(t)) })
	t.Run("StartTaskLimitClamp", func(t *testing.T) { testStartTaskLimit(t, newStore(t)) })
	t.Run("UnfinishedStartTasks", func(t *testing.T) { testUnfinishedStartTasks(t, newStore(t)) })
	t.Run("ListAllSandboxes", func(t *testing.T) { testListAllSandboxes(t, newStore(t)) })
	t.Run("ConversationIndexFollowsUpdates", func(t *testing.T) { testConversationUpdatesReindex(t, newStore(t)) })
	t.Run("Settings", func(t *testing.T) { testSettings(t, newStore(t)) })
	t.Run("Secrets", func(t *testing.T) { testSecrets(t, newStore(t)) })
	t.Run("PendingMessages", func(t *testing.T) { testPendingMessages(t, newStore(t)) })
	t.Run("PendingMessagesNeverOverfill", func(t *testing.T) { testPendingCapacity(t, newStore(t)) })
	t.Run("QuotaClaimsAreAtomic", func(t *testing.T) { testQuota(t, newStore(t)) })
}

var ctx = context.Background()

// base is a fixed instant; records are spaced from it so orders are exact.
var base = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func at(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got %v, want %v", err, kind)
	}
}

func testUsers(t *testing.T, s acs.Store) {
	u := acs.User{ID: "u1", Name: "Ada", Admin: true, CreatedAt: base}
	must(t, s.CreateUser(ctx, u))
	wantErr(t, s.CreateUser(ctx, u), acs.ErrConflict)
	got, err := s.GetUser(ctx, "u1")
	must(t, err)
	if got.Name != "Ada" || !got.Admin || !got.CreatedAt.Equal(base) {
		t.Fatalf("user %+v", got)
	}
	_, err = s.GetUser(ctx, "nope")
	wantErr(t, err, acs.ErrNotFound)
}

func testAPIKeys(t *testing.T, s acs.Store) {
	k1 := acs.APIKey{ID: "k1", UserID: "u1", Name: "laptop", Hash: acs.HashKey("secret-1"), CreatedAt: base}
	k2 := acs.APIKey{ID: "k2", UserID: "u1", Name: "ci", Hash: acs.HashKey("secret-2"), CreatedAt: at(1)}
	k3 := acs.APIKey{ID: "k3", UserID: "u2", Name: "other", Hash: acs.HashKey("secret-3"), CreatedAt: at(2)}
	for _, k := range []acs.APIKey{k1, k2, k3} {
		must(t, s.CreateAPIKey(ctx, k))
	}
	wantErr(t, s.CreateAPIKey(ctx, acs.APIKey{ID: "k9", UserID: "u1", Hash: k1.Hash}), acs.ErrConflict)
	wantErr(t, s.CreateAPIKey(ctx, acs.APIKey{ID: "k1", UserID: "u1", Hash: "other"}), acs.ErrConflict)
	got, err := s.GetAPIKeyByHash(ctx, acs.HashKey("secret-2"))
	must(t, err)
	if got.ID != "k2" || got.UserID != "u1" {
		t.Fatalf("key %+v", got)
	}
	_, err = s.GetAPIKeyByHash(ctx, acs.HashKey("unknown"))
	wantErr(t, err, acs.ErrNotFound)
	keys, err := s.ListAPIKeys(ctx, "u1")
	must(t, err)
	if len(keys) != 2 {
		t.Fatalf("u1 keys %v", keys)
	}
	wantErr(t, s.DeleteAPIKey(ctx, "u1", "k3"), acs.ErrNotFound) // another user's key
	must(t, s.DeleteAPIKey(ctx, "u1", "k1"))
	_, err = s.GetAPIKeyByHash(ctx, k1.Hash)
	wantErr(t, err, acs.ErrNotFound)
	wantErr(t, s.DeleteAPIKey(ctx, "u1", "k1"), acs.ErrNotFound)
}

func task(id, owner string, i int) acs.StartTask {
	return acs.StartTask{ID: id, OwnerID: owner, Status: acs.TaskWorking, ConversationID: "c-" + id,
		Request: []byte(`{"x":1}`), CreatedAt: at(i), UpdatedAt: at(i)}
}

func testStartTasks(t *testing.T, s acs.Store) {
	for i := 0; i < 5; i++ {
		must(t, s.CreateStartTask(ctx, task(fmt.Sprint("t", i), "u1", i)))
	}
	must(t, s.CreateStartTask(ctx, task("tx", "u2", 9)))
	wantErr(t, s.CreateStartTask(ctx, task("t1", "u1", 1)), acs.ErrConflict)

	got, err := s.UpdateStartTask(ctx, "t2", func(tk *acs.StartTask) error {
		tk.Advance(acs.TaskWaitingForSandbox, at(20))
		sb := "sb1"
		tk.SandboxID = &sb
		tk.OwnerID = "attacker" // owner and id are not updatable
		return nil
	})
	must(t, err)
	if got.Status != acs.TaskWaitingForSandbox || got.OwnerID != "u1" || *got.SandboxID != "sb1" || len(got.Steps) != 1 {
		t.Fatalf("updated task %+v", got)
	}
	reread, err := s.GetStartTask(ctx, "t2")
	must(t, err)
	if reread.Status != acs.TaskWaitingForSandbox || !reread.Steps[0].StartedAt.Equal(at(20)) {
		t.Fatalf("reread %+v", reread)
	}
	boom := errors.New("boom")
	_, err = s.UpdateStartTask(ctx, "t2", func(tk *acs.StartTask) error { tk.Status = acs.TaskError; return boom })
	wantErr(t, err, boom)
	if reread, _ := s.GetStartTask(ctx, "t2"); reread.Status != acs.TaskWaitingForSandbox {
		t.Fatal("a failed update was stored")
	}
	_, err = s.UpdateStartTask(ctx, "nope", func(*acs.StartTask) error { return nil })
	wantErr(t, err, acs.ErrNotFound)

	// Newest first, paged.
	var ids []string
	opts := acs.ListOptions{Limit: 2}
	for {
		page, err := s.ListStartTasks(ctx, "u1", opts)
		must(t, err)
		for _, tk := range page.Items {
			ids = append(ids, tk.ID)
		}
		if page.Next == "" {
			break
		}
		opts.PageToken = page.Next
	}
	if fmt.Sprint(ids) != "[t4 t3 t2 t1 t0]" {
		t.Fatalf("list order %v", ids)
	}
	_, err = s.ListStartTasks(ctx, "u1", acs.ListOptions{PageToken: "%%%not a token"})
	wantErr(t, err, acs.ErrInvalid)
}

func testConcurrentUpdates(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t", "u1", 0)))
	const writers, each = 10, 10
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.UpdateStartTask(ctx, "t", func(tk *acs.StartTask) error { tk.Attempts++; return nil }); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.GetStartTask(ctx, "t")
	must(t, err)
	if got.Attempts != writers*each {
		t.Fatalf("lost updates: %d of %d", got.Attempts, writers*each)
	}
}

func sandbox(id, owner string, i int, hash string) acs.Sandbox {
	return acs.Sandbox{ID: id, OwnerID: owner, SpecID: "default", Status: acs.SandboxStarting, SessionKeyHash: hash,
		CreatedAt: at(i), UpdatedAt: at(i), LastUsedAt: at(i)}
}

func testSandboxes(t *testing.T, s acs.Store) {
	must(t, s.CreateSandbox(ctx, sandbox("s1", "u1", 1, "h1")))
	must(t, s.CreateSandbox(ctx, sandbox("s2", "u1", 2, "")))
	must(t, s.CreateSandbox(ctx, sandbox("s3", "u2", 3, "h3")))
	wantErr(t, s.CreateSandbox(ctx, sandbox("s1", "u1", 1, "")), acs.ErrConflict)

	got, err := s.GetSandboxBySessionKeyHash(ctx, "h1")
	must(t, err)
	if got.ID != "s1" {
		t.Fatalf("by hash %+v", got)
	}
	_, err = s.GetSandboxBySessionKeyHash(ctx, "")
	wantErr(t, err, acs.ErrNotFound)
	// Rotating the key moves the index.
	_, err = s.UpdateSandbox(ctx, "s1", func(sb *acs.Sandbox) error {
		sb.SessionKeyHash, sb.Status, sb.AgentURL = "h1b", acs.SandboxRunning, "http://127.0.0.1:1"
		return nil
	})
	must(t, err)
	_, err = s.GetSandboxBySessionKeyHash(ctx, "h1")
	wantErr(t, err, acs.ErrNotFound)
	got, err = s.GetSandboxBySessionKeyHash(ctx, "h1b")
	must(t, err)
	if got.Status != acs.SandboxRunning || got.AgentURL != "http://127.0.0.1:1" {
		t.Fatalf("after update %+v", got)
	}
	page, err := s.ListSandboxes(ctx, "u1", acs.ListOptions{})
	must(t, err)
	if len(page.Items) != 2 || page.Items[0].ID != "s2" || page.Items[1].ID != "s1" || page.Next != "" {
		t.Fatalf("list %+v", page)
	}
	must(t, s.DeleteSandbox(ctx, "s1"))
	_, err = s.GetSandbox(ctx, "s1")
	wantErr(t, err, acs.ErrNotFound)
	_, err = s.GetSandboxBySessionKeyHash(ctx, "h1b")
	wantErr(t, err, acs.ErrNotFound)
	wantErr(t, s.DeleteSandbox(ctx, "s1"), acs.ErrNotFound)
	page, _ = s.ListSandboxes(ctx, "u1", acs.ListOptions{})
	if len(page.Items) != 1 {
		t.Fatalf("deleted sandbox still listed: %+v", page.Items)
	}
}

func testSlots(t *testing.T, s acs.Store) {
	must(t, s.CreateSandbox(ctx, sandbox("s", "u1", 0, "")))
	const capacity, contenders = 20, 50
	reserve := func(conv string) (acs.Sandbox, error) {
		return s.UpdateSandbox(ctx, "s", func(sb *acs.Sandbox) error { return sb.Reserve(conv, capacity) })
	}
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < contenders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := reserve(fmt.Sprintf("conv-%02d", i))
			if err == nil {
				won.Add(1)
			} else if !errors.Is(err, acs.ErrCapacity) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := s.GetSandbox(ctx, "s")
	must(t, err)
	if won.Load() != capacity || got.ConversationCount() != capacity {
		t.Fatalf("%d reservations succeeded, %d slots, capacity %d", won.Load(), got.ConversationCount(), capacity)
	}
	distinct := map[string]bool{}
	for _, id := range got.Slots {
		distinct[id] = true
	}
	if len(distinct) != capacity {
		t.Fatalf("slots hold duplicates: %v", got.Slots)
	}

	// Reserving again for a holder is a no-op, even when full.
	holder := got.Slots[0]
	again, err := reserve(holder)
	must(t, err)
	if again.ConversationCount() != capacity || !again.HasSlot(holder) {
		t.Fatalf("re-reserving changed the slots: %v", again.Slots)
	}
	// A newcomer is refused, and the refusal stores nothing.
	_, err = reserve("newcomer")
	wantErr(t, err, acs.ErrCapacity)
	// Releasing frees a slot for the newcomer.
	released, err := s.UpdateSandbox(ctx, "s", func(sb *acs.Sandbox) error { sb.Release(holder); return nil })
	must(t, err)
	if released.ConversationCount() != capacity-1 || released.HasSlot(holder) {
		t.Fatalf("after release: %v", released.Slots)
	}
	got, err = reserve("newcomer")
	must(t, err)
	if got.ConversationCount() != capacity || !got.HasSlot("newcomer") {
		t.Fatalf("after reserving the freed slot: %v", got.Slots)
	}

	// A MISSING sandbox takes no new conversation, whatever its room.
	_, err = s.UpdateSandbox(ctx, "s", func(sb *acs.Sandbox) error {
		sb.Status = acs.SandboxMissing
		sb.Release("newcomer")
		return nil
	})
	must(t, err)
	_, err = reserve("late")
	wantErr(t, err, acs.ErrConflict)
	got, err = s.GetSandbox(ctx, "s")
	must(t, err)
	if got.HasSlot("late") || got.ConversationCount() != capacity-1 {
		t.Fatalf("a refused reservation was stored: %v", got.Slots)
	}
}

func conversation(id, owner, sandbox string, i int, title string) acs.Conversation {
	c := acs.Conversation{ID: id, OwnerID: owner, SandboxID: sandbox, CreatedAt: at(i), UpdatedAt: at(i)}
	if title != "" {
		c.Title = &title
	}
	return c
}

func testConversations(t *testing.T, s acs.Store) {
	parent := "c1"
	convs := []acs.Conversation{
		conversation("c1", "u1", "s1", 1, "Fix the parser"),
		conversation("c2", "u1", "s1", 2, "Add tests"),
		conversation("c3", "u1", "s2", 3, "Parser speedup"),
		conversation("c4", "u2", "s1", 4, "Someone else's parser"),
	}
	sub := conversation("c5", "u1", "s1", 5, "sub task")
	sub.ParentConversationID = &parent
	convs = append(convs, sub)
	for _, c := range convs {
		must(t, s.CreateConversation(ctx, c))
	}
	wantErr(t, s.CreateConversation(ctx, convs[0]), acs.ErrConflict)

	search := func(f acs.ConversationFilter) []string {
		t.Helper()
		var ids []string
		opts := acs.ListOptions{Limit: 1}
		for {
			page, err := s.SearchConversations(ctx, "u1", f, opts)
			must(t, err)
			for _, c := range page.Items {
				ids = append(ids, c.ID)
			}
			if page.Next == "" {
				return ids
			}
			opts.PageToken = page.Next
		}
	}
	t2, t3 := at(2), at(3)
	cases := []struct {
		name string
		f    acs.ConversationFilter
		want string
	}{
		{"all top-level", acs.ConversationFilter{}, "[c3 c2 c1]"},
		{"with sub-conversations", acs.ConversationFilter{IncludeSubConversations: true}, "[c5 c3 c2 c1]"},
		{"title", acs.ConversationFilter{TitleContains: "PARSER"}, "[c3 c1]"},
		{"created range", acs.ConversationFilter{CreatedGTE: &t2, CreatedLT: &t3}, "[c2]"},
		{"sandbox", acs.ConversationFilter{SandboxID: "s1"}, "[c2 c1]"},
		{"nothing", acs.ConversationFilter{TitleContains: "zzz"}, "[]"},
		{"created from", acs.ConversationFilter{CreatedGTE: &t3, IncludeSubConversations: true}, "[c5 c3]"},
		{"created before", acs.ConversationFilter{CreatedLT: &t3}, "[c2 c1]"},
		{"updated range", acs.ConversationFilter{UpdatedGTE: &t2, UpdatedLT: &t3}, "[c2]"},
		{"sandbox with sub-conversations", acs.ConversationFilter{SandboxID: "s1", IncludeSubConversations: true}, "[c5 c2 c1]"},
		{"title with sub-conversations", acs.ConversationFilter{TitleContains: "TASK", IncludeSubConversations: true}, "[c5]"},
		{"title without sub-conversations", acs.ConversationFilter{TitleContains: "task"}, "[]"},
		{"unknown sandbox", acs.ConversationFilter{SandboxID: "s9", IncludeSubConversations: true}, "[]"},
	}
	for _, tc := range cases {
		got := search(tc.f)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: got %v want %s", tc.name, got, tc.want)
		}
		n, err := s.CountConversations(ctx, "u1", tc.f)
		must(t, err)
		if n != len(got) {
			t.Errorf("%s: count %d, search found %d", tc.name, n, len(got))
		}
	}
	if n, err := s.CountConversations(ctx, "u2", acs.ConversationFilter{IncludeSubConversations: true}); err != nil || n != 1 {
		t.Fatalf("u2 count %d, %v", n, err)
	}
	if n, err := s.CountConversations(ctx, "nobody", acs.ConversationFilter{}); err != nil || n != 0 {
		t.Fatalf("count of a user without conversations %d, %v", n, err)
	}
	_, err := s.SearchConversations(ctx, "u1", acs.ConversationFilter{}, acs.ListOptions{PageToken: "@@@"})
	wantErr(t, err, acs.ErrInvalid)
	_, err = s.SearchConversations(ctx, "u1", acs.ConversationFilter{}, acs.ListOptions{PageToken: "bm90IGEgdG9rZW4"})
	wantErr(t, err, acs.ErrInvalid)
	bySandbox := func(id string) string {
		cs, err := s.ListConversationsBySandbox(ctx, id)
		must(t, err)
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		sort.Strings(ids)
		return fmt.Sprint(ids)
	}
	if got := bySandbox("s1"); got != "[c1 c2 c4 c5]" {
		t.Fatalf("by sandbox s1: %s", got)
	}
	_, err = s.UpdateConversation(ctx, "c2", func(c *acs.Conversation) error {
		c.SandboxID, c.ExecutionStatus = "s2", "running"
		return nil
	})
	must(t, err)
	if got := bySandbox("s2"); got != "[c2 c3]" {
		t.Fatalf("after move, s2: %s", got)
	}
	must(t, s.DeleteConversation(ctx, "c2"))
	wantErr(t, s.DeleteConversation(ctx, "c2"), acs.ErrNotFound)
	if got := bySandbox("s2"); got != "[c3]" {
		t.Fatalf("after delete, s2: %s", got)
	}
	_, err = s.GetConversation(ctx, "c2")
	wantErr(t, err, acs.ErrNotFound)
	if got := fmt.Sprint(search(acs.ConversationFilter{})); got != "[c3 c1]" {
		t.Fatalf("after delete: %s", got)
	}
	if n, _ := s.CountConversations(ctx, "u1", acs.ConversationFilter{}); n != 2 {
		t.Fatalf("count after delete: %d", n)
	}
}

func ev(id, kind, source string, i int, text string) acs.StoredEvent {
	return acs.StoredEvent{ID: id, Kind: kind, Source: source, Timestamp: at(i), Text: text,
		JSON: []byte(fmt.Sprintf(`{"kind":%q,"id":%q}`, kind, id))}
}

func idsOf(items [][]byte) []string {
	var out []string
	for _, b := range items {
		if b == nil {
			out = append(out, "nil")
			continue
		}
		s := string(b)
		i := len(`{"kind":"`)
		j := i
		for s[j] != '"' {
			j++
		}
		k := j + len(`","id":"`)
		out = append(out, s[k:len(s)-2])
	}
	return out
}

func testEvents(t *testing.T, s acs.Store) {
	evs := []acs.StoredEvent{
		ev("e1", "MessageEvent", "user", 1, "please fix the bug"),
		ev("e2", "ActionEvent", "agent", 2, ""),
		ev("e3", "ObservationEvent", "environment", 3, ""),
		ev("e4", "MessageEvent", "agent", 4, "the bug is fixed"),
	}
	n, err := s.PutEvents(ctx, "c1", evs[:3])
	must(t, err)
	if n != 3 {
		t.Fatalf("added %d", n)
	}
	n, err = s.PutEvents(ctx, "c1", evs) // e1..e3 again, e4 new
	must(t, err)
	if n != 1 {
		t.Fatalf("re-put added %d, want 1", n)
	}
	must2 := func(_ int, err error) { must(t, err) }
	must2(s.PutEvents(ctx, "c2", []acs.StoredEvent{ev("x1", "MessageEvent", "user", 1, "bug elsewhere")}))

	t2, t4 := at(2), at(4)
	cases := []struct {
		name string
		q    acs.EventQuery
		want string
	}{
		{"all", acs.EventQuery{}, "[e1 e2 e3 e4]"},
		{"desc", acs.EventQuery{Desc: true}, "[e4 e3 e2 e1]"},
		{"kind", acs.EventQuery{EventFilter: acs.EventFilter{Kind: "MessageEvent"}}, "[e1 e4]"},
		{"source", acs.EventQuery{EventFilter: acs.EventFilter{Source: "agent"}}, "[e2 e4]"},
		{"body", acs.EventQuery{EventFilter: acs.EventFilter{Body: "BUG"}}, "[e1 e4]"},
		{"gte", acs.EventQuery{EventFilter: acs.EventFilter{TimestampGTE: &t2}}, "[e2 e3 e4]"},
		{"lt", acs.EventQuery{EventFilter: acs.EventFilter{TimestampLT: &t4}}, "[e1 e2 e3]"},
		{"range desc", acs.EventQuery{EventFilter: acs.EventFilter{TimestampGTE: &t2, TimestampLT: &t4}, Desc: true}, "[e3 e2]"},
	}
	for _, tc := range cases {
		page, err := s.SearchEvents(ctx, "c1", tc.q)
		must(t, err)
		if got := fmt.Sprint(idsOf(page.Items)); got != tc.want {
			t.Errorf("%s: got %s want %s", tc.name, got, tc.want)
		}
		cnt, err := s.CountEvents(ctx, "c1", tc.q.EventFilter)
		must(t, err)
		if want := len(idsOf(page.Items)); cnt != want {
			t.Errorf("%s: count %d want %d", tc.name, cnt, want)
		}
	}
	// Stored JSON comes back byte for byte (no re-encoding, no HTML escaping).
	exact := acs.StoredEvent{ID: "ex", Kind: "MessageEvent", Source: "user", Timestamp: at(9),
		JSON: []byte(`{"kind":"MessageEvent","id":"ex","text":"a <b> & c \u00e9 é"}`)}
	must2(s.PutEvents(ctx, "c3", []acs.StoredEvent{exact}))
	back, err := s.GetEvents(ctx, "c3", []string{"ex"})
	must(t, err)
	if string(back[0]) != string(exact.JSON) {
		t.Fatalf("stored JSON changed:\n got %s\nwant %s", back[0], exact.JSON)
	}
	page0, err := s.SearchEvents(ctx, "c3", acs.EventQuery{})
	must(t, err)
	if string(page0.Items[0]) != string(exact.JSON) {
		t.Fatalf("searched JSON changed: %s", page0.Items[0])
	}

	got, err := s.GetEvents(ctx, "c1", []string{"e3", "nope", "e1", "x1"})
	must(t, err)
	if g := fmt.Sprint(idsOf(got)); g != "[e3 nil e1 nil]" {
		t.Fatalf("get events %s", g)
	}
	page, err := s.SearchEvents(ctx, "nobody", acs.EventQuery{})
	must(t, err)
	if len(page.Items) != 0 {
		t.Fatal("events of an unknown conversation")
	}
	_, err = s.SearchEvents(ctx, "c1", acs.EventQuery{PageToken: "@@@"})
	wantErr(t, err, acs.ErrInvalid)
	must(t, s.DeleteEvents(ctx, "c1"))
	if n, _ := s.CountEvents(ctx, "c1", acs.EventFilter{}); n != 0 {
		t.Fatalf("%d events after delete", n)
	}
	if n, _ := s.CountEvents(ctx, "c2", acs.EventFilter{}); n != 1 {
		t.Fatal("delete touched another conversation")
	}
	must(t, s.DeleteEvents(ctx, "never-had-events"))
}

func testEventPaging(t *testing.T, s acs.Store) {
	var evs []acs.StoredEvent
	for i := 0; i < 23; i++ {
		kind := "ActionEvent"
		if i%3 == 0 {
			kind = "MessageEvent"
		}
		// Pairs of events share a timestamp: ties must not break paging.
		evs = append(evs, ev(fmt.Sprintf("e%02d", i), kind, "agent", i/2, ""))
	}
	_, err := s.PutEvents(ctx, "c", evs)
	must(t, err)
	for _, desc := range []bool{false, true} {
		for _, kind := range []string{"", "MessageEvent"} {
			seen := map[string]bool{}
			var order []string
			q := acs.EventQuery{Limit: 4, Desc: desc, EventFilter: acs.EventFilter{Kind: kind}}
			for {
				page, err := s.SearchEvents(ctx, "c", q)
				must(t, err)
				for _, id := range idsOf(page.Items) {
					if seen[id] {
						t.Fatalf("desc=%v kind=%q: %s seen twice", desc, kind, id)
					}
					seen[id] = true
					order = append(order, id)
				}
				if page.Next == "" {
					break
				}
				q.PageToken = page.Next
			}
			want := 23
			if kind != "" {
				want = 8
			}
			if len(seen) != want {
				t.Fatalf("desc=%v kind=%q: saw %d of %d", desc, kind, len(seen), want)
			}
			sorted := append([]string(nil), order...)
			sort.Strings(sorted)
			if desc {
				sort.Sort(sort.Reverse(sort.StringSlice(sorted)))
			}
			if fmt.Sprint(sorted) != fmt.Sprint(order) {
				t.Fatalf("desc=%v kind=%q: order %v", desc, kind, order)
			}
		}
	}
}

// testUnfinishedStartTasks: the reconciler's listing of stale tasks across
// owners follows every update (a task that finishes leaves it, one updated
// recently is not stale yet) and deletion.
func testUnfinishedStartTasks(t *testing.T, s acs.Store) {
	mk := func(id, owner string, st acs.StartTaskStatus, updated int) {
		must(t, s.CreateStartTask(ctx, acs.StartTask{ID: id, OwnerID: owner, Status: st, CreatedAt: at(0), UpdatedAt: at(updated),
			Request: json.RawMessage(`{}`)}))
	}
	// Ids spread over the hex range so sharded stores hold them apart.
	mk("0a0000000000000000000000000000a1", "u1", acs.TaskWorking, 5)
	mk("5b0000000000000000000000000000b2", "u2", acs.TaskWaitingForSandbox, 3)
	mk("9c0000000000000000000000000000c3", "u1", acs.TaskReady, 1)
	mk("dd0000000000000000000000000000d4", "u3", acs.TaskError, 2)
	mk("ee0000000000000000000000000000e5", "u2", acs.TaskPreparingRepository, 8)
	mk("ff0000000000000000000000000000f6", "u1", acs.TaskWorking, 20)
	ids := func(ts []acs.StartTask) []string {
		var out []string
		for _, tk := range ts {
			out = append(out, tk.ID[:2])
		}
		return out
	}
	list := func(before, limit int) []string {
		t.Helper()
		var got []acs.StartTask
		var err error
		for i := 0; i < 20; i++ { // indexes may lag a moment
			got, err = s.ListUnfinishedStartTasks(ctx, at(before), limit)
			must(t, err)
			if i == 19 || len(got) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return ids(got)
	}
	eventually := func(what string, before, limit int, want string) {
		t.Helper()
		var got []string
		for i := 0; i < 40; i++ {
			if got = list(before, limit); fmt.Sprint(got) == want {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s: got %v, want %s", what, got, want)
	}
	eventually("stale, oldest first", 10, 100, "[5b 0a ee]")
	eventually("limit", 10, 2, "[5b 0a]")
	eventually("updated exactly at the bound is not stale", 5, 100, "[5b]")
	_, err := s.UpdateStartTask(ctx, "5b0000000000000000000000000000b2", func(tk *acs.StartTask) error {
		tk.Status, tk.UpdatedAt = acs.TaskReady, at(9)
		return nil
	})
	must(t, err)
	_, err = s.UpdateStartTask(ctx, "0a0000000000000000000000000000a1", func(tk *acs.StartTask) error {
		tk.Status, tk.UpdatedAt = acs.TaskWaitingForSandbox, at(30)
		return nil
	})
	must(t, err)
	eventually("finished and advanced tasks leave", 10, 100, "[ee]")
	eventually("advanced task is stale later", 31, 100, "[ee ff 0a]")
	must(t, s.DeleteStartTask(ctx, "ee0000000000000000000000000000e5"))
	eventually("deleted task leaves", 31, 100, "[ff 0a]")
}
