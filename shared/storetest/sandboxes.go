package storetest

import (
	"fmt"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunSandboxStoreTests runs the acs.SandboxStore suite.
func RunSandboxStoreTests(t *testing.T, h Harness[acs.SandboxStore]) {
	runTests(t, h, sandboxStoreTests)
}

var sandboxStoreTests = []Test[acs.SandboxStore]{
	{"Sandboxes", testSandboxes},
	{"SlotReservationNeverOverfills", testSlots},
	{"ListAllSandboxes", testListAllSandboxes},
}

func sandboxID(s acs.Sandbox) string { return s.ID }

func sandbox(id, owner string, i int, hash string) acs.Sandbox {
	return acs.Sandbox{ID: id, OwnerID: owner, SpecID: "default", Status: acs.SandboxStarting, SessionKeyHash: hash,
		CreatedAt: at(i), UpdatedAt: at(i), LastUsedAt: at(i)}
}

func testSandboxes(t *testing.T, s acs.SandboxStore) {
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

func testSlots(t *testing.T, s acs.SandboxStore) {
	must(t, s.CreateSandbox(ctx, sandbox("s", "u1", 0, "")))
	const capacity, contenders = 20, 50
	reserve := func(conv string) (acs.Sandbox, error) {
		return s.UpdateSandbox(ctx, "s", func(sb *acs.Sandbox) error { return sb.Reserve(conv, capacity) })
	}
	won := contend(t, contenders, acs.ErrCapacity, func(i int) error {
		_, err := reserve(fmt.Sprintf("conv-%02d", i))
		return err
	})
	got, err := s.GetSandbox(ctx, "s")
	must(t, err)
	if won != capacity || got.ConversationCount() != capacity {
		t.Fatalf("%d reservations succeeded, %d slots, capacity %d", won, got.ConversationCount(), capacity)
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

func testListAllSandboxes(t *testing.T, s acs.SandboxStore) {
	for i, o := range []string{"u2", "u1", "u3", "u1", "u2"} {
		must(t, s.CreateSandbox(ctx, sandbox(fmt.Sprint("s", i), o, 10-i, "")))
	}
	all := func(opts acs.ListOptions) (acs.Page[acs.Sandbox], error) { return s.ListAllSandboxes(ctx, opts) }
	order := pageAll(t, 2, all, sandboxID)
	if len(order) != 5 {
		t.Fatalf("all sandboxes: %v", order)
	}
	if again := pageAll(t, 1, all, sandboxID); fmt.Sprint(again) != fmt.Sprint(order) {
		t.Fatalf("order not stable: %v then %v", order, again)
	}
	if whole := pageAll(t, 0, all, sandboxID); fmt.Sprint(whole) != fmt.Sprint(order) {
		t.Fatalf("one page: %v, paged: %v", whole, order)
	}
	// Deleting the next page's first sandbox keeps the token valid.
	first, err := s.ListAllSandboxes(ctx, acs.ListOptions{Limit: 2})
	must(t, err)
	must(t, s.DeleteSandbox(ctx, order[2]))
	rest := pageAll(t, 2, func(opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
		if opts.PageToken == "" {
			opts.PageToken = first.Next
		}
		return s.ListAllSandboxes(ctx, opts)
	}, sandboxID)
	if fmt.Sprint(rest) != fmt.Sprint(order[3:]) {
		t.Fatalf("after deleting %s: %v, want %v", order[2], rest, order[3:])
	}
	for _, tok := range []string{"@@@", "x"} {
		_, err := s.ListAllSandboxes(ctx, acs.ListOptions{PageToken: tok})
		wantErr(t, err, acs.ErrInvalid)
		_, err = s.ListSandboxes(ctx, "u1", acs.ListOptions{PageToken: tok})
		wantErr(t, err, acs.ErrInvalid)
	}
	// Per-owner listing pages newest first.
	mine := pageAll(t, 1, func(opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
		return s.ListSandboxes(ctx, "u2", opts)
	}, sandboxID)
	if fmt.Sprint(mine) != "[s0 s4]" {
		t.Fatalf("u2's sandboxes %v", mine)
	}
}
