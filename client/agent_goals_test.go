package client_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// newScriptedAgentServer is newAgentServer with the LLM's script given.
func newScriptedAgentServer(t *testing.T, replies ...llmtest.Reply) (*client.Agent, *llmtest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	llm := llmtest.New(replies...)
	t.Cleanup(llm.Close)
	srv, err := agentserver.New(context.Background(), agentserver.Config{SessionKeys: []string{sessionKey},
		ConversationsDir: filepath.Join(dir, "conversations"), WorkspaceDir: filepath.Join(dir, "workspace"),
		BuildSHA: "unknown", BuildRef: "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return client.NewAgent(hs.URL, sessionKey), llm, filepath.Join(dir, "workspace")
}

func isGoalJudge(r *llmtest.Request) bool {
	return strings.Contains(r.LastUserText(), "auditing whether a long-running GOAL")
}

// waitConversation polls the conversation until ok accepts it.
func waitConversation(t *testing.T, a *client.Agent, id string, ok func(agentwire.ConversationInfo) bool) agentwire.ConversationInfo {
	t.Helper()
	var info agentwire.ConversationInfo
	if !testwait.Until(20*time.Second, func() bool {
		var err error
		info, err = a.GetConversation(context.Background(), id)
		return err == nil && ok(info)
	}) {
		t.Fatalf("conversation %s never got there: status %s, goal %+v", id, info.ExecutionStatus, info.Goal)
	}
	return info
}

func TestAgentGoalEndToEnd(t *testing.T) {
	ctx := context.Background()
	a, llm, work := newScriptedAgentServer(t,
		llmtest.Reply{Text: "Wrote the poem.", Repeat: true, Match: func(r *llmtest.Request) bool { return !isGoalJudge(r) }},
		llmtest.Reply{Text: `{"score": 0.5, "complete": false, "missing": "a title"}`, Match: isGoalJudge},
		llmtest.Reply{Text: `{"score": 1, "complete": true, "missing": ""}`, Match: isGoalJudge})
	conv, err := a.CreateConversation(ctx, startRequestFor(t, llm, work))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ResumeGoal(ctx, conv.ID); client.StatusOf(err) != 400 || !strings.Contains(err.Error(), "no_resumable_goal") {
		t.Fatalf("resume without a goal: %v", err)
	}
	if err := a.StartGoal(ctx, conv.ID, " ", 0); client.StatusOf(err) != 400 {
		t.Fatalf("empty objective: %v", err)
	}
	if err := a.StartGoal(ctx, "00000000-0000-0000-0000-000000000002", "x", 0); client.StatusOf(err) != 404 {
		t.Fatalf("unknown conversation: %v", err)
	}
	if err := a.StartGoal(ctx, conv.ID, "Write a poem with a title", 3); err != nil {
		t.Fatal(err)
	}
	info := waitConversation(t, a, conv.ID, func(i agentwire.ConversationInfo) bool { return i.Goal != nil && !i.Goal.Active })
	g := info.Goal
	if g.Status != agentwire.GoalComplete || g.Iteration != 2 || g.MaxIterations != 3 || g.Verdict == nil || !g.Verdict.Complete {
		t.Fatalf("goal: %+v", g)
	}
	var statuses []string
	for ev, err := range a.Events(ctx, conv.ID, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if su, ok := ev.(*events.ConversationStateUpdateEvent); ok && su.Key == "goal" {
			var st agentwire.GoalStatus
			if err := json.Unmarshal(su.Value, &st); err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, st.Status)
		}
	}
	if strings.Join(statuses, ",") != "running,running,complete" {
		t.Fatalf("goal events: %v", statuses)
	}
	if err := a.StopGoal(ctx, conv.ID); err != nil {
		t.Fatalf("stop without a loop: %v", err)
	}
}

func TestAgentNavigateEndToEnd(t *testing.T) {
	ctx := context.Background()
	a, llm, work := newScriptedAgentServer(t, llmtest.Reply{Repeat: true, Respond: func(r *llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: "re: " + r.LastUserText()}
	}})
	conv, err := a.CreateConversation(ctx, startRequestFor(t, llm, work))
	if err != nil {
		t.Fatal(err)
	}
	if conv.LeafEventID != nil {
		t.Fatalf("new conversation's leaf: %v", *conv.LeafEventID)
	}
	turn := func(text string) string {
		t.Helper()
		if err := a.SendMessage(ctx, conv.ID, &agentwire.SendMessageRequest{Role: events.RoleUser,
			Content: []events.Content{events.TextItem(text)}, Run: true}); err != nil {
			t.Fatal(err)
		}
		info := waitConversation(t, a, conv.ID, func(i agentwire.ConversationInfo) bool { return i.ExecutionStatus == agentwire.StatusFinished })
		return *info.LeafEventID
	}
	first := turn("one")
	turn("two")
	info, err := a.Navigate(ctx, conv.ID, &first)
	if err != nil || info.LeafEventID == nil || *info.LeafEventID != first {
		t.Fatalf("navigate: %v %v", err, info.LeafEventID)
	}
	turn("three")
	reqs := llm.Requests()
	var got []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role != "system" {
			got = append(got, m.Text())
		}
	}
	if strings.Join(got, "|") != "one|re: one|three" {
		t.Fatalf("context after navigating: %q", got)
	}
	info, err = a.Navigate(ctx, conv.ID, nil)
	if err != nil || info.LeafEventID != nil {
		t.Fatalf("navigate to the empty tree: %v %v", err, info.LeafEventID)
	}
	batch, err := a.GetConversations(ctx, conv.ID)
	if err != nil || len(batch) != 1 || batch[0].LeafEventID != nil {
		t.Fatalf("batch get after navigating: %v %+v", err, batch)
	}
	missing := "no-such-event"
	if _, err := a.Navigate(ctx, conv.ID, &missing); client.StatusOf(err) != 404 {
		t.Fatalf("unknown event: %v", err)
	}
}
