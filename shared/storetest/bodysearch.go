package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunEventBodySearch runs the body-search test of the acs.EventStore suite
// alone (RunEventStoreTests includes it):
// adapters run it again with a small scan budget, so that pages end early.
func RunEventBodySearch(t *testing.T, newStore func(t *testing.T) acs.Store) {
	t.Run("EventBodySearch", func(t *testing.T) { testEventBodySearch(t, newStore(t)) })
}

// testEventBodySearch: a body filter is a case-insensitive substring of the
// events' text (messages only); alone and with kind, source and time
// filters, in both orders and at several page sizes, following the tokens
// serves exactly the matching events, in order, each once, and no page
// holds more than its limit. A page may hold fewer — even none — and still
// have a token (a store may bound the events one page examines); counts
// agree with the searches.
func testEventBodySearch(t *testing.T, s acs.EventStore) {
	var evs []acs.StoredEvent
	for i := range 150 {
		var e acs.StoredEvent
		switch i % 5 {
		case 0:
			e = ev(fmt.Sprintf("e%03d", i), "MessageEvent", "user", i/2, fmt.Sprintf("please fix bug %d in the parser", i))
		case 1:
			e = ev(fmt.Sprintf("e%03d", i), "ActionEvent", "agent", i/2, "")
		case 2:
			e = ev(fmt.Sprintf("e%03d", i), "MessageEvent", "agent", i/2, fmt.Sprintf("bug %d: the résumé parser is fixed", i))
		case 3:
			e = ev(fmt.Sprintf("e%03d", i), "ObservationEvent", "environment", i/2, "")
		default:
			e = ev(fmt.Sprintf("e%03d", i), "MessageEvent", "environment", i/2, fmt.Sprintf("hook %d said été", i))
		}
		evs = append(evs, e)
	}
	// Another conversation's messages never show.
	must2 := func(_ int, err error) { must(t, err) }
	must2(s.PutEvents(ctx, "other", []acs.StoredEvent{ev("o1", "MessageEvent", "user", 1, "bug elsewhere")}))
	for i := 0; i < len(evs); i += 40 {
		must2(s.PutEvents(ctx, "c", evs[i:min(i+40, len(evs))]))
	}
	want := func(f acs.EventFilter, desc bool) []string {
		var out []string
		for _, e := range evs {
			switch {
			case f.Kind != "" && e.Kind != f.Kind,
				f.Source != "" && e.Source != f.Source,
				f.TimestampGTE != nil && e.Timestamp.Before(*f.TimestampGTE),
				f.TimestampLT != nil && !e.Timestamp.Before(*f.TimestampLT),
				!strings.Contains(e.Text, strings.ToLower(f.Body)):
				continue
			}
			out = append(out, e.ID)
		}
		if desc {
			slices.Reverse(out)
		}
		return out
	}
	t10, t40 := at(10), at(40)
	filters := []acs.EventFilter{
		{Body: "bug"},
		{Body: "BUG 1"},
		{Body: "ÉTÉ"},
		{Body: "Résumé Parser"},
		{Body: "no such text"},
		{Body: "bug", Source: "agent"},
		{Body: "bug", Kind: "MessageEvent", Source: "user"},
		{Body: "bug", Kind: "ActionEvent"},
		{Body: "hook", TimestampGTE: &t10},
		{Body: "bug", TimestampLT: &t10},
		{Body: "fix", TimestampGTE: &t10, TimestampLT: &t40},
	}
	for _, f := range filters {
		for _, desc := range []bool{false, true} {
			exp := want(f, desc)
			for _, limit := range []int{1, 7, 100} {
				if limit == 1 && len(exp) > 12 {
					continue // the larger pages cover it; a page per match is slow on remote stores
				}
				q := acs.EventQuery{EventFilter: f, Desc: desc, Limit: limit}
				var got []string
				for pages := 0; ; pages++ {
					page, err := s.SearchEvents(ctx, "c", q)
					must(t, err)
					if len(page.Items) > limit {
						t.Fatalf("%+v desc=%v: page of %d, limit %d", f, desc, len(page.Items), limit)
					}
					got = append(got, idsOf(page.Items)...)
					if page.Next == "" {
						break
					}
					if pages > 500 {
						t.Fatalf("%+v desc=%v limit=%d: paging does not end", f, desc, limit)
					}
					q.PageToken = page.Next
				}
				if !slices.Equal(got, exp) {
					t.Errorf("%+v desc=%v limit=%d:\n got %v\nwant %v", f, desc, limit, got, exp)
				}
			}
		}
		n, err := s.CountEvents(ctx, "c", f)
		must(t, err)
		if exp := len(want(f, false)); n != exp {
			t.Errorf("%+v: count %d, want %d", f, n, exp)
		}
	}
	// Deleted events leave the body search too.
	must(t, s.DeleteEvents(ctx, "c"))
	page, err := s.SearchEvents(ctx, "c", acs.EventQuery{EventFilter: acs.EventFilter{Body: "bug"}})
	must(t, err)
	if len(page.Items) != 0 || page.Next != "" {
		t.Fatalf("after delete: %d events, next %q", len(page.Items), page.Next)
	}
	if n, _ := s.CountEvents(ctx, "c", acs.EventFilter{Body: "bug"}); n != 0 {
		t.Fatalf("after delete: count %d", n)
	}
	// New events of a conversation whose events were deleted are found.
	must2(s.PutEvents(ctx, "c", []acs.StoredEvent{ev("n1", "MessageEvent", "user", 1, "a new bug"), ev("n2", "ActionEvent", "agent", 2, "")}))
	page, err = s.SearchEvents(ctx, "c", acs.EventQuery{EventFilter: acs.EventFilter{Body: "bug"}})
	must(t, err)
	if got := fmt.Sprint(idsOf(page.Items)); got != "[n1]" || page.Next != "" {
		t.Fatalf("after delete and put: %s next %q", got, page.Next)
	}
}
