package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunStartWritesTests runs the acs.StartWrites suite (on a whole store:
// each write spans a task and another record).
func RunStartWritesTests(t *testing.T, h Harness[acs.Store]) {
	runTests(t, h, startWritesTests)
}

var startWritesTests = []Test[acs.Store]{
	{"StoresTheTaskAndTheConversationTogether", testCompleteStart},
	{"ATakenConversationIDStoresNothing", testCompleteStartConflict},
	{"AFailedTaskUpdateStoresNothing", testCompleteStartFnError},
	{"AnUnknownTaskStoresNothing", testCompleteStartUnknownTask},
	{"StoresTheTaskAndTheSandboxTogether", testTaskAndSandbox},
	{"EitherFunctionsErrorStoresNothing", testTaskAndSandboxErrors},
	{"EitherRecordAbsentIsNotFound", testTaskAndSandboxAbsent},
	{"ReservationsWithTasksNeverOverfill", testTaskAndSandboxSlots},
	{"CreatesTheTaskWithTheSandboxsUpdate", testCreateTaskAndSandbox},
	{"ACreateThatFailsStoresNothing", testCreateTaskAndSandboxFails},
	{"CreatesWithReservationsNeverOverfill", testCreateTaskAndSandboxSlots},
}

// placedTask is task id of owner u1, created placed on sandbox sb.
func placedTask(id string, n int, sb string) acs.StartTask {
	tk := task(id, "u1", n)
	_ = placed(sb)(&tk) // never fails
	return tk
}

func testCreateTaskAndSandbox(t *testing.T, s acs.Store) {
	must(t, s.CreateSandbox(ctx, sandbox("s1", "u1", 1, "h1")))
	sb, err := s.CreateStartTaskAndUpdateSandbox(ctx, placedTask("t1", 2, "s1"), "s1", func(sb *acs.Sandbox) error {
		sb.OwnerID = "attacker" // not updatable
		sb.SessionKeyHash = "h2"
		return sb.Reserve("c-t1", 5)
	})
	must(t, err)
	if !sb.HasSlot("c-t1") || sb.OwnerID != "u1" {
		t.Fatalf("returned sandbox %+v", sb)
	}
	tk, err := s.GetStartTask(ctx, "t1")
	if err != nil || tk.Status != acs.TaskStartingConversation || tk.SandboxID == nil || *tk.SandboxID != "s1" || tk.OwnerID != "u1" {
		t.Fatalf("stored task %+v, %v", tk, err)
	}
	if reread, err := s.GetSandbox(ctx, "s1"); err != nil || !reread.HasSlot("c-t1") || reread.OwnerID != "u1" {
		t.Fatalf("stored sandbox %+v, %v", reread, err)
	}
	// The task is in its owner's listing and the unfinished ones; the
	// session-key lookup follows the sandbox.
	if page, err := s.ListStartTasks(ctx, "u1", acs.ListOptions{}); err != nil || len(page.Items) != 1 || page.Items[0].ID != "t1" {
		t.Fatalf("owner's tasks %+v, %v", page, err)
	}
	if open, err := s.ListUnfinishedStartTasks(ctx, at(1000), 100); err != nil || len(open) != 1 || open[0].ID != "t1" {
		t.Fatalf("unfinished tasks %v, %v", idsOfTasks(open), err)
	}
	_, err = s.GetSandboxBySessionKeyHash(ctx, "h1")
	wantErr(t, err, acs.ErrNotFound)
	if got, err := s.GetSandboxBySessionKeyHash(ctx, "h2"); err != nil || got.ID != "s1" {
		t.Fatalf("by the new hash %+v, %v", got, err)
	}
}

func testCreateTaskAndSandboxFails(t *testing.T, s acs.Store) {
	full := sandbox("s1", "u1", 1, "")
	full.Slots = []string{"c-other"}
	must(t, s.CreateSandbox(ctx, full))
	reserve := func(max int) func(*acs.Sandbox) error {
		return func(sb *acs.Sandbox) error { return sb.Reserve("c-t1", max) }
	}
	_, err := s.CreateStartTaskAndUpdateSandbox(ctx, placedTask("t1", 2, "s1"), "s1", reserve(1))
	wantErr(t, err, acs.ErrCapacity)
	boom := errors.New("boom")
	_, err = s.CreateStartTaskAndUpdateSandbox(ctx, placedTask("t1", 2, "s1"), "s1", func(*acs.Sandbox) error { return boom })
	wantErr(t, err, boom)
	_, err = s.CreateStartTaskAndUpdateSandbox(ctx, placedTask("t1", 2, "nope"), "nope", reserve(5))
	wantErr(t, err, acs.ErrNotFound)
	_, err = s.GetStartTask(ctx, "t1")
	wantErr(t, err, acs.ErrNotFound)
	if open, _ := s.ListUnfinishedStartTasks(ctx, at(1000), 100); len(open) != 0 {
		t.Fatalf("a failed create listed tasks %v", idsOfTasks(open))
	}
	// A task id that exists: nothing is stored, the existing task stays.
	must(t, s.CreateStartTask(ctx, task("t2", "u2", 3)))
	_, err = s.CreateStartTaskAndUpdateSandbox(ctx, placedTask("t2", 4, "s1"), "s1", reserve(5))
	wantErr(t, err, acs.ErrConflict)
	if reread, _ := s.GetStartTask(ctx, "t2"); reread.OwnerID != "u2" || reread.Status != acs.TaskWorking {
		t.Fatalf("the existing task was replaced: %+v", reread)
	}
	if reread, _ := s.GetSandbox(ctx, "s1"); reread.ConversationCount() != 1 || reread.HasSlot("c-t1") {
		t.Fatalf("a failed create stored the sandbox: %+v", reread)
	}
}

// Starts created placed, racing for a sandbox's last slots, never overfill
// it, and exactly the winners' tasks are stored.
func testCreateTaskAndSandboxSlots(t *testing.T, s acs.Store) {
	raceForSlots(t, s, func(id string, i int, reserve func(*acs.Sandbox) error) error {
		_, err := s.CreateStartTaskAndUpdateSandbox(ctx, placedTask(id, i, "s"), "s", reserve)
		return err
	})
}

// raceForSlots has starts t00…t11 race for the slots of sandbox s
// (capacity 5), each writing its task placed with its reservation through
// write, and checks that they never overfill it and that exactly the
// winners' tasks are stored placed.
func raceForSlots(t *testing.T, s acs.Store, write func(id string, i int, reserve func(*acs.Sandbox) error) error) {
	must(t, s.CreateSandbox(ctx, sandbox("s", "u1", 0, "")))
	const capacity, contenders = 5, 12
	won := contend(t, contenders, acs.ErrCapacity, func(i int) error {
		id := fmt.Sprintf("t%02d", i)
		return write(id, i, func(sb *acs.Sandbox) error { return sb.Reserve("c-"+id, capacity) })
	})
	got, err := s.GetSandbox(ctx, "s")
	must(t, err)
	if won != capacity || got.ConversationCount() != capacity {
		t.Fatalf("%d reservations succeeded, %d slots, capacity %d", won, got.ConversationCount(), capacity)
	}
	for i := 0; i < contenders; i++ {
		id := fmt.Sprintf("t%02d", i)
		tk, err := s.GetStartTask(ctx, id)
		if placed := err == nil && tk.Status == acs.TaskStartingConversation; placed != got.HasSlot("c-"+id) {
			t.Fatalf("task %s placed: %v (%v), its slot reserved: %v", id, placed, err, got.HasSlot("c-"+id))
		}
	}
}

// placed is the change placement makes to a task placed on sandbox id.
func placed(id string) func(*acs.StartTask) error {
	return func(tk *acs.StartTask) error {
		tk.Advance(acs.TaskStartingConversation, at(20))
		tk.SandboxID = &id
		return nil
	}
}

func testTaskAndSandbox(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	must(t, s.CreateSandbox(ctx, sandbox("s1", "u1", 1, "h1")))
	tk, sb, err := s.UpdateStartTaskAndSandbox(ctx, "t1", placed("s1"), "s1", func(sb *acs.Sandbox) error {
		sb.OwnerID = "attacker" // not updatable
		return sb.Reserve("c-t1", 5)
	})
	must(t, err)
	if tk.Status != acs.TaskStartingConversation || tk.SandboxID == nil || *tk.SandboxID != "s1" || !sb.HasSlot("c-t1") || sb.OwnerID != "u1" {
		t.Fatalf("returned %+v, %+v", tk, sb)
	}
	if reread, err := s.GetStartTask(ctx, "t1"); err != nil || reread.Status != acs.TaskStartingConversation {
		t.Fatalf("stored task %+v, %v", reread, err)
	}
	if reread, err := s.GetSandbox(ctx, "s1"); err != nil || !reread.HasSlot("c-t1") || reread.OwnerID != "u1" {
		t.Fatalf("stored sandbox %+v, %v", reread, err)
	}
	// The session-key lookup follows the sandbox, as with UpdateSandbox.
	_, _, err = s.UpdateStartTaskAndSandbox(ctx, "t1", func(*acs.StartTask) error { return nil }, "s1", func(sb *acs.Sandbox) error {
		sb.SessionKeyHash = "h2"
		return nil
	})
	must(t, err)
	_, err = s.GetSandboxBySessionKeyHash(ctx, "h1")
	wantErr(t, err, acs.ErrNotFound)
	if got, err := s.GetSandboxBySessionKeyHash(ctx, "h2"); err != nil || got.ID != "s1" {
		t.Fatalf("by the new hash %+v, %v", got, err)
	}
}

func testTaskAndSandboxErrors(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	full := sandbox("s1", "u1", 1, "")
	full.Slots = []string{"c-other"}
	must(t, s.CreateSandbox(ctx, full))
	_, _, err := s.UpdateStartTaskAndSandbox(ctx, "t1", placed("s1"), "s1", func(sb *acs.Sandbox) error { return sb.Reserve("c-t1", 1) })
	wantErr(t, err, acs.ErrCapacity)
	boom := errors.New("boom")
	_, _, err = s.UpdateStartTaskAndSandbox(ctx, "t1", func(*acs.StartTask) error { return boom }, "s1", func(sb *acs.Sandbox) error { return sb.Reserve("c-t1", 0) })
	wantErr(t, err, boom)
	if reread, _ := s.GetStartTask(ctx, "t1"); reread.Status != acs.TaskWorking || reread.SandboxID != nil {
		t.Fatalf("a failed write stored the task: %+v", reread)
	}
	if reread, _ := s.GetSandbox(ctx, "s1"); reread.ConversationCount() != 1 {
		t.Fatalf("a failed write stored the sandbox: %+v", reread)
	}
}

func testTaskAndSandboxAbsent(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	must(t, s.CreateSandbox(ctx, sandbox("s1", "u1", 1, "")))
	reserve := func(sb *acs.Sandbox) error { return sb.Reserve("c-t1", 5) }
	_, _, err := s.UpdateStartTaskAndSandbox(ctx, "t1", placed("nope"), "nope", reserve)
	wantErr(t, err, acs.ErrNotFound)
	_, _, err = s.UpdateStartTaskAndSandbox(ctx, "nope", placed("s1"), "s1", reserve)
	wantErr(t, err, acs.ErrNotFound)
	if reread, _ := s.GetStartTask(ctx, "t1"); reread.Status != acs.TaskWorking {
		t.Fatalf("the task was stored without its sandbox: %+v", reread)
	}
	if reread, _ := s.GetSandbox(ctx, "s1"); reread.ConversationCount() != 0 {
		t.Fatalf("the sandbox was stored without its task: %+v", reread)
	}
}

// Starts racing for a sandbox's last slots, each reserving with its own
// task's placement, never overfill it, and exactly the winners' tasks are
// placed.
func testTaskAndSandboxSlots(t *testing.T, s acs.Store) {
	for i := 0; i < 12; i++ {
		must(t, s.CreateStartTask(ctx, task(fmt.Sprintf("t%02d", i), "u1", i)))
	}
	raceForSlots(t, s, func(id string, _ int, reserve func(*acs.Sandbox) error) error {
		_, _, err := s.UpdateStartTaskAndSandbox(ctx, id, placed("s"), "s", reserve)
		return err
	})
}

// ready is the change a start's last step makes.
func ready(convID string) func(*acs.StartTask) error {
	return func(tk *acs.StartTask) error {
		tk.Advance(acs.TaskReady, at(30))
		tk.AppConversationID = &convID
		tk.OwnerID = "attacker" // not updatable
		return nil
	}
}

func testCompleteStart(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	got, err := s.UpdateStartTaskCreatingConversation(ctx, "t1", ready("c1"), conversation("c1", "u1", "s1", 2, "Fix it"))
	must(t, err)
	if got.Status != acs.TaskReady || got.OwnerID != "u1" || got.AppConversationID == nil || *got.AppConversationID != "c1" {
		t.Fatalf("returned task %+v", got)
	}
	if reread, err := s.GetStartTask(ctx, "t1"); err != nil || reread.Status != acs.TaskReady || reread.OwnerID != "u1" {
		t.Fatalf("stored task %+v, %v", reread, err)
	}
	c, err := s.GetConversation(ctx, "c1")
	must(t, err)
	if c.OwnerID != "u1" || c.SandboxID != "s1" || c.Title == nil || *c.Title != "Fix it" {
		t.Fatalf("stored conversation %+v", c)
	}
	// The conversation is in its owner's and its sandbox's indexes, and
	// counted, as one CreateConversation stores it.
	if n, err := s.CountConversations(ctx, "u1", acs.ConversationFilter{}); err != nil || n != 1 {
		t.Fatalf("owner's count %d, %v", n, err)
	}
	page, err := s.SearchConversations(ctx, "u1", acs.ConversationFilter{TitleContains: "Fix"}, acs.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "c1" {
		t.Fatalf("owner's search %+v, %v", page, err)
	}
	if bySandbox, err := s.ListConversationsBySandbox(ctx, "s1"); err != nil || len(bySandbox) != 1 {
		t.Fatalf("by sandbox %+v, %v", bySandbox, err)
	}
	// Unfinished-task listing follows the task (READY is finished).
	open, err := s.ListUnfinishedStartTasks(ctx, at(1000), 100)
	if err != nil || len(open) != 0 {
		t.Fatalf("unfinished tasks %v, %v", idsOfTasks(open), err)
	}
}

func testCompleteStartConflict(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	must(t, s.CreateConversation(ctx, conversation("c1", "u2", "s9", 1, "someone else's")))
	_, err := s.UpdateStartTaskCreatingConversation(ctx, "t1", ready("c1"), conversation("c1", "u1", "s1", 2, "mine"))
	wantErr(t, err, acs.ErrConflict)
	if reread, _ := s.GetStartTask(ctx, "t1"); reread.Status != acs.TaskWorking || reread.AppConversationID != nil {
		t.Fatalf("the task was updated without its conversation: %+v", reread)
	}
	if c, _ := s.GetConversation(ctx, "c1"); c.OwnerID != "u2" {
		t.Fatalf("the existing conversation was replaced: %+v", c)
	}
	if n, _ := s.CountConversations(ctx, "u1", acs.ConversationFilter{}); n != 0 {
		t.Fatalf("u1 counts %d conversations", n)
	}
}

func testCompleteStartFnError(t *testing.T, s acs.Store) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	boom := errors.New("boom")
	_, err := s.UpdateStartTaskCreatingConversation(ctx, "t1", func(tk *acs.StartTask) error { tk.Status = acs.TaskReady; return boom },
		conversation("c1", "u1", "s1", 2, ""))
	wantErr(t, err, boom)
	if reread, _ := s.GetStartTask(ctx, "t1"); reread.Status != acs.TaskWorking {
		t.Fatalf("a failed update was stored: %+v", reread)
	}
	_, err = s.GetConversation(ctx, "c1")
	wantErr(t, err, acs.ErrNotFound)
}

func testCompleteStartUnknownTask(t *testing.T, s acs.Store) {
	_, err := s.UpdateStartTaskCreatingConversation(ctx, "nope", ready("c1"), conversation("c1", "u1", "s1", 2, ""))
	wantErr(t, err, acs.ErrNotFound)
	_, err = s.GetConversation(ctx, "c1")
	wantErr(t, err, acs.ErrNotFound)
	if n, _ := s.CountConversations(ctx, "u1", acs.ConversationFilter{}); n != 0 {
		t.Fatalf("u1 counts %d conversations", n)
	}
}
