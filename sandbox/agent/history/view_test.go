package history

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
)

func action(id, call, resp string) *events.ActionEvent {
	return &events.ActionEvent{Base: events.Base{ID: id}, ToolName: "terminal", ToolCallID: call, LLMResponseID: resp,
		ToolCall: events.MessageToolCall{ID: call, Name: "terminal", Arguments: "{}", Origin: "completion"},
		Action:   &events.TerminalAction{Command: "ls"}}
}

func user(text string) *events.MessageEvent {
	return &events.MessageEvent{Base: events.Base{Source: events.SourceUser},
		LLMMessage: events.Message{Role: events.RoleUser, Content: []events.Content{events.TextItem(text)}}}
}

func TestViewPlacesResultsAfterTheirCalls(t *testing.T) {
	obs := &events.TerminalObservation{}
	obs.SetText("a.txt")
	errObs := &events.TerminalObservation{}
	errObs.SetText("boom")
	errObs.IsError = true
	history := []events.Event{
		user("hi"),
		action("a1", "c1", "r1"), action("a2", "c2", "r1"), action("a3", "c3", "r1"),
		user("also this"), // arrived while the tools ran
		&events.ObservationEvent{ToolCallID: "c2", Observation: errObs},
		&events.ObservationEvent{ToolCallID: "c1", Observation: obs},
		&events.AgentErrorEvent{ToolCallID: "c3", Error: "bad args"},
		action("a4", "c4", "r2"), // interrupted: no result
		user("continue"),
	}
	sys := events.Message{Role: events.RoleSystem, Content: []events.Content{events.TextItem("sys")}}
	msgs := BuildView(sys, history)
	var got []string
	for _, m := range msgs {
		s := string(m.Role)
		if m.ToolCallID != nil {
			s += ":" + *m.ToolCallID + "=" + m.Text()
		}
		if len(m.ToolCalls) > 0 {
			s += ":" + itoa(len(m.ToolCalls))
		}
		got = append(got, s)
	}
	want := []string{"system", "user", "assistant:3", "tool:c1=a.txt", "tool:c2=" + errorPrefix + "boom",
		"tool:c3=bad args", "user", "assistant:1",
		"tool:c4=[This tool call has no result: it was interrupted or is waiting for confirmation.]", "user"}
	if len(got) != len(want) {
		t.Fatalf("view\n got %q\nwant %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d: got %q want %q", i, got[i], want[i])
		}
	}
}

func TestAdjacentUserMessagesMerge(t *testing.T) {
	sys := events.Message{Role: events.RoleSystem}
	msgs := BuildView(sys, []events.Event{user("one"), user("two")})
	if len(msgs) != 2 || msgs[1].Text() != "one\ntwo" {
		t.Fatalf("%+v", msgs)
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// The view built incrementally as the history grows (viewLocked's path) is
// the view built from scratch, after every event.
func TestIncrementalViewMatchesFullView(t *testing.T) {
	obs := func(call, actionID, text string) *events.ObservationEvent {
		o := &events.TerminalObservation{}
		o.SetText(text)
		return &events.ObservationEvent{ToolCallID: call, ActionID: actionID, Observation: o}
	}
	history := []events.Event{
		user("hi"), user("merged with hi"),
		action("a1", "call_0", "r1"), action("a2", "call_1", "r1"),
		obs("call_1", "a2", "two"), obs("call_0", "a1", "one"), // settled here
		user("after a settled prefix"), user("merged across the cache"),
		action("a3", "call_0", "r2"), // the same call id in another response
		user("arrived while a3 ran"),
		&events.AgentErrorEvent{ToolCallID: "call_0", Error: "a3 failed"},
		action("a4", "call_0", "r3"), // never answered: nothing after it settles
		user("next"),
		action("a5", "call_1", "r4"), obs("call_1", "a5", "five"),
		&events.UserRejectObservation{ToolCallID: "call_0", ActionID: "a4", RejectionReason: "no"}, // a4 answered late
		user("last"),
	}
	sys := events.Message{Role: events.RoleSystem, Content: []events.Content{events.TextItem("sys")}}
	var p pairing
	for n := 1; n <= len(history); n++ {
		h := history[:n]
		p.add(h)
		got, want := p.buildView(sys, h), BuildView(sys, h)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d events:\n got %s\nwant %s", n, viewString(got), viewString(want))
		}
		// Built again without a new event: still the same.
		if again := p.buildView(sys, h); !reflect.DeepEqual(again, want) {
			t.Fatalf("after %d events, built twice:\n got %s\nwant %s", n, viewString(again), viewString(want))
		}
	}
	if p.viewN == 0 {
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
