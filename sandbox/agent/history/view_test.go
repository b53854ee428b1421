package history

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
)

var sys = events.Message{Role: events.RoleSystem, Content: text("sys")}

// describe renders each message as role, then its call count, tool call id
// and text where it has them.
func describe(msgs []events.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role)
		if len(m.ToolCalls) > 0 {
			s += fmt.Sprintf(" calls=%d", len(m.ToolCalls))
		}
		if m.ToolCallID != nil {
			s += " for=" + *m.ToolCallID
		}
		if t := m.Text(); t != "" {
			s += " " + t
		}
		out = append(out, s)
	}
	return out
}

func TestViewPlacesResultsAfterTheirCalls(t *testing.T) {
	errObs := observe("o2", "c2", "", "boom")
	errObs.Observation.(*events.TerminalObservation).IsError = true
	history := []events.Event{
		user("u1", "hi"),
		action("a1", "c1", "r1"), action("a2", "c2", "r1"), action("a3", "c3", "r1"),
		user("u2", "also this"), // arrived while the tools ran
		errObs,
		observe("o1", "c1", "", "a.txt"),
		failed("e3", "c3", "bad args"),
		action("a4", "c4", "r2"), // interrupted: no result
		user("u3", "continue"),
	}
	want := []string{"system sys", "user hi", "assistant calls=3", "tool for=c1 a.txt", "tool for=c2 " + errorPrefix + "boom",
		"tool for=c3 bad args", "user also this", "assistant calls=1",
		"tool for=c4 [This tool call has no result: it was interrupted or is waiting for confirmation.]", "user continue"}
	if got := describe(BuildView(sys, history)); !slices.Equal(got, want) {
		t.Fatalf("view\n got %q\nwant %q", got, want)
	}
}

func TestAdjacentUserMessagesMerge(t *testing.T) {
	msgs := BuildView(sys, []events.Event{user("u1", "one"), user("u2", "two")})
	if len(msgs) != 2 || msgs[1].Text() != "one\ntwo" {
		t.Fatalf("%+v", msgs)
	}
}

// TestViewLeavesOutBlockedAndCondensed: View drops the messages a hook
// blocked and applies condensations in log order.
func TestViewLeavesOutBlockedAndCondensed(t *testing.T) {
	const summary = "Summary of the earlier part of this conversation:\n"
	tests := []struct {
		name    string
		log     []events.Event
		blocked map[string]string
		want    []string
	}{
		{name: "a blocked message",
			log:     []events.Event{user("u1", "hi"), user("u2", "secret plan"), agentSays("m1", "hello")},
			blocked: map[string]string{"u2": "hook said no"},
			want:    []string{"system sys", "user hi", "assistant hello"}},
		{name: "a condensation request adds nothing",
			log:  []events.Event{user("u1", "hi"), request("q1"), agentSays("m1", "hello")},
			want: []string{"system sys", "user hi", "assistant hello"}},
		{name: "a summary where the forgotten events were",
			log: []events.Event{user("u1", "hi"), action("a1", "c1", "r1"), observe("o1", "c1", "a1", "x"),
				agentSays("m1", "done"), condensation("k1", []string{"a1", "o1"}, "ran ls", 1)},
			want: []string{"system sys", "user hi\n" + summary + "ran ls", "assistant done"}},
		{name: "a summary offset past the end goes last",
			log: []events.Event{user("u1", "hi"), agentSays("m1", "done"),
				condensation("k1", []string{"u1"}, "greeted", 9)},
			want: []string{"system sys", "assistant done", "user " + summary + "greeted"}},
		{name: "a later condensation forgets an earlier summary",
			log: []events.Event{user("u1", "hi"), agentSays("m1", "one"), agentSays("m2", "two"),
				condensation("k1", []string{"m1"}, "first", 1),
				condensation("k2", []string{"k1-summary", "m2"}, "second", 1)},
			want: []string{"system sys", "user hi\n" + summary + "second"}},
		{name: "blocked and condensed",
			log: []events.Event{user("u1", "hi"), user("u2", "blocked"), agentSays("m1", "one"),
				condensation("k1", []string{"m1"}, "s", 2)},
			blocked: map[string]string{"u2": ""},
			want:    []string{"system sys", "user hi\n" + summary + "s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			f.add(tc.log...)
			if got := describe(f.h.View(sys, tc.blocked)); !slices.Equal(got, tc.want) {
				t.Fatalf("view\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The view built incrementally as the history grows is the view built from
// scratch, after every event.
func TestIncrementalViewMatchesFullView(t *testing.T) {
	history := []events.Event{
		user("u1", "hi"), user("u2", "merged with hi"),
		action("a1", "call_0", "r1"), action("a2", "call_1", "r1"),
		observe("o2", "call_1", "a2", "two"), observe("o1", "call_0", "a1", "one"), // settled here
		user("u3", "after a settled prefix"), user("u4", "merged across the cache"),
		action("a3", "call_0", "r2"), // the same call id in another response
		user("u5", "arrived while a3 ran"),
		failed("e3", "call_0", "a3 failed"),
		action("a4", "call_0", "r3"), // never answered: nothing after it settles
		user("u6", "next"),
		action("a5", "call_1", "r4"), observe("o5", "call_1", "a5", "five"),
		reject("j4", "call_0", "a4", "no"), // a4 answered late
		user("u7", "last"),
	}
	var f fixture
	for n, ev := range history {
		f.add(ev)
		got, want := f.h.View(sys, nil), BuildView(sys, f.h.Events())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d events:\n got %s\nwant %s", n+1, viewString(got), viewString(want))
		}
		// Built again without a new event: still the same.
		if again := f.h.View(sys, nil); !reflect.DeepEqual(again, want) {
			t.Fatalf("after %d events, built twice:\n got %s\nwant %s", n+1, viewString(again), viewString(want))
		}
	}
	if f.h.pairs.viewN == 0 {
		t.Fatal("nothing was cached: the test does not exercise the incremental path")
	}
}

func viewString(msgs []events.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n  %s %q calls=%d", m.Role, m.Text(), len(m.ToolCalls))
		if m.ToolCallID != nil {
			fmt.Fprintf(&b, " for=%s", *m.ToolCallID)
		}
	}
	return b.String()
}
