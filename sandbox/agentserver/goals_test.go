package agentserver_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// isJudge recognises the goal judge's LLM request.
func isJudge(r *llmtest.Request) bool {
	return strings.Contains(r.LastUserText(), "auditing whether a long-running GOAL")
}

func agentReply(text string) llmtest.Reply {
	return llmtest.Reply{Text: text, Repeat: true, Match: func(r *llmtest.Request) bool { return !isJudge(r) }}
}

func judgeReply(verdict string, delay time.Duration) llmtest.Reply {
	return llmtest.Reply{Text: verdict, Delay: delay, Match: isJudge}
}

type goalStatus struct {
	Active        bool   `json:"active"`
	Status        string `json:"status"`
	Iteration     int    `json:"iteration"`
	MaxIterations int    `json:"max_iterations"`
	Objective     string `json:"objective"`
	Verdict       *struct {
		Score    float64 `json:"score"`
		Complete bool    `json:"complete"`
		Missing  string  `json:"missing"`
	} `json:"verdict"`
}

// goal reads the conversation's goal status (nil when absent).
func (e *env) goal(id string) *goalStatus {
	e.t.Helper()
	var info struct {
		Goal *goalStatus `json:"goal"`
	}
	r := e.call("GET", "/api/conversations/"+id, nil)
	if r.status != 200 {
		e.t.Fatalf("get: %d %s", r.status, r.body)
	}
	r.json(e.t, &info)
	return info.Goal
}

// waitGoal polls until the goal has the status and is no longer active.
func (e *env) waitGoal(id, status string) *goalStatus {
	e.t.Helper()
	var g *goalStatus
	if !testwait.Until(20*time.Second, func() bool {
		g = e.goal(id)
		return g != nil && g.Status == status && !g.Active
	}) {
		e.t.Fatalf("goal never ended %s: %+v", status, g)
	}
	return g
}

// goalUpdates lists the statuses of the conversation's "goal" state
// updates, in order.
func (e *env) goalUpdates(id string) []string {
	var out []string
	for _, ev := range e.allEvents(id) {
		if ev["kind"] == "ConversationStateUpdateEvent" && ev["key"] == "goal" {
			v := ev["value"].(map[string]any)
			out = append(out, v["status"].(string))
		}
	}
	return out
}

func TestGoalCompletes(t *testing.T) {
	e := newEnv(t, agentReply("I created hello.txt."),
		judgeReply(`Verdict: {"score": 1.0, "complete": true, "missing": ""}`, 0))
	id := e.create(nil)
	r := e.call("POST", "/api/conversations/"+id+"/goal", map[string]any{"objective": "Create hello.txt", "max_iterations": 3})
	if r.status != 200 || string(r.body) != `{"success":true}` {
		t.Fatalf("start goal: %d %s", r.status, r.body)
	}
	g := e.waitGoal(id, "complete")
	if g.Iteration != 1 || g.MaxIterations != 3 || g.Objective != "Create hello.txt" || g.Verdict == nil || !g.Verdict.Complete || g.Verdict.Score != 1 {
		t.Fatalf("goal: %+v", g)
	}
	if got := strings.Join(e.goalUpdates(id), ","); got != "running,complete" {
		t.Fatalf("goal updates: %s", got)
	}
	// The objective went to the agent as a user message, and the judge saw
	// the agent's work.
	var sawObjective bool
	for _, ev := range e.allEvents(id) {
		if ev["kind"] == "MessageEvent" && ev["source"] == "user" && strings.Contains(string(mustJSON(ev)), "Create hello.txt") {
			sawObjective = true
		}
	}
	if !sawObjective {
		t.Fatal("the objective was not sent as a user message")
	}
	var judged bool
	for _, req := range e.llm.Requests() {
		if isJudge(req) {
			judged = strings.Contains(req.LastUserText(), "I created hello.txt.") && strings.Contains(req.LastUserText(), "Create hello.txt")
		}
	}
	if !judged {
		t.Fatal("the judge was not shown the objective and the transcript")
	}
	// Judge usage is kept under its own usage_id.
	var info struct {
		Stats struct {
			UsageToMetrics map[string]any `json:"usage_to_metrics"`
		} `json:"stats"`
	}
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if info.Stats.UsageToMetrics["goal-judge"] == nil || info.Stats.UsageToMetrics["agent"] == nil {
		t.Fatalf("stats: %v", info.Stats.UsageToMetrics)
	}
	// A finished goal cannot be resumed.
	r = e.call("POST", "/api/conversations/"+id+"/goal/resume", map[string]any{})
	if r.status != 400 || !strings.Contains(string(r.body), "no_resumable_goal") {
		t.Fatalf("resume complete goal: %d %s", r.status, r.body)
	}
}

func TestGoalRunsOutOfIterations(t *testing.T) {
	e := newEnv(t, agentReply("Still working."),
		llmtest.Reply{Text: `{"score": 0.3, "complete": false, "missing": "the tests do not pass"}`, Repeat: true, Match: isJudge})
	id := e.create(nil)
	if r := e.call("POST", "/api/conversations/"+id+"/goal", map[string]any{"objective": "Make the tests pass", "max_iterations": 2}); r.status != 200 {
		t.Fatalf("start goal: %d %s", r.status, r.body)
	}
	g := e.waitGoal(id, "capped")
	if g.Iteration != 2 || g.Verdict == nil || g.Verdict.Complete || g.Verdict.Missing != "the tests do not pass" {
		t.Fatalf("goal: %+v", g)
	}
	if got := strings.Join(e.goalUpdates(id), ","); got != "running,running,capped" {
		t.Fatalf("goal updates: %s", got)
	}
	agentCalls, judgeCalls := 0, 0
	var followup bool
	for _, req := range e.llm.Requests() {
		if isJudge(req) {
			judgeCalls++
			continue
		}
		agentCalls++
		if strings.Contains(req.LastUserText(), "Outstanding: the tests do not pass") {
			followup = true
		}
	}
	if agentCalls != 2 || judgeCalls != 2 || !followup {
		t.Fatalf("agent calls %d, judge calls %d, follow-up sent %v", agentCalls, judgeCalls, followup)
	}
}

func TestGoalStopAndResume(t *testing.T) {
	e := newEnv(t, agentReply("Working on it."), judgeReply(`{"score": 0.1, "complete": false, "missing": "x"}`, time.Minute))
	id := e.create(nil)
	if r := e.call("POST", "/api/conversations/"+id+"/goal", map[string]any{"objective": "Ship it"}); r.status != 200 {
		t.Fatalf("start goal: %d %s", r.status, r.body)
	}
	// The judge of round 1 hangs: the loop is in progress.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.llm.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if g := e.goal(id); g == nil || !g.Active || g.Status != "running" || g.MaxIterations != 10 {
		t.Fatalf("goal while running: %+v", g)
	}
	// A second goal, a run and navigation are refused meanwhile.
	if r := e.call("POST", "/api/conversations/"+id+"/goal", map[string]any{"objective": "Other"}); r.status != 409 {
		t.Fatalf("second goal: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/conversations/"+id+"/navigate", map[string]any{"event_id": nil}); r.status != 409 {
		t.Fatalf("navigate during a goal: %d %s", r.status, r.body)
	}
	r := e.call("POST", "/api/conversations/"+id+"/goal/stop", map[string]any{})
	if r.status != 200 || string(r.body) != `{"success":true}` {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	// Stop returns once the loop has ended.
	if g := e.goal(id); g == nil || g.Active || g.Status != "interrupted" || g.Iteration != 0 {
		t.Fatalf("goal after stop: %+v", g)
	}
	// Stopping again (no loop) is a success.
	if r := e.call("POST", "/api/conversations/"+id+"/goal/stop", map[string]any{}); r.status != 200 {
		t.Fatalf("second stop: %d %s", r.status, r.body)
	}
	before := len(e.llm.Requests())

	// Resume continues the same goal from the round it reached.
	e.llm.Add(judgeReply(`{"score": 1, "complete": true, "missing": ""}`, 0))
	if r := e.call("POST", "/api/conversations/"+id+"/goal/resume", map[string]any{}); r.status != 200 {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	g := e.waitGoal(id, "complete")
	if g.Iteration != 1 || g.Objective != "Ship it" {
		t.Fatalf("goal after resume: %+v", g)
	}
	var resumed bool
	for _, req := range e.llm.Requests()[before:] {
		if !isJudge(req) && strings.Contains(req.LastUserText(), "Resuming a goal") {
			resumed = true
		}
	}
	if !resumed {
		t.Fatal("no resume message reached the agent")
	}
	if got := strings.Join(e.goalUpdates(id), ","); got != "running,interrupted,running,complete" {
		t.Fatalf("goal updates: %s", got)
	}
}

func TestGoalInterruptedByUserMessageAndRestart(t *testing.T) {
	e := buildEnv(t, envOptions{}, agentReply("On it."), judgeReply(`{"score": 0, "complete": false}`, time.Minute))
	id := e.create(nil)
	if r := e.call("POST", "/api/conversations/"+id+"/goal", map[string]any{"objective": "Do A"}); r.status != 200 {
		t.Fatalf("start goal: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.llm.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// A user message supersedes the goal loop.
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("never mind", false)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	if g := e.goal(id); g == nil || g.Active || g.Status != "interrupted" {
		t.Fatalf("goal after a user message: %+v", g)
	}
	// A goal active when the server stops comes back interrupted (and
	// resumable).
	e.llm.Add(judgeReply(`{"score": 0, "complete": false}`, time.Minute))
	if r := e.call("POST", "/api/conversations/"+id+"/goal/resume", map[string]any{}); r.status != 200 {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if err := e.llm.WaitRequests(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if g := e.goal(id); g == nil || !g.Active {
		t.Fatalf("goal after resume: %+v", g)
	}
	e.restart()
	if g := e.goal(id); g == nil || g.Active || g.Status != "interrupted" || g.Objective != "Do A" {
		t.Fatalf("goal after restart: %+v", g)
	}
}

func TestGoalBadRequests(t *testing.T) {
	e := newEnv(t, agentReply("ok"))
	id := e.create(nil)
	missing := "/api/conversations/00000000-0000-0000-0000-000000000001"
	cases := []struct {
		name, path string
		body       any
		status     int
		detail     string
	}{
		{"empty objective", "/api/conversations/" + id + "/goal", map[string]any{"objective": "  "}, 400, "Goal objective must not be empty."},
		{"no objective", "/api/conversations/" + id + "/goal", map[string]any{}, 422, "objective"},
		{"zero iterations", "/api/conversations/" + id + "/goal", map[string]any{"objective": "x", "max_iterations": 0}, 422, "max_iterations"},
		{"objective not a string", "/api/conversations/" + id + "/goal", map[string]any{"objective": 5}, 422, "objective"},
		{"nothing to resume", "/api/conversations/" + id + "/goal/resume", map[string]any{}, 400, "no_resumable_goal"},
		{"stop without a loop", "/api/conversations/" + id + "/goal/stop", map[string]any{}, 200, "success"},
		{"goal of unknown conversation", missing + "/goal", map[string]any{"objective": "x"}, 404, "Conversation not found"},
		{"resume of unknown conversation", missing + "/goal/resume", map[string]any{}, 404, "Conversation not found"},
		{"stop of unknown conversation", missing + "/goal/stop", map[string]any{}, 404, "Conversation not found"},
		{"bad conversation id", "/api/conversations/nope/goal", map[string]any{"objective": "x"}, 422, "conversation_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", tc.path, tc.body)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.detail) {
				t.Fatalf("%d %s, want %d with %q", r.status, r.body, tc.status, tc.detail)
			}
			if tc.status >= 400 {
				var body struct {
					Detail json.RawMessage `json:"detail"`
				}
				r.json(t, &body)
				if len(body.Detail) == 0 {
					t.Fatalf("no detail: %s", r.body)
				}
			}
		})
	}
	if g := e.goal(id); g != nil {
		t.Fatalf("a refused goal left a status: %+v", g)
	}
}

// TestGoalMaxIterationsIsBounded: a goal's max_iterations is a whole
// number from 1 to agentwire.MaxGoalIterations; anything else is a 422 at
// body.max_iterations and starts nothing.
func TestGoalMaxIterationsIsBounded(t *testing.T) {
	e := newEnv(t, agentReply("ok"))
	max := strconv.Itoa(agentwire.MaxGoalIterations)
	over := strconv.Itoa(agentwire.MaxGoalIterations + 1)
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"zero", "0", false},
		{"negative", "-3", false},
		{"1e12", "1e12", false},
		{"not an integer", "2.5", false},
		{"a string", `"10"`, false},
		{"the maximum", max, true},
		{"one over the maximum", over, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := e.create(nil)
			r := e.call("POST", "/api/conversations/"+id+"/goal", `{"objective":"x","max_iterations":`+tc.value+`}`)
			if !tc.ok {
				if r.status != 422 {
					t.Fatalf("max_iterations %s: %d %s, want 422", tc.value, r.status, r.body)
				}
				assert422(t, r, "body.max_iterations")
				if g := e.goal(id); g != nil {
					t.Fatalf("a refused goal left a status: %+v", g)
				}
				return
			}
			if r.status != 200 {
				t.Fatalf("max_iterations %s: %d %s, want 200", tc.value, r.status, r.body)
			}
			if g := e.goal(id); g == nil || g.MaxIterations != agentwire.MaxGoalIterations {
				t.Fatalf("goal %+v, want max_iterations %d", g, agentwire.MaxGoalIterations)
			}
			if r := e.call("POST", "/api/conversations/"+id+"/goal/stop", `{}`); r.status != 200 {
				t.Fatalf("stop: %d %s", r.status, r.body)
			}
			e.waitGoal(id, "interrupted")
		})
	}
}
