package agentserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// echoReply answers every request with "re: <last user text>", so the
// agent's messages name the turn they answer.
func echoReply() llmtest.Reply {
	return llmtest.Reply{Repeat: true, Respond: func(r *llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: "re: " + r.LastUserText()}
	}}
}

// contextOf renders the messages of the LLM's last request (without the
// system message) as "role:text" items.
func contextOf(t *testing.T, l *llmtest.Server) []string {
	t.Helper()
	reqs := l.Requests()
	if len(reqs) == 0 {
		t.Fatal("no LLM request")
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role != "system" {
			out = append(out, m.Role+":"+m.Text())
		}
	}
	return out
}

// turn sends a message, runs the agent to the end and returns the id of
// the agent's answer.
func (e *env) turn(id, text string) string {
	e.t.Helper()
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage(text, true)); r.status != 200 {
		e.t.Fatalf("send: %d %s", r.status, r.body)
	}
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i]["kind"] == "MessageEvent" && evs[i]["source"] == "agent" {
			return evs[i]["id"].(string)
		}
	}
	e.t.Fatal("no agent message")
	return ""
}

// navigate posts to /navigate and returns the answer's leaf_event_id
// (checking that it is present).
func (e *env) navigate(id string, eventID any) any {
	e.t.Helper()
	r := e.call("POST", "/api/conversations/"+id+"/navigate", map[string]any{"event_id": eventID})
	if r.status != 200 {
		e.t.Fatalf("navigate: %d %s", r.status, r.body)
	}
	var info map[string]any
	r.json(e.t, &info)
	leaf, ok := info["leaf_event_id"]
	if !ok {
		e.t.Fatalf("navigate answer lacks leaf_event_id: %s", r.body)
	}
	if info["id"] != id {
		e.t.Fatalf("navigate answered another conversation: %s", r.body)
	}
	return leaf
}

func TestNavigateBranchesTheConversation(t *testing.T) {
	e := newEnv(t, echoReply())
	id := e.create(nil)
	a1 := e.turn(id, "one")
	a2 := e.turn(id, "two")
	if got := fmt.Sprint(contextOf(t, e.llm)); got != "[user:one assistant:re: one user:two]" {
		t.Fatalf("linear context: %s", got)
	}
	var info map[string]any
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if info["leaf_event_id"] != a2 {
		t.Fatalf("leaf before navigating: %v, want the last answer %s", info["leaf_event_id"], a2)
	}
	total := len(e.allEvents(id))

	// Back to the first answer: the next turn branches from it.
	if leaf := e.navigate(id, a1); leaf != a1 {
		t.Fatalf("leaf after navigate: %v, want %s", leaf, a1)
	}
	b := e.turn(id, "three")
	if got := fmt.Sprint(contextOf(t, e.llm)); got != "[user:one assistant:re: one user:three]" {
		t.Fatalf("context on the branch: %s", got)
	}
	// Nothing was removed from the log.
	evs := e.allEvents(id)
	if len(evs) <= total {
		t.Fatalf("the log shrank or did not grow: %d events, had %d", len(evs), total)
	}
	ids := map[any]bool{}
	for _, ev := range evs {
		ids[ev["id"]] = true
	}
	if !ids[a1] || !ids[a2] || !ids[b] {
		t.Fatal("an event disappeared from the log")
	}

	// The empty tree: the next turn starts from nothing.
	r := e.call("POST", "/api/conversations/"+id+"/navigate", map[string]any{"event_id": nil})
	if r.status != 200 || !strings.Contains(string(r.body), `"leaf_event_id":null`) {
		t.Fatalf("navigate to null: %d %s", r.status, r.body)
	}
	e.turn(id, "four")
	if got := fmt.Sprint(contextOf(t, e.llm)); got != "[user:four]" {
		t.Fatalf("context from the empty tree: %s", got)
	}

	// The head persists across a restart, and the tree with it.
	e.navigate(id, b)
	e.restart()
	var batch []map[string]any
	e.call("GET", "/api/conversations?ids="+id, nil).json(t, &batch)
	if len(batch) != 1 || batch[0]["leaf_event_id"] != b {
		t.Fatalf("leaf after restart: %v, want %s", batch, b)
	}
	e.turn(id, "five")
	if got := fmt.Sprint(contextOf(t, e.llm)); got != "[user:one assistant:re: one user:three assistant:re: three user:five]" {
		t.Fatalf("context after restart: %s", got)
	}
}

func TestNavigateEmptyConversation(t *testing.T) {
	e := newEnv(t, echoReply())
	id := e.create(nil)
	r := e.call("GET", "/api/conversations/"+id, nil)
	if !strings.Contains(string(r.body), `"leaf_event_id":null`) {
		t.Fatalf("a new conversation's leaf_event_id must be an explicit null: %s", r.body)
	}
	// An empty body is the empty tree.
	r = e.call("POST", "/api/conversations/"+id+"/navigate", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"leaf_event_id":null`) {
		t.Fatalf("navigate with no body: %d %s", r.status, r.body)
	}
}

func TestNavigateBadRequests(t *testing.T) {
	e := newEnv(t, echoReply())
	id := e.create(nil)
	a1 := e.turn(id, "one")
	missing := "/api/conversations/00000000-0000-0000-0000-000000000001/navigate"
	cases := []struct {
		name, path string
		body       any
		status     int
		detail     string
	}{
		{"unknown event", "/api/conversations/" + id + "/navigate", map[string]any{"event_id": "no-such-event"}, 404, "Event not found: no-such-event"},
		{"unknown conversation", missing, map[string]any{"event_id": a1}, 404, "Conversation not found"},
		{"event_id not a string", "/api/conversations/" + id + "/navigate", map[string]any{"event_id": 7}, 422, "event_id"},
		{"unknown field", "/api/conversations/" + id + "/navigate", map[string]any{"event": a1}, 422, "event"},
		{"not JSON", "/api/conversations/" + id + "/navigate", "{", 422, "json_invalid"},
		{"bad conversation id", "/api/conversations/x/navigate", map[string]any{"event_id": nil}, 422, "conversation_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", tc.path, tc.body)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.detail) {
				t.Fatalf("%d %s, want %d with %q", r.status, r.body, tc.status, tc.detail)
			}
		})
	}
	// The refused moves left the head where it was.
	var info map[string]any
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if info["leaf_event_id"] != a1 {
		t.Fatalf("leaf: %v, want %s", info["leaf_event_id"], a1)
	}
}

// TestNavigateSurvivesACrash copies the conversations directory while the
// server runs (what a power cut would leave: only what was fsynced) and
// opens the copy: the head and the branch are there.
func TestNavigateSurvivesACrash(t *testing.T) {
	e := newEnv(t, echoReply())
	id := e.create(nil)
	a1 := e.turn(id, "one")
	e.turn(id, "two")
	e.navigate(id, a1)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "conversations"), os.DirFS(e.cfg.ConversationsDir)); err != nil {
		t.Fatal(err)
	}
	c := buildEnv(t, envOptions{dir: dir}, echoReply())
	var info map[string]any
	c.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if info["leaf_event_id"] != a1 {
		t.Fatalf("leaf after a crash: %v, want %s", info["leaf_event_id"], a1)
	}
	c.turn(id, "three") // the conversation's LLM is e's
	if got := fmt.Sprint(contextOf(t, e.llm)); got != "[user:one assistant:re: one user:three]" {
		t.Fatalf("context after a crash: %s", got)
	}
}
