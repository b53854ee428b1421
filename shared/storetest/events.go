package storetest

import (
	"fmt"
	"sort"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunEventStoreTests runs the acs.EventStore suite.
func RunEventStoreTests(t *testing.T, h Harness[acs.EventStore]) {
	runTests(t, h, eventStoreTests)
}

var eventStoreTests = []Test[acs.EventStore]{
	{"Events", testEvents},
	{"EventPaging", testEventPaging},
	{"EventBodySearch", testEventBodySearch},
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

func testEvents(t *testing.T, s acs.EventStore) {
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

func testEventPaging(t *testing.T, s acs.EventStore) {
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
