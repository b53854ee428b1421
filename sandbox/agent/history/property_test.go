package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/acs-project/acs/events"
)

// generator makes a random conversation one event at a time: messages,
// groups of actions, their results (late, twice, or for actions on another
// branch), condensations, requests, state updates and navigation.
type generator struct {
	r *rand.Rand
	n int
	// condense allows condensations and requests, which make View
	// rebuild the whole view.
	condense bool
}

func (g *generator) id(kind string) string {
	g.n++
	return fmt.Sprintf("%s%d", kind, g.n)
}

// next returns the events the agent would log in one emit.
func (g *generator) next(f *fixture) []events.Event {
	branch := f.h.Events()
	var actions []*events.ActionEvent
	for _, ev := range branch {
		if a, ok := ev.(*events.ActionEvent); ok {
			actions = append(actions, a)
		}
	}
	switch k := g.r.IntN(100); {
	case k < 20:
		var m *events.MessageEvent
		switch g.r.IntN(3) {
		case 0:
			m = user(g.id("u"), "user")
		case 1:
			m = agentSays(g.id("m"), "agent")
		default:
			m = envSays(g.id("v"), "environment")
		}
		// Decoded events may have room to grow: the view must not use it.
		m.LLMMessage.Content = append(make([]events.Content, 0, 4), m.LLMMessage.Content...)
		m.LLMMessage.Content[0] = events.TextItem(m.ID)
		return one(m)
	case k < 40:
		// One LLM response's actions; call ids repeat across responses.
		resp := g.id("r")
		var group []events.Event
		for i := range 1 + g.r.IntN(3) {
			a := action(g.id("a"), fmt.Sprintf("call_%d", i), resp)
			if g.r.IntN(10) == 0 {
				a.Action = nil
			}
			group = append(group, a)
		}
		return group
	case k < 70 && len(actions) > 0:
		// Prefer the latest actions, as results follow their calls.
		a := actions[max(0, len(actions)-1-g.r.IntN(4))]
		switch g.r.IntN(4) {
		case 0:
			return one(failed(g.id("e"), a.ToolCallID, "failed"))
		case 1:
			return one(reject(g.id("j"), a.ToolCallID, a.ID, "no"))
		case 2:
			return one(observe(g.id("o"), a.ToolCallID, "", "by call id"))
		default:
			return one(observe(g.id("o"), a.ToolCallID, a.ID, "by action id"))
		}
	case k < 72 && g.condense:
		return one(request(g.id("q")))
	case k < 74 && g.condense:
		view := condensed(branch)
		var forget []string
		for _, ev := range view {
			if g.r.IntN(3) == 0 {
				forget = append(forget, ev.EventBase().ID)
			}
		}
		return one(condensation(g.id("k"), forget, "summary", g.r.IntN(len(view)+2)))
	case k < 85:
		return one(stateUpdate(g.id("s"), "title"))
	case k < 88:
		return one(&events.PauseEvent{Base: events.Base{ID: g.id("p")}})
	case k < 95 && len(f.log) > 0:
		// Navigate, sometimes with more events in the same emit.
		var to *string
		if g.r.IntN(8) > 0 {
			to = ptr(f.log[g.r.IntN(len(f.log))].EventBase().ID)
		}
		evs := one(navigate(g.id("n"), to))
		if g.r.IntN(3) == 0 {
			evs = append(evs, user(g.id("u"), "after navigating"))
		}
		return evs
	}
	return one(user(g.id("u"), "user"))
}

// TestIncrementalViewEqualsRebuild: after every emit of a random
// conversation, the history kept up to date event by event equals the one
// a restart rebuilds from the log, and its view equals the view built from
// scratch. A view once returned does not change as the history grows.
func TestIncrementalViewEqualsRebuild(t *testing.T) {
	const conversations, emits = 60, 50
	incremental := 0
	for seed := range uint64(conversations) {
		g := &generator{r: rand.New(rand.NewPCG(seed, 35)), condense: seed%3 != 0}
		var f fixture
		var kept []events.Message
		keptString := viewString(kept)
		var keptSegments [][]events.Message
		keptSegmentsString := viewString(nil)
		for step := range emits {
			f.add(g.next(&f)...)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d, emit %d: %s\nlog %q", seed, step, fmt.Sprintf(format, args...), ids(f.log))
			}
			restarted := replay(f.log)
			if got, want := ids(f.h.Events()), ids(restarted.h.Events()); !slices.Equal(got, want) {
				fail("branch events %q, after a restart %q", got, want)
			}
			if f.h.Head() != restarted.h.Head() {
				fail("head %q, after a restart %q", f.h.Head(), restarted.h.Head())
			}
			want := BuildView(sys, condensed(restarted.h.Events()))
			for i := range 2 {
				if got := f.h.View(sys, nil); !reflect.DeepEqual(got, want) {
					fail("view (call %d)%s\nrebuilt%s", i+1, viewString(got), viewString(want))
				}
			}
			// A view already returned never changes.
			if got := viewString(kept); got != keptString {
				fail("the previous view changed:%s\nwas%s", got, keptString)
			}
			kept = f.h.View(sys, nil)
			keptString = viewString(kept)
			// The view in segments is the same view, and no segment
			// returned ever changes.
			if got := viewString(slices.Concat(keptSegments...)); got != keptSegmentsString {
				fail("the previous view in segments changed:%s\nwas%s", got, keptSegmentsString)
			}
			keptSegments = f.h.ViewSegments(sys, nil)
			if got := slices.Concat(keptSegments...); !reflect.DeepEqual(got, want) {
				fail("view in segments%s\nrebuilt%s", viewString(got), viewString(want))
			}
			keptSegmentsString = viewString(slices.Concat(keptSegments...))
			if f.h.pairs.condensations == 0 && f.h.pairs.viewN > 0 {
				incremental++
			}
			// A blocked message leaves the view as it leaves the rebuild.
			if evs := restarted.h.Events(); len(evs) > 0 {
				blocked := map[string]string{evs[g.r.IntN(len(evs))].EventBase().ID: "blocked"}
				var kept []events.Event
				for _, ev := range condensed(evs) {
					if _, ok := blocked[ev.EventBase().ID]; !ok || ev.Kind() != "MessageEvent" {
						kept = append(kept, ev)
					}
				}
				if got, want := f.h.View(sys, blocked), BuildView(sys, kept); !reflect.DeepEqual(got, want) {
					fail("view blocking %v%s\nrebuilt%s", blocked, viewString(got), viewString(want))
				}
			}
		}
	}
	t.Logf("the incremental view was used after %d of %d emits", incremental, conversations*emits)
	if incremental < conversations*emits/4 {
		t.Fatalf("the incremental view was used after %d of %d emits: the test hardly exercises it",
			incremental, conversations*emits)
	}
}
