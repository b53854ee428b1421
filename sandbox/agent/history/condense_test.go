package history

import (
	"fmt"
	"slices"
	"testing"

	"github.com/acs-project/acs/events"
)

// says returns user messages with ids prefix+from up to prefix+(to-1).
func says(prefix string, from, to int) []events.Event {
	var out []events.Event
	for i := from; i < to; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		out = append(out, user(id, id))
	}
	return out
}

func TestCondensationPlan(t *testing.T) {
	limits := Limits{MaxSize: 8, KeepFirst: 2, MinimumProgress: 0.1}
	with := func(change func(*Limits)) Limits {
		l := limits
		change(&l)
		return l
	}
	hundred := 100
	tests := []struct {
		name   string
		log    []events.Event
		limits Limits
		tokens int64
		want   *Plan
	}{
		{name: "short enough", log: says("m", 0, 8), limits: limits},
		{name: "longer than max_size", log: says("m", 0, 10), limits: limits,
			want: &Plan{Reason: "events", Start: 2, End: 9, Offset: 2}},
		{name: "too little progress", log: says("m", 0, 10), limits: with(func(l *Limits) { l.MinimumProgress = 0.8 })},
		{name: "a request", log: seq(says("m", 0, 6), one(request("q1"))), limits: limits,
			want: &Plan{Reason: "request", Start: 2, End: 5, Offset: 2}},
		{name: "a request with too little progress forgets everything",
			log: seq(says("m", 0, 6), one(request("q1"))), limits: with(func(l *Limits) { l.MinimumProgress = 0.9 }),
			want: &Plan{Reason: "request", Start: 0, End: 6, Offset: 0}},
		{name: "a request a condensation handled",
			log:    seq(says("m", 0, 6), one(request("q1"), condensation("k1", []string{"m2"}, "s", 2))),
			limits: limits},
		{name: "a request on an empty view", log: one(request("q1")), limits: limits},
		{name: "too many prompt tokens", log: says("m", 0, 6), tokens: 101,
			limits: with(func(l *Limits) { l.MaxTokens = &hundred }),
			want:   &Plan{Reason: "tokens", Start: 2, End: 5, Offset: 2}},
		{name: "as many prompt tokens as allowed", log: says("m", 0, 6), tokens: 100,
			limits: with(func(l *Limits) { l.MaxTokens = &hundred })},
		{name: "the start moves past a call's result",
			log: seq(says("m", 0, 2), one(action("a1", "c1", "r1"), user("x", "x"), observe("o1", "c1", "a1", "x")),
				says("m", 2, 7)),
			limits: with(func(l *Limits) { l.KeepFirst = 3 }),
			want:   &Plan{Reason: "events", Start: 5, End: 9, Offset: 5}},
		{name: "the end moves past a call without a result",
			log:    seq(says("m", 0, 6), one(action("a1", "c1", "r1")), says("m", 6, 9)),
			limits: limits,
			want:   &Plan{Reason: "events", Start: 2, End: 10, Offset: 2}},
		{name: "the condensed view counts",
			log:    seq(says("m", 0, 10), one(condensation("k1", []string{"m2", "m3", "m4", "m5"}, "s", 2))),
			limits: limits},
		{name: "the condensed view grows past max_size",
			log:    seq(says("m", 0, 10), one(condensation("k1", []string{"m2", "m3", "m4", "m5"}, "s", 2)), says("m", 10, 12)),
			limits: limits,
			want:   &Plan{Reason: "events", Start: 2, End: 8, Offset: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			f.add(tc.log...)
			got, ok := f.h.CondensationPlan(tc.limits, tc.tokens)
			switch {
			case tc.want == nil && ok:
				t.Fatalf("plan %+v, want none", got)
			case tc.want != nil && (!ok || got != *tc.want):
				t.Fatalf("plan %+v (%v), want %+v", got, ok, *tc.want)
			}
		})
	}
}

func TestForgotten(t *testing.T) {
	var f fixture
	f.add(seq(says("m", 0, 10), one(condensation("k1", []string{"m2", "m3", "m4", "m5"}, "s", 2)), says("m", 10, 12))...)
	tests := []struct {
		plan   Plan
		want   []string
		wantOK bool
	}{
		{Plan{Start: 2, End: 8, Offset: 2}, []string{"k1-summary", "m6", "m7", "m8", "m9", "m10"}, true},
		{Plan{Start: 0, End: 9}, []string{"m0", "m1", "k1-summary", "m6", "m7", "m8", "m9", "m10", "m11"}, true},
		{Plan{Start: 2, End: 10}, nil, false},
	}
	for _, tc := range tests {
		got, ok := f.h.Forgotten(tc.plan)
		if ok != tc.wantOK || (ok && !slices.Equal(ids(got), tc.want)) {
			t.Errorf("Forgotten(%+v) = %q %v, want %q %v", tc.plan, ids(got), ok, tc.want, tc.wantOK)
		}
	}
}

func TestCondensationRequested(t *testing.T) {
	tests := []struct {
		name string
		log  []events.Event
		want bool
	}{
		{"none", says("m", 0, 2), false},
		{"a request", seq(says("m", 0, 2), one(request("q1"))), true},
		{"handled", one(request("q1"), condensation("k1", nil, "s", 0)), false},
		{"asked again", one(request("q1"), condensation("k1", nil, "s", 0), request("q2")), true},
		{"on another branch", one(user("u1", "hi"), request("q1"), navigate("n1", ptr("u1"))), false},
	}
	for _, tc := range tests {
		var f fixture
		f.add(tc.log...)
		if got := f.h.CondensationRequested(); got != tc.want {
			t.Errorf("%s: CondensationRequested %v, want %v", tc.name, got, tc.want)
		}
	}
}
