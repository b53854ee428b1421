package storetest

import (
	"errors"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunStartCompleterTests runs the acs.StartCompleter suite (on a whole
// store: the write spans tasks and conversations).
func RunStartCompleterTests(t *testing.T, h Harness[acs.Store]) {
	runTests(t, h, startCompleterTests)
}

var startCompleterTests = []Test[acs.Store]{
	{"StoresTheTaskAndTheConversationTogether", testCompleteStart},
	{"ATakenConversationIDStoresNothing", testCompleteStartConflict},
	{"AFailedTaskUpdateStoresNothing", testCompleteStartFnError},
	{"AnUnknownTaskStoresNothing", testCompleteStartUnknownTask},
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
