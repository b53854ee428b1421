package storetest

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunConversationStoreTests runs the acs.ConversationStore suite.
func RunConversationStoreTests(t *testing.T, h Harness[acs.ConversationStore]) {
	runTests(t, h, conversationStoreTests)
}

var conversationStoreTests = []Test[acs.ConversationStore]{
	{"Conversations", testConversations},
	{"ConversationIndexFollowsUpdates", testConversationUpdatesReindex},
}

func conversation(id, owner, sandbox string, i int, title string) acs.Conversation {
	c := acs.Conversation{ID: id, OwnerID: owner, SandboxID: sandbox, CreatedAt: at(i), UpdatedAt: at(i)}
	if title != "" {
		c.Title = &title
	}
	return c
}

func testConversations(t *testing.T, s acs.ConversationStore) {
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

func testConversationUpdatesReindex(t *testing.T, s acs.ConversationStore) {
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
