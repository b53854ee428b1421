package history

import (
	"maps"
	"slices"
	"testing"

	"github.com/acs-project/acs/events"
)

// TestPairing: which result answers which action, and which actions are
// left unanswered.
func TestPairing(t *testing.T) {
	noAction := action("a9", "c9", "r9")
	noAction.Action = nil
	tests := []struct {
		name           string
		log            []events.Event
		wantAnswered   map[string]string // action id -> result id
		wantUnanswered []string
	}{
		{name: "empty", wantAnswered: map[string]string{}},
		{name: "an observation names its action",
			log:          []events.Event{action("a1", "c1", "r1"), observe("o1", "c1", "a1", "x")},
			wantAnswered: map[string]string{"a1": "o1"}},
		{name: "results in any order, with events between",
			log: []events.Event{action("a1", "c1", "r1"), action("a2", "c2", "r1"), user("u1", "meanwhile"),
				observe("o2", "c2", "a2", "x"), observe("o1", "c1", "a1", "y")},
			wantAnswered: map[string]string{"a1": "o1", "a2": "o2"}},
		{name: "an agent error answers the latest action with its call id",
			log: []events.Event{action("a1", "call_0", "r1"), action("a2", "call_0", "r2"),
				failed("e1", "call_0", "bad")},
			wantAnswered: map[string]string{"a2": "e1"}, wantUnanswered: []string{"a1"}},
		{name: "call ids reused across responses pair by action id",
			log: []events.Event{action("a1", "call_0", "r1"), action("a2", "call_0", "r2"),
				observe("o1", "call_0", "a1", "x")},
			wantAnswered: map[string]string{"a1": "o1"}, wantUnanswered: []string{"a2"}},
		{name: "a rejection answers its action",
			log:          []events.Event{action("a1", "c1", "r1"), reject("j1", "c1", "a1", "no")},
			wantAnswered: map[string]string{"a1": "j1"}},
		{name: "a result for another action answers nothing",
			log:          []events.Event{action("a1", "c1", "r1"), observe("o1", "c1", "a7", "x")},
			wantAnswered: map[string]string{}, wantUnanswered: []string{"a1"}},
		{name: "a second result answers nothing",
			log: []events.Event{action("a1", "c1", "r1"), observe("o1", "c1", "a1", "x"),
				observe("o2", "c1", "a1", "again")},
			wantAnswered: map[string]string{"a1": "o1"}},
		{name: "an action that cannot run is never pending",
			log:          []events.Event{noAction, action("a1", "c1", "r1")},
			wantAnswered: map[string]string{}, wantUnanswered: []string{"a1"}},
		{name: "results on another branch do not count",
			log: []events.Event{user("u1", "hi"), action("a1", "c1", "r1"), observe("o1", "c1", "a1", "x"),
				navigate("n1", ptr("a1"))},
			wantAnswered: map[string]string{}, wantUnanswered: []string{"a1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			f.add(tc.log...)
			evs := f.h.Events()
			answered := map[string]string{}
			for a, i := range pairResults(evs) {
				answered[a] = evs[i].EventBase().ID
			}
			if !maps.Equal(answered, tc.wantAnswered) {
				t.Errorf("answered %v, want %v", answered, tc.wantAnswered)
			}
			if got := ids(asEvents(f.h.Unanswered())); !slices.Equal(got, tc.wantUnanswered) {
				t.Errorf("unanswered %q, want %q", got, tc.wantUnanswered)
			}
		})
	}
}

// TestPairingGrowsWithTheBranch: the incremental pairing of a branch built
// one event at a time is the pairing computed at once.
func TestPairingGrowsWithTheBranch(t *testing.T) {
	log := []events.Event{action("a1", "call_0", "r1"), action("a2", "call_1", "r1"), observe("o2", "call_1", "a2", "x"),
		action("a3", "call_0", "r2"), failed("e1", "call_0", "bad"), observe("o1", "call_0", "a1", "late")}
	var f fixture
	for _, ev := range log {
		f.add(ev)
		f.h.Unanswered()
		if got, want := f.h.pairs.answered, pairResults(f.h.Events()); !maps.Equal(got, want) {
			t.Fatalf("after %s: incremental %v, at once %v", ev.EventBase().ID, got, want)
		}
	}
}

func asEvents(as []*events.ActionEvent) []events.Event {
	out := make([]events.Event, len(as))
	for i, a := range as {
		out[i] = a
	}
	return out
}
