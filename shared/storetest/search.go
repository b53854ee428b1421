package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// pageAll pages a listing with limit per page to the end, checking that
// every page but the last is full and that no item comes twice.
func pageAll[T any](t *testing.T, limit int, list func(acs.ListOptions) (acs.Page[T], error), id func(T) string) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	opts := acs.ListOptions{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		page, err := list(opts)
		must(t, err)
		for _, it := range page.Items {
			if seen[id(it)] {
				t.Fatalf("%s listed twice (%v)", id(it), ids)
			}
			seen[id(it)] = true
			ids = append(ids, id(it))
		}
		if page.Next == "" {
			return ids
		}
		if len(page.Items) != limit {
			t.Fatalf("a page of %d with a next page (limit %d)", len(page.Items), limit)
		}
		opts.PageToken = page.Next
	}
}

func taskID(t acs.StartTask) string  { return t.ID }
func sandboxID(s acs.Sandbox) string { return s.ID }
func strp(s string) *string          { return &s }
func timep(i int) *time.Time         { v := at(i); return &v }
func orderName(o acs.StartTaskSort) string {
	if o == "" {
		return "default"
	}
	return string(o)
}

func testStartTaskSearch(t *testing.T, s acs.Store) {
	// id, created, updated, app conversation, conversation.
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

	// Tokens work only for the listing that issued them.
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

	// Updates move a task in the update order and refresh the filters.
	_, err = s.UpdateStartTask(ctx, "t3", func(tk *acs.StartTask) error {
		tk.UpdatedAt = at(60)
		tk.AppConversationID = strp("late")
		return nil
	})
	must(t, err)
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

func testStartTaskDelete(t *testing.T, s acs.Store) {
	for i := 0; i < 6; i++ {
		tk := task(fmt.Sprint("t", i), "u1", i)
		tk.UpdatedAt = at(10 - i)
		must(t, s.CreateStartTask(ctx, tk))
	}
	must(t, s.CreateStartTask(ctx, task("x", "u2", 0)))
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
	// A token stays valid when the task it points at goes away.
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

func idsOfTasks(ts []acs.StartTask) []string {
	var out []string
	for _, tk := range ts {
		out = append(out, tk.ID)
	}
	return out
}

func testStartTaskLimit(t *testing.T, s acs.Store) {
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

func testListAllSandboxes(t *testing.T, s acs.Store) {
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

func testConversationUpdatesReindex(t *testing.T, s acs.Store) {
	for i := 1; i <= 4; i++ {
		must(t, s.CreateConversation(ctx, conversation(fmt.Sprint("c", i), "u1", "s1", i, fmt.Sprint("Parser job ", i))))
	}
	parent := "c1"
	_, err := s.UpdateConversation(ctx, "c3", func(c *acs.Conversation) error {
		title := "Renamed"
		c.Title, c.SandboxID, c.UpdatedAt, c.ParentConversationID = &title, "s9", at(30), &parent
		c.CreatedAt = at(99) // not updatable
		return nil
	})
	must(t, err)
	_, err = s.UpdateConversation(ctx, "c2", func(c *acs.Conversation) error { c.Title = nil; return nil })
	must(t, err)
	t30 := at(30)
	cases := []struct {
		name string
		f    acs.ConversationFilter
		want string
	}{
		{"top-level", acs.ConversationFilter{}, "[c4 c2 c1]"},
		{"all", acs.ConversationFilter{IncludeSubConversations: true}, "[c4 c3 c2 c1]"},
		{"old title", acs.ConversationFilter{TitleContains: "parser", IncludeSubConversations: true}, "[c4 c1]"},
		{"new title", acs.ConversationFilter{TitleContains: "renamed", IncludeSubConversations: true}, "[c3]"},
		{"new sandbox", acs.ConversationFilter{SandboxID: "s9", IncludeSubConversations: true}, "[c3]"},
		{"old sandbox", acs.ConversationFilter{SandboxID: "s1", IncludeSubConversations: true}, "[c4 c2 c1]"},
		{"updated", acs.ConversationFilter{UpdatedGTE: &t30, IncludeSubConversations: true}, "[c3]"},
		{"created unchanged", acs.ConversationFilter{CreatedLT: &t30, IncludeSubConversations: true}, "[c4 c3 c2 c1]"},
	}
	for _, tc := range cases {
		got := pageAll(t, 2, func(opts acs.ListOptions) (acs.Page[acs.Conversation], error) {
			return s.SearchConversations(ctx, "u1", tc.f, opts)
		}, func(c acs.Conversation) string { return c.ID })
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: got %v want %s", tc.name, got, tc.want)
		}
		n, err := s.CountConversations(ctx, "u1", tc.f)
		must(t, err)
		if n != len(got) {
			t.Errorf("%s: count %d, search found %d", tc.name, n, len(got))
		}
	}
	c3, err := s.GetConversation(ctx, "c3")
	must(t, err)
	if !c3.CreatedAt.Equal(at(3)) || c3.SandboxID != "s9" || *c3.Title != "Renamed" {
		t.Fatalf("c3 %+v", c3)
	}
	boom := errors.New("boom")
	_, err = s.UpdateConversation(ctx, "c4", func(c *acs.Conversation) error { c.Title = strp("gone"); return boom })
	wantErr(t, err, boom)
	if n, _ := s.CountConversations(ctx, "u1", acs.ConversationFilter{TitleContains: "gone"}); n != 0 {
		t.Fatal("a failed update changed the index")
	}
}
