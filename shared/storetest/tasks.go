package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// RunStartTaskStoreTests runs the acs.StartTaskStore suite.
func RunStartTaskStoreTests(t *testing.T, h Harness[acs.StartTaskStore]) {
	runTests(t, h, startTaskStoreTests)
}

var startTaskStoreTests = []Test[acs.StartTaskStore]{
	{"CreateAndGetStartTask", testCreateAndGetStartTask},
	{"CreateStartTaskWithATakenIDConflicts", testCreateStartTaskConflict},
	{"UpdateStartTask", testUpdateStartTask},
	{"FailedUpdateStoresNothing", testFailedStartTaskUpdate},
	{"UpdateUnknownStartTaskIsNotFound", testUpdateUnknownStartTask},
	{"ConcurrentUpdatesLoseNothing", testConcurrentUpdates},
	{"ListStartTasksNewestFirst", testListStartTasks},
	{"SearchAndCountStartTasks", testStartTaskSearch},
	{"StartTaskPageTokensAreChecked", testStartTaskTokens},
	{"SearchFollowsUpdates", testStartTaskSearchAfterUpdate},
	{"DeleteStartTask", testStartTaskDelete},
	{"PageTokenSurvivesDeletedTask", testStartTaskTokenAfterDelete},
	{"LimitIsClamped", testStartTaskLimit},
	{"ListUnfinishedStartTasks", testUnfinishedStartTasks},
}

func task(id, owner string, i int) acs.StartTask {
	return acs.StartTask{ID: id, OwnerID: owner, Status: acs.TaskWorking, ConversationID: "c-" + id,
		Request: []byte(`{"x":1}`), CreatedAt: at(i), UpdatedAt: at(i)}
}

func taskID(t acs.StartTask) string { return t.ID }

func idsOfTasks(ts []acs.StartTask) []string {
	var out []string
	for _, tk := range ts {
		out = append(out, tk.ID)
	}
	return out
}

func orderName(o acs.StartTaskSort) string {
	if o == "" {
		return "default"
	}
	return string(o)
}

func testCreateAndGetStartTask(t *testing.T, s acs.StartTaskStore) {
	want := task("t1", "u1", 1)
	want.SandboxID, want.Steps = strp("sb1"), []acs.StepTiming{{Status: acs.TaskWorking, StartedAt: at(1)}}
	must(t, s.CreateStartTask(ctx, want))
	got, err := s.GetStartTask(ctx, "t1")
	must(t, err)
	if got.OwnerID != "u1" || got.Status != acs.TaskWorking || got.ConversationID != "c-t1" || string(got.Request) != `{"x":1}` ||
		got.SandboxID == nil || *got.SandboxID != "sb1" || len(got.Steps) != 1 || !got.CreatedAt.Equal(at(1)) {
		t.Fatalf("task %+v", got)
	}
	_, err = s.GetStartTask(ctx, "nope")
	wantErr(t, err, acs.ErrNotFound)
}

func testCreateStartTaskConflict(t *testing.T, s acs.StartTaskStore) {
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	wantErr(t, s.CreateStartTask(ctx, task("t1", "u2", 2)), acs.ErrConflict)
	if got, err := s.GetStartTask(ctx, "t1"); err != nil || got.OwnerID != "u1" {
		t.Fatalf("a conflicting create replaced the task: %+v, %v", got, err)
	}
}

func testUpdateStartTask(t *testing.T, s acs.StartTaskStore) {
	must(t, s.CreateStartTask(ctx, task("t2", "u1", 2)))
	got, err := s.UpdateStartTask(ctx, "t2", func(tk *acs.StartTask) error {
		tk.Advance(acs.TaskWaitingForSandbox, at(20))
		tk.SandboxID = strp("sb1")
		tk.OwnerID, tk.CreatedAt = "attacker", at(99) // not updatable
		return nil
	})
	must(t, err)
	if got.Status != acs.TaskWaitingForSandbox || got.OwnerID != "u1" || *got.SandboxID != "sb1" || len(got.Steps) != 1 {
		t.Fatalf("updated task %+v", got)
	}
	reread, err := s.GetStartTask(ctx, "t2")
	must(t, err)
	if reread.Status != acs.TaskWaitingForSandbox || !reread.Steps[0].StartedAt.Equal(at(20)) || reread.OwnerID != "u1" ||
		!reread.CreatedAt.Equal(at(2)) {
		t.Fatalf("reread %+v", reread)
	}
}

func testFailedStartTaskUpdate(t *testing.T, s acs.StartTaskStore) {
	must(t, s.CreateStartTask(ctx, task("t2", "u1", 2)))
	boom := errors.New("boom")
	_, err := s.UpdateStartTask(ctx, "t2", func(tk *acs.StartTask) error { tk.Status = acs.TaskError; return boom })
	wantErr(t, err, boom)
	if reread, _ := s.GetStartTask(ctx, "t2"); reread.Status != acs.TaskWorking {
		t.Fatal("a failed update was stored")
	}
}

func testUpdateUnknownStartTask(t *testing.T, s acs.StartTaskStore) {
	_, err := s.UpdateStartTask(ctx, "nope", func(*acs.StartTask) error { return nil })
	wantErr(t, err, acs.ErrNotFound)
}

func testConcurrentUpdates(t *testing.T, s acs.StartTaskStore) {
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

func testListStartTasks(t *testing.T, s acs.StartTaskStore) {
	for i := 0; i < 5; i++ {
		must(t, s.CreateStartTask(ctx, task(fmt.Sprint("t", i), "u1", i)))
	}
	must(t, s.CreateStartTask(ctx, task("tx", "u2", 9)))
	ids := pageAll(t, 2, func(o acs.ListOptions) (acs.Page[acs.StartTask], error) { return s.ListStartTasks(ctx, "u1", o) }, taskID)
	if fmt.Sprint(ids) != "[t4 t3 t2 t1 t0]" {
		t.Fatalf("list order %v", ids)
	}
	_, err := s.ListStartTasks(ctx, "u1", acs.ListOptions{PageToken: "%%%not a token"})
	wantErr(t, err, acs.ErrInvalid)
}

// seedTaskSearch stores u1's tasks t0..t5 (id, created, updated, app
// conversation, conversation) and two of u2's.
func seedTaskSearch(t *testing.T, s acs.StartTaskStore) {
	fixture := []struct {
		id               string
		created, updated int
		app, conv        string
	}{
		{"t0", 0, 50, "", "c-t0"},
		{"t1", 1, 30, "a1", "c-t1"},
		{"t2", 2, 30, "", "c-t2"}, // same update time as t1
		{"t3", 2, 10, "", "c-t3"}, // same creation time as t2
		{"t4", 4, 40, "shared", "c-t4"},
		{"t5", 5, 5, "", "shared"},
	}
	for _, f := range fixture {
		tk := task(f.id, "u1", f.created)
		tk.UpdatedAt, tk.ConversationID = at(f.updated), f.conv
		if f.app != "" {
			tk.AppConversationID = strp(f.app)
		}
		must(t, s.CreateStartTask(ctx, tk))
	}
	other := task("x1", "u2", 3)
	other.AppConversationID = strp("shared")
	must(t, s.CreateStartTask(ctx, other))
	must(t, s.CreateStartTask(ctx, task("x2", "u2", 4)))
}

func testStartTaskSearch(t *testing.T, s acs.StartTaskStore) {
	seedTaskSearch(t, s)
	none := acs.StartTaskFilter{}
	cases := []struct {
		name  string
		f     acs.StartTaskFilter
		order acs.StartTaskSort
		want  string
	}{
		{"created", none, acs.SortCreatedAt, "[t0 t1 t2 t3 t4 t5]"},
		{"created desc", none, acs.SortCreatedAtDesc, "[t5 t4 t3 t2 t1 t0]"},
		{"default order", none, "", "[t5 t4 t3 t2 t1 t0]"},
		{"updated", none, acs.SortUpdatedAt, "[t5 t3 t1 t2 t4 t0]"},
		{"updated desc", none, acs.SortUpdatedAtDesc, "[t0 t4 t2 t1 t3 t5]"},
		{"app or own conversation", acs.StartTaskFilter{ConversationID: "shared"}, "", "[t5 t4]"},
		{"app conversation", acs.StartTaskFilter{ConversationID: "a1"}, acs.SortUpdatedAt, "[t1]"},
		{"own conversation", acs.StartTaskFilter{ConversationID: "c-t3"}, acs.SortCreatedAt, "[t3]"},
		{"no such conversation", acs.StartTaskFilter{ConversationID: "zzz"}, "", "[]"},
		{"created from", acs.StartTaskFilter{CreatedGTE: timep(2)}, acs.SortCreatedAt, "[t2 t3 t4 t5]"},
		{"created from, by update", acs.StartTaskFilter{CreatedGTE: timep(2)}, acs.SortUpdatedAt, "[t5 t3 t2 t4]"},
		{"created from, desc", acs.StartTaskFilter{CreatedGTE: timep(3)}, acs.SortCreatedAtDesc, "[t5 t4]"},
		{"both filters", acs.StartTaskFilter{ConversationID: "shared", CreatedGTE: timep(5)}, acs.SortUpdatedAtDesc, "[t5]"},
		{"created after all", acs.StartTaskFilter{CreatedGTE: timep(99)}, "", "[]"},
	}
	for _, tc := range cases {
		for _, limit := range []int{2, 1, 100} {
			got := pageAll(t, limit, func(o acs.ListOptions) (acs.Page[acs.StartTask], error) {
				return s.SearchStartTasks(ctx, "u1", tc.f, tc.order, o)
			}, taskID)
			if fmt.Sprint(got) != tc.want {
				t.Errorf("%s (limit %d): got %v want %s", tc.name, limit, got, tc.want)
			}
		}
		n, err := s.CountStartTasks(ctx, "u1", tc.f)
		must(t, err)
		if want := len(pageAll(t, 100, func(o acs.ListOptions) (acs.Page[acs.StartTask], error) {
			return s.SearchStartTasks(ctx, "u1", tc.f, tc.order, o)
		}, taskID)); n != want {
			t.Errorf("%s: count %d, search found %d", tc.name, n, want)
		}
	}
	if n, _ := s.CountStartTasks(ctx, "u2", acs.StartTaskFilter{ConversationID: "shared"}); n != 1 {
		t.Errorf("u2 count %d", n)
	}
	if n, _ := s.CountStartTasks(ctx, "nobody", none); n != 0 {
		t.Errorf("count of a user without tasks %d", n)
	}
}

// testStartTaskTokens: tokens work only for the listing that issued them.
func testStartTaskTokens(t *testing.T, s acs.StartTaskStore) {
	seedTaskSearch(t, s)
	none := acs.StartTaskFilter{}
	first, err := s.SearchStartTasks(ctx, "u1", none, acs.SortCreatedAt, acs.ListOptions{Limit: 2})
	must(t, err)
	if first.Next == "" {
		t.Fatal("no next page")
	}
	for _, o := range []acs.StartTaskSort{acs.SortCreatedAtDesc, acs.SortUpdatedAt, acs.SortUpdatedAtDesc} {
		_, err = s.SearchStartTasks(ctx, "u1", none, o, acs.ListOptions{PageToken: first.Next})
		wantErr(t, err, acs.ErrInvalid)
	}
	for _, tok := range []string{"@@@", "bm90IGEgdG9rZW4", "x"} {
		_, err = s.SearchStartTasks(ctx, "u1", none, "", acs.ListOptions{PageToken: tok})
		wantErr(t, err, acs.ErrInvalid)
		_, err = s.ListStartTasks(ctx, "u1", acs.ListOptions{PageToken: tok})
		wantErr(t, err, acs.ErrInvalid)
	}
	_, err = s.SearchStartTasks(ctx, "u1", none, "SIDEWAYS", acs.ListOptions{})
	wantErr(t, err, acs.ErrInvalid)
	// Another owner's token never shows that owner's tasks.
	theirs, err := s.SearchStartTasks(ctx, "u2", none, "", acs.ListOptions{Limit: 1})
	must(t, err)
	page, err := s.SearchStartTasks(ctx, "u1", none, "", acs.ListOptions{PageToken: theirs.Next})
	if err != nil {
		wantErr(t, err, acs.ErrInvalid)
	}
	for _, tk := range page.Items {
		if tk.OwnerID != "u1" {
			t.Fatalf("another owner's token listed %+v", tk)
		}
	}
}

// testStartTaskSearchAfterUpdate: updates move a task in the update order
// and refresh the filters.
func testStartTaskSearchAfterUpdate(t *testing.T, s acs.StartTaskStore) {
	seedTaskSearch(t, s)
	_, err := s.UpdateStartTask(ctx, "t3", func(tk *acs.StartTask) error {
		tk.UpdatedAt = at(60)
		tk.AppConversationID = strp("late")
		return nil
	})
	must(t, err)
	none := acs.StartTaskFilter{}
	after := []struct {
		f     acs.StartTaskFilter
		order acs.StartTaskSort
		want  string
	}{
		{none, acs.SortUpdatedAtDesc, "[t3 t0 t4 t2 t1 t5]"},
		{none, acs.SortUpdatedAt, "[t5 t1 t2 t4 t0 t3]"},
		{acs.StartTaskFilter{ConversationID: "late"}, "", "[t3]"},
		{acs.StartTaskFilter{ConversationID: "c-t3"}, "", "[t3]"},
	}
	for _, tc := range after {
		got := pageAll(t, 2, func(o acs.ListOptions) (acs.Page[acs.StartTask], error) {
			return s.SearchStartTasks(ctx, "u1", tc.f, tc.order, o)
		}, taskID)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("after update, %+v %s: got %v want %s", tc.f, orderName(tc.order), got, tc.want)
		}
	}
}

// seedTaskDelete stores u1's tasks t0..t5 (updated in reverse order) and
// one of u2's.
func seedTaskDelete(t *testing.T, s acs.StartTaskStore) {
	for i := 0; i < 6; i++ {
		tk := task(fmt.Sprint("t", i), "u1", i)
		tk.UpdatedAt = at(10 - i)
		must(t, s.CreateStartTask(ctx, tk))
	}
	must(t, s.CreateStartTask(ctx, task("x", "u2", 0)))
}

func testStartTaskDelete(t *testing.T, s acs.StartTaskStore) {
	seedTaskDelete(t, s)
	must(t, s.DeleteStartTask(ctx, "t1"))
	_, err := s.GetStartTask(ctx, "t1")
	wantErr(t, err, acs.ErrNotFound)
	wantErr(t, s.DeleteStartTask(ctx, "t1"), acs.ErrNotFound)
	wantErr(t, s.DeleteStartTask(ctx, "never"), acs.ErrNotFound)
	for _, o := range []acs.StartTaskSort{acs.SortCreatedAt, acs.SortCreatedAtDesc, acs.SortUpdatedAt, acs.SortUpdatedAtDesc} {
		got := pageAll(t, 2, func(opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
			return s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{}, o, opts)
		}, taskID)
		if len(got) != 5 {
			t.Errorf("%s after delete: %v", o, got)
		}
		for _, id := range got {
			if id == "t1" {
				t.Errorf("%s lists a deleted task: %v", o, got)
			}
		}
	}
	if n, _ := s.CountStartTasks(ctx, "u1", acs.StartTaskFilter{ConversationID: "c-t1"}); n != 0 {
		t.Errorf("deleted task still counted")
	}
	if n, _ := s.CountStartTasks(ctx, "u2", acs.StartTaskFilter{}); n != 1 {
		t.Errorf("delete touched another owner")
	}
}

// testStartTaskTokenAfterDelete: a token stays valid when the task it
// points at goes away.
func testStartTaskTokenAfterDelete(t *testing.T, s acs.StartTaskStore) {
	seedTaskDelete(t, s)
	must(t, s.DeleteStartTask(ctx, "t1"))
	first, err := s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{}, acs.SortCreatedAtDesc, acs.ListOptions{Limit: 2})
	must(t, err)
	if fmt.Sprint(idsOfTasks(first.Items)) != "[t5 t4]" {
		t.Fatalf("first page %v", idsOfTasks(first.Items))
	}
	must(t, s.DeleteStartTask(ctx, "t3"))
	rest := pageAll(t, 2, func(opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
		if opts.PageToken == "" {
			opts.PageToken = first.Next
		}
		return s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{}, acs.SortCreatedAtDesc, opts)
	}, taskID)
	if fmt.Sprint(rest) != "[t2 t0]" {
		t.Fatalf("after deleting the next page's first task: %v", rest)
	}
	list, err := s.ListStartTasks(ctx, "u1", acs.ListOptions{})
	must(t, err)
	if fmt.Sprint(idsOfTasks(list.Items)) != "[t5 t4 t2 t0]" {
		t.Fatalf("list after deletes: %v", idsOfTasks(list.Items))
	}
}

func testStartTaskLimit(t *testing.T, s acs.StartTaskStore) {
	const n = 105
	for i := 0; i < n; i++ {
		must(t, s.CreateStartTask(ctx, task(fmt.Sprintf("t%03d", i), "u1", i)))
	}
	for _, limit := range []int{0, -1, 101, 1000} {
		page, err := s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{}, acs.SortCreatedAt, acs.ListOptions{Limit: limit})
		must(t, err)
		if len(page.Items) != 100 || page.Next == "" {
			t.Fatalf("limit %d: %d items, next %q", limit, len(page.Items), page.Next)
		}
		if limit == 0 {
			rest, err := s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{}, acs.SortCreatedAt, acs.ListOptions{PageToken: page.Next})
			must(t, err)
			if len(rest.Items) != n-100 || rest.Next != "" || rest.Items[0].ID != "t100" {
				t.Fatalf("second page: %v next %q", idsOfTasks(rest.Items), rest.Next)
			}
		}
	}
	if c, _ := s.CountStartTasks(ctx, "u1", acs.StartTaskFilter{}); c != n {
		t.Fatalf("count %d", c)
	}
}

// testUnfinishedStartTasks: the reconciler's listing of stale tasks across
// owners follows every update (a task that finishes leaves it, one updated
// recently is not stale yet) and deletion.
func testUnfinishedStartTasks(t *testing.T, s acs.StartTaskStore) {
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
