package history

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/acs-project/acs/events"
)

// A fixture logs events as the agent does: it adds each to the history and,
// when the head moved, hands the history the new branch's events.
type fixture struct {
	h    History
	log  []events.Event
	byID map[string]events.Event
}

func (f *fixture) add(evs ...events.Event) {
	if f.byID == nil {
		f.byID = map[string]events.Event{}
	}
	stale := false
	for _, ev := range evs {
		f.log = append(f.log, ev)
		f.byID[ev.EventBase().ID] = ev
		stale = f.h.Add(ev)
	}
	if stale {
		f.reload()
	}
}

func (f *fixture) reload() {
	var evs []events.Event
	for _, id := range f.h.Branch() {
		if ev, ok := f.byID[id]; ok {
			evs = append(evs, ev)
		}
	}
	f.h.SetBranch(evs)
}

// replay is the history a restart rebuilds from log: every event added,
// then the branch set once.
func replay(log []events.Event) *fixture {
	f := &fixture{byID: map[string]events.Event{}}
	for _, ev := range log {
		f.log = append(f.log, ev)
		f.byID[ev.EventBase().ID] = ev
		f.h.Add(ev)
	}
	f.reload()
	return f
}

func ids(evs []events.Event) []string {
	out := []string{}
	for _, ev := range evs {
		out = append(out, ev.EventBase().ID)
	}
	return out
}

func text(t string) []events.Content { return []events.Content{events.TextItem(t)} }

func user(id, t string) *events.MessageEvent {
	return &events.MessageEvent{Base: events.Base{ID: id, Source: events.SourceUser},
		LLMMessage: events.Message{Role: events.RoleUser, Content: text(t)}}
}

func agentSays(id, t string) *events.MessageEvent {
	return &events.MessageEvent{Base: events.Base{ID: id, Source: events.SourceAgent},
		LLMMessage: events.Message{Role: events.RoleAssistant, Content: text(t)}}
}

func envSays(id, t string) *events.MessageEvent {
	return &events.MessageEvent{Base: events.Base{ID: id, Source: events.SourceEnvironment},
		LLMMessage: events.Message{Role: events.RoleUser, Content: text(t)}}
}

// action is a terminal action running ls, call call of LLM response resp.
func action(id, call, resp string) *events.ActionEvent {
	return run(id, call, resp, "ls")
}

func run(id, call, resp, command string) *events.ActionEvent {
	args, _ := json.Marshal(map[string]string{"command": command})
	return &events.ActionEvent{Base: events.Base{ID: id, Source: events.SourceAgent}, ToolName: "terminal",
		ToolCallID: call, LLMResponseID: resp,
		ToolCall: events.MessageToolCall{ID: call, Name: "terminal", Arguments: string(args), Origin: "completion"},
		Action:   &events.TerminalAction{Command: command}}
}

func finish(id, call, resp, message string) *events.ActionEvent {
	return &events.ActionEvent{Base: events.Base{ID: id, Source: events.SourceAgent}, ToolName: "finish",
		ToolCallID: call, LLMResponseID: resp,
		ToolCall: events.MessageToolCall{ID: call, Name: "finish", Arguments: "{}", Origin: "completion"},
		Action:   &events.FinishAction{Message: message}}
}

func observe(id, call, actionID, t string) *events.ObservationEvent {
	o := &events.TerminalObservation{}
	o.SetText(t)
	return &events.ObservationEvent{Base: events.Base{ID: id, Source: events.SourceEnvironment}, ToolName: "terminal",
		ToolCallID: call, ActionID: actionID, Observation: o}
}

func failed(id, call, t string) *events.AgentErrorEvent {
	return &events.AgentErrorEvent{Base: events.Base{ID: id, Source: events.SourceAgent}, ToolName: "terminal",
		ToolCallID: call, Error: t}
}

func reject(id, call, actionID, reason string) *events.UserRejectObservation {
	return &events.UserRejectObservation{Base: events.Base{ID: id, Source: events.SourceUser}, ToolName: "terminal",
		ToolCallID: call, ActionID: actionID, RejectionReason: reason}
}

func stateUpdate(id, key string) *events.ConversationStateUpdateEvent {
	return &events.ConversationStateUpdateEvent{Base: events.Base{ID: id, Source: events.SourceEnvironment},
		Key: key, Value: json.RawMessage(`"x"`)}
}

func navigate(id string, to *string) *events.ConversationStateUpdateEvent {
	ev := NavigateEvent(to)
	ev.ID, ev.Source = id, events.SourceEnvironment
	return ev
}

func request(id string) *events.CondensationRequest {
	return &events.CondensationRequest{Base: events.Base{ID: id, Source: events.SourceUser}}
}

func condensation(id string, forgotten []string, summary string, offset int) *events.Condensation {
	return &events.Condensation{Base: events.Base{ID: id, Source: events.SourceEnvironment},
		ForgottenEventIDs: forgotten, Summary: &summary, SummaryOffset: &offset, LLMResponseID: "resp-" + id}
}

func ptr(s string) *string { return &s }

// TestNavigation: the head, the branch (root first) and the branch's events
// in the view, after a log that moves the head.
func TestNavigation(t *testing.T) {
	tests := []struct {
		name       string
		log        []events.Event
		wantHead   string
		wantBranch []string
		wantEvents []string
	}{
		{name: "empty", wantBranch: nil, wantEvents: []string{}},
		{name: "a line of events",
			log:      []events.Event{user("u1", "hi"), action("a1", "c1", "r1"), observe("o1", "c1", "a1", "x")},
			wantHead: "o1", wantBranch: []string{"u1", "a1", "o1"}, wantEvents: []string{"u1", "a1", "o1"}},
		{name: "state updates join the tree but never become the head",
			log:      []events.Event{user("u1", "hi"), stateUpdate("s1", "title"), agentSays("m1", "hello")},
			wantHead: "m1", wantBranch: []string{"u1", "m1"}, wantEvents: []string{"u1", "m1"}},
		{name: "events outside the view are on the branch but not in its events",
			log:      []events.Event{user("u1", "hi"), &events.PauseEvent{Base: events.Base{ID: "p1"}}, user("u2", "go on")},
			wantHead: "u2", wantBranch: []string{"u1", "p1", "u2"}, wantEvents: []string{"u1", "u2"}},
		{name: "a branch from an earlier event",
			log: []events.Event{user("u1", "hi"), agentSays("m1", "hello"), user("u2", "more"),
				navigate("n1", ptr("u1")), user("u3", "instead")},
			wantHead: "u3", wantBranch: []string{"u1", "u3"}, wantEvents: []string{"u1", "u3"}},
		{name: "back to the first branch",
			log: []events.Event{user("u1", "hi"), agentSays("m1", "hello"), navigate("n1", ptr("u1")),
				user("u3", "instead"), navigate("n2", ptr("m1"))},
			wantHead: "m1", wantBranch: []string{"u1", "m1"}, wantEvents: []string{"u1", "m1"}},
		{name: "the empty tree",
			log:      []events.Event{user("u1", "hi"), navigate("n1", nil)},
			wantHead: "", wantBranch: nil, wantEvents: []string{}},
		{name: "a new root after the empty tree",
			log:      []events.Event{user("u1", "hi"), navigate("n1", nil), user("u2", "again")},
			wantHead: "u2", wantBranch: []string{"u2"}, wantEvents: []string{"u2"}},
		{name: "to a state update",
			log: []events.Event{user("u1", "hi"), stateUpdate("s1", "title"), agentSays("m1", "hello"),
				navigate("n1", ptr("s1")), user("u2", "after")},
			wantHead: "u2", wantBranch: []string{"u1", "s1", "u2"}, wantEvents: []string{"u1", "u2"}},
		{name: "a value that is not an id leaves the head",
			log: []events.Event{user("u1", "hi"), &events.ConversationStateUpdateEvent{Base: events.Base{ID: "n1"},
				Key: LeafKey, Value: json.RawMessage(`{"not":"an id"}`)}},
			wantHead: "u1", wantBranch: []string{"u1"}, wantEvents: []string{"u1"}},
		{name: "an event that is its own parent ends the walk",
			log:      []events.Event{user("u1", "hi"), navigate("n1", ptr("x1")), user("x1", "loop")},
			wantHead: "x1", wantBranch: []string{"x1"}, wantEvents: []string{"x1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			for _, ev := range tc.log {
				f.add(ev)
			}
			restarted := replay(f.log)
			for _, h := range []*History{&f.h, &restarted.h} {
				if h.Head() != tc.wantHead {
					t.Errorf("head %q, want %q", h.Head(), tc.wantHead)
				}
				if got := h.Branch(); !slices.Equal(got, tc.wantBranch) {
					t.Errorf("branch %q, want %q", got, tc.wantBranch)
				}
				if got := ids(h.Events()); !slices.Equal(got, tc.wantEvents) {
					t.Errorf("events %q, want %q", got, tc.wantEvents)
				}
			}
		})
	}
}

// TestAddWaitsForSetBranchAfterNavigation: after the head moves, events
// join the tree only, until SetBranch gives the branch's events.
func TestAddWaitsForSetBranchAfterNavigation(t *testing.T) {
	var h History
	for _, ev := range []events.Event{user("u1", "hi"), agentSays("m1", "hello")} {
		if h.Add(ev) {
			t.Fatalf("adding %s made the branch stale", ev.EventBase().ID)
		}
	}
	if !h.Add(navigate("n1", ptr("u1"))) || !h.Add(user("u2", "after")) || !h.Stale() {
		t.Fatal("the branch is not stale after a navigation")
	}
	if got := ids(h.Events()); !slices.Equal(got, []string{"u1", "m1"}) {
		t.Fatalf("events %q before SetBranch, want the old branch's", got)
	}
	if got := h.Branch(); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Fatalf("branch %q, want [u1 u2]", got)
	}
	h.SetBranch([]events.Event{user("u1", "hi"), navigate("n1", ptr("u1")), user("u2", "after")})
	if h.Stale() {
		t.Fatal("still stale after SetBranch")
	}
	if got := ids(h.Events()); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Fatalf("events %q, want [u1 u2]", got)
	}
	h.Add(agentSays("m2", "ok"))
	if got := ids(h.Events()); !slices.Equal(got, []string{"u1", "u2", "m2"}) {
		t.Fatalf("events %q, want [u1 u2 m2]", got)
	}
}

func TestNavigateEvent(t *testing.T) {
	tests := []struct {
		to   *string
		want string
	}{{ptr("ev-1"), `"ev-1"`}, {nil, "null"}}
	for _, tc := range tests {
		ev := NavigateEvent(tc.to)
		if ev.Key != LeafKey || string(ev.Value) != tc.want {
			t.Errorf("NavigateEvent: key %q value %s, want %q %s", ev.Key, ev.Value, LeafKey, tc.want)
		}
	}
}

func TestFinalResponse(t *testing.T) {
	tests := []struct {
		name string
		log  []events.Event
		want string
	}{
		{"empty", nil, ""},
		{"the last agent message", []events.Event{agentSays("m1", "one"), user("u1", "q"), agentSays("m2", "two")}, "two"},
		{"a finish action after it", []events.Event{agentSays("m1", "one"), finish("f1", "c1", "r1", "done")}, "done"},
		{"an agent message after the finish", []events.Event{finish("f1", "c1", "r1", "done"), agentSays("m1", "later")}, "later"},
		{"only the user spoke", []events.Event{user("u1", "hi")}, ""},
		{"not on the active branch", []events.Event{agentSays("m1", "one"), user("u1", "q"), agentSays("m2", "two"),
			navigate("n1", ptr("m1"))}, "one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			f.add(tc.log...)
			if got := f.h.FinalResponse(); got != tc.want {
				t.Fatalf("FinalResponse %q, want %q", got, tc.want)
			}
		})
	}
}
