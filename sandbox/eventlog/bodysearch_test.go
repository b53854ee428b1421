package eventlog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/eventlog"
)

// collect follows NextPageID from q until it is "", checking each page's
// size, and returns the ids in the order served and the number of pages.
func collect(t *testing.T, l *eventlog.Log, q eventlog.Query) ([]string, int) {
	t.Helper()
	var got []string
	pages := 0
	for {
		page, err := l.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Items) > q.Limit {
			t.Fatalf("page of %d items, limit %d", len(page.Items), q.Limit)
		}
		got = append(got, ids(t, page.Items)...)
		if page.NextPageID == "" {
			return got, pages
		}
		if pages > 10_000 {
			t.Fatal("paging does not end")
		}
		q.PageID = page.NextPageID
	}
}

// TestBodySearchIsBounded: a body search reads at most BodyScanEvents
// message events (or BodyScanBytes of their text) per page, so on a long log
// whose only match is at the end the first page comes back empty with a
// next_page_id, and following it reaches the match (issue 11, defect 9:
// every body search scanned the whole log).
func TestBodySearchIsBounded(t *testing.T) {
	cases := []struct {
		name   string
		misses []events.Event
	}{
		{"many messages", func() []events.Event {
			var evs []events.Event
			for i := range eventlog.BodyScanEvents + 500 {
				evs = append(evs, msg("user", fmt.Sprintf("message %d about the parser", i)))
			}
			return evs
		}()},
		{"long messages", func() []events.Event {
			var evs []events.Event
			for range 2 * eventlog.BodyScanBytes / (256 << 10) {
				evs = append(evs, msg("agent", strings.Repeat("all work and no play ", (256<<10)/21)))
			}
			return evs
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t, t.TempDir())
			match := msg("user", "the NEEDLE at the end")
			if err := l.Append(context.Background(), append(tc.misses, match)...); err != nil {
				t.Fatal(err)
			}
			q := eventlog.Query{Limit: 100, Filter: eventlog.Filter{Body: "needle"}}
			first, err := l.Search(q)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Items) != 0 || first.NextPageID == "" {
				t.Fatalf("first page: %d items, next %q; want an empty page with a next_page_id", len(first.Items), first.NextPageID)
			}
			for _, order := range []events.EventSortOrder{events.SortTimestamp, events.SortTimestampDesc} {
				q.Order = order
				got, pages := collect(t, l, q)
				if fmt.Sprint(got) != fmt.Sprint([]string{match.ID}) {
					t.Fatalf("%s: got %v over %d pages, want the match once", order, got, pages)
				}
				if pages < 2 {
					t.Fatalf("%s: one page for a scan over the budget", order)
				}
			}
			if n := l.Count(q.Filter); n != 1 {
				t.Fatalf("count %d, want 1", n)
			}
		})
	}
}

// TestBodySearchMatchesAFullScan: body searches (case-insensitive
// substring), alone and with kind, source and time filters, in both orders
// and page sizes, over a log longer than the scan budget, serve exactly the
// events a full scan finds, in order, each once; counts agree.
func TestBodySearchMatchesAFullScan(t *testing.T) {
	l := open(t, t.TempDir())
	var evs []events.Event
	for i := range 3 * eventlog.BodyScanEvents {
		switch i % 5 {
		case 0:
			evs = append(evs, msg("user", fmt.Sprintf("Please fix BUG %d in the parser", i)))
		case 1:
			evs = append(evs, msg("agent", fmt.Sprintf("reply %d: looked at the tokenizer", i)))
		case 2:
			evs = append(evs, state("execution_status", `"running"`))
		case 3:
			evs = append(evs, msg("environment", fmt.Sprintf("hook output %d: bug-free", i)))
		default:
			evs = append(evs, &events.PauseEvent{})
		}
	}
	if err := l.Append(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	third, twoThirds := evs[len(evs)/3].EventBase().Timestamp.Time, evs[2*len(evs)/3].EventBase().Timestamp.Time
	// want is the reference: every event, filtered one by one.
	want := func(f eventlog.Filter, order events.EventSortOrder) []string {
		var out []string
		for _, ev := range evs {
			b := ev.EventBase()
			switch {
			case f.Kind != "" && ev.Kind() != f.Kind,
				f.Source != "" && b.Source != f.Source,
				f.TimestampGTE != nil && b.Timestamp.Before(*f.TimestampGTE),
				f.TimestampLT != nil && !b.Timestamp.Before(*f.TimestampLT),
				!strings.Contains(events.SearchText(ev), strings.ToLower(f.Body)):
				continue
			}
			out = append(out, b.ID)
		}
		if order == events.SortTimestampDesc {
			slices.Reverse(out)
		}
		return out
	}
	filters := []eventlog.Filter{
		{Body: "bug"},
		{Body: "BUG 1"},
		{Body: "tokenizer"},
		{Body: "no such text"},
		{Body: "bug", Source: "environment"},
		{Body: "bug", Kind: "MessageEvent", Source: "user"},
		{Body: "bug", Kind: "PauseEvent"},
		{Body: "bug", TimestampGTE: &third},
		{Body: "bug", TimestampLT: &twoThirds},
		{Body: "reply", TimestampGTE: &third, TimestampLT: &twoThirds},
	}
	for _, f := range filters {
		for _, order := range []events.EventSortOrder{events.SortTimestamp, events.SortTimestampDesc} {
			for _, limit := range []int{1, 7, 100} {
				name := fmt.Sprintf("%+v/%s/limit=%d", f, order, limit)
				exp := want(f, order)
				if limit == 1 && len(exp) > 50 {
					continue // covered by the larger pages; a page per match is slow
				}
				got, _ := collect(t, l, eventlog.Query{Filter: f, Order: order, Limit: limit})
				if !slices.Equal(got, exp) {
					t.Errorf("%s: got %d events, want %d (first differences: %v vs %v)", name, len(got), len(exp), head(got), head(exp))
				}
			}
		}
		if n, exp := l.Count(f), len(want(f, "")); n != exp {
			t.Errorf("%+v: count %d, want %d", f, n, exp)
		}
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }

// TestBodySearchIndexFollowsReopen: the text index is rebuilt when a log is
// reopened, and events appended afterwards join it.
func TestBodySearchIndexFollowsReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := msg("user", "first needle")
	if err := l.Append(context.Background(), a, state("k", `1`), &events.PauseEvent{}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir)
	b := msg("agent", "second NEEDLE")
	if err := l.Append(context.Background(), state("k", `2`), b); err != nil {
		t.Fatal(err)
	}
	mid := b.Timestamp.Add(-time.Microsecond)
	for _, tc := range []struct {
		q    eventlog.Query
		want []string
	}{
		{eventlog.Query{Limit: 10, Filter: eventlog.Filter{Body: "needle"}}, []string{a.ID, b.ID}},
		{eventlog.Query{Limit: 10, Order: events.SortTimestampDesc, Filter: eventlog.Filter{Body: "needle"}}, []string{b.ID, a.ID}},
		{eventlog.Query{Limit: 10, Filter: eventlog.Filter{Body: "needle", TimestampGTE: &mid}}, []string{b.ID}},
		{eventlog.Query{Limit: 1, Filter: eventlog.Filter{Body: "needle"}}, []string{a.ID, b.ID}},
	} {
		if got, _ := collect(t, l, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.q, got, tc.want)
		}
	}
}
