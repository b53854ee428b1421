package agentserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

func TestServerDetails(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/alive", "/health"} {
		r := e.do("GET", path, nil, "")
		if r.status != 200 || string(r.body) != `{"status":"ok"}` {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	r := e.do("GET", "/ready", nil, "")
	if r.status != 200 || string(r.body) != `{"status":"ready"}` {
		t.Errorf("/ready: %d %s", r.status, r.body)
	}
	var info map[string]any
	r = e.do("GET", "/server_info", nil, "")
	r.json(t, &info)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(info["version"].(string)) {
		t.Fatalf("version is not semver: %v", info["version"])
	}
	if tools := info["usable_tools"].([]any); len(tools) < 4 {
		t.Fatalf("usable_tools %v", tools)
	}
	r = e.call("GET", "/api/tools/", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"file_editor"`) {
		t.Fatalf("tools: %d %s", r.status, r.body)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, method, path, key string
		want                    int
	}{
		{"no key", "GET", "/api/conversations/search", "", 401},
		{"wrong key", "GET", "/api/conversations/search", "nope", 401},
		{"prefix of key", "GET", "/api/conversations/search", testKey[:5], 401},
		{"right key", "GET", "/api/conversations/search", testKey, 200},
		{"no key on create", "POST", "/api/conversations", "", 401},
		{"no key on events", "GET", "/api/conversations/" + strings.Repeat("a", 32) + "/events/search", "", 401},
		{"health is open", "GET", "/health", "", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, nil, tc.key)
			if r.status != tc.want {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			if tc.want == 401 && string(r.body) != `{"detail":"Unauthorized"}` {
				t.Fatalf("401 body %s", r.body)
			}
		})
	}
}

func TestCreateIsIdempotentAndValidated(t *testing.T) {
	e := newEnv(t)
	id := "4b1e2f3a-0000-4000-8000-00000000abcd"
	body := map[string]any{"agent": e.agent("file_editor"), "workspace": map[string]any{"working_dir": e.work, "type": "local"}, "conversation_id": id}
	r := e.call("POST", "/api/conversations", body)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var info map[string]any
	r.json(t, &info)
	if info["id"] != id || info["execution_status"] != "idle" {
		t.Fatalf("info %v", info)
	}
	if strings.Contains(string(r.body), "sk-secret-llm-key") || !strings.Contains(string(r.body), "**********") {
		t.Fatal("the LLM api key is not redacted")
	}
	// Same id, hex form: re-attach with 200.
	body["conversation_id"] = strings.ReplaceAll(id, "-", "")
	r = e.call("POST", "/api/conversations", body)
	if r.status != 200 {
		t.Fatalf("idempotent create: %d %s", r.status, r.body)
	}
	r = e.call("GET", "/api/conversations/"+strings.ReplaceAll(id, "-", ""), nil)
	if r.status != 200 {
		t.Fatalf("get by hex id: %d", r.status)
	}

	bad := []struct {
		name string
		body string
		loc  string
	}{
		{"unknown field", `{"agent":{"llm":{"model":"m"}},"workspace":{"working_dir":"/tmp"},"colour":"red"}`, "body.colour"},
		{"unknown nested field", `{"agent":{"llm":{"model":"m","temprature":1}},"workspace":{"working_dir":"/tmp"}}`, "body.agent.llm.temprature"},
		{"missing workspace", `{"agent":{"llm":{"model":"m"}}}`, "body.workspace"},
		{"relative working dir", `{"agent":{"llm":{"model":"m"}},"workspace":{"working_dir":"rel"}}`, "body.workspace.working_dir"},
		{"missing agent", `{"workspace":{"working_dir":"/tmp"}}`, "body.agent"},
		{"unknown tool", `{"agent":{"llm":{"model":"m"},"tools":[{"name":"hammer"}]},"workspace":{"working_dir":"/tmp"}}`, "body.agent.tools[0].name"},
		{"bad conversation id", `{"agent":{"llm":{"model":"m"}},"workspace":{"working_dir":"/tmp"},"conversation_id":"xyz"}`, "body.conversation_id"},
		{"max_iterations 0", `{"agent":{"llm":{"model":"m"}},"workspace":{"working_dir":"/tmp"},"max_iterations":0}`, "body.max_iterations"},
		{"bad policy", `{"agent":{"llm":{"model":"m"}},"workspace":{"working_dir":"/tmp"},"confirmation_policy":{"kind":"Sometimes"}}`, "body.confirmation_policy.kind"},
		{"bad initial message role", `{"agent":{"llm":{"model":"m"}},"workspace":{"working_dir":"/tmp"},"initial_message":{"role":"assistant","content":[{"type":"text","text":"x"}]}}`, "body.initial_message.role"},
		{"not json", `{"agent":`, "body[9]"},
		{"empty body", ``, "body"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/api/conversations", tc.body)
			if r.status != 422 {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			assert422(t, r, tc.loc)
		})
	}
}

// assert422 checks the HTTPValidationError body and its first location.
func assert422(t *testing.T, r resp, loc string) {
	t.Helper()
	var body struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
			Type string `json:"type"`
		} `json:"detail"`
	}
	r.json(t, &body)
	if len(body.Detail) == 0 || body.Detail[0].Msg == "" || body.Detail[0].Type == "" {
		t.Fatalf("422 body lacks detail: %s", r.body)
	}
	var parts []string
	for _, p := range body.Detail[0].Loc {
		switch p := p.(type) {
		case float64:
			parts[len(parts)-1] += "[" + strings.TrimSuffix(strings.TrimSuffix(json.Number(jsonNum(p)).String(), ".0"), ".") + "]"
		default:
			parts = append(parts, p.(string))
		}
	}
	if got := strings.Join(parts, "."); got != loc {
		t.Fatalf("loc %s, want %s (%s)", got, loc, r.body)
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestInitialMessageRunsToFinish(t *testing.T) {
	e := newEnv(t,
		llmtest.Reply{Text: "Let me think.", ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "think", Arguments: map[string]any{"thought": "plan", "summary": "plan the work"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: "finish", Arguments: map[string]any{"message": "All done."}}}},
	)
	id := e.create(map[string]any{"initial_message": userMessage("Do the thing", false)}, "file_editor")
	info := e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertSequence(t, evs,
		"SystemPromptEvent", "MessageEvent:user",
		"ConversationStateUpdateEvent:last_user_message_id", "ConversationStateUpdateEvent:execution_status=running",
		"ConversationStateUpdateEvent:stats", "ActionEvent:think", "ObservationEvent:ThinkObservation",
		"ConversationStateUpdateEvent:stats", "ActionEvent:finish", "ObservationEvent:FinishObservation",
		"ConversationStateUpdateEvent:execution_status=finished")
	action, obs := evs[5], evs[6]
	if obs["action_id"] != action["id"] || obs["tool_call_id"] != "c1" || action["tool_call_id"] != "c1" {
		t.Fatalf("observation does not link to its action: %v / %v", action, obs)
	}
	if action["summary"] != "plan the work" || action["thought"].([]any)[0].(map[string]any)["text"] != "Let me think." {
		t.Fatalf("summary/thought not carried: %v", action)
	}
	if action["action"].(map[string]any)["kind"] != "ThinkAction" {
		t.Fatalf("action %v", action["action"])
	}
	sys := evs[0]
	var titles []string
	for _, tool := range sys["tools"].([]any) {
		titles = append(titles, tool.(map[string]any)["title"].(string))
	}
	if strings.Join(titles, ",") != "file_editor,finish,think" {
		t.Fatalf("system prompt tools %v", titles)
	}
	if info["last_user_message_id"] != evs[1]["id"] {
		t.Fatalf("last_user_message_id %v", info["last_user_message_id"])
	}
	stats := info["stats"].(map[string]any)["usage_to_metrics"].(map[string]any)["agent"].(map[string]any)
	if stats["accumulated_token_usage"].(map[string]any)["prompt_tokens"].(float64) != 200 {
		t.Fatalf("stats %v", stats)
	}
	// The LLM saw the tool result right after its call, and the tools.
	reqs := e.llm.Requests()
	second := reqs[1].Messages
	if len(second) != 4 || second[2].Role != "assistant" || second[3].Role != "tool" || second[3].Text() != "Your thought has been logged." {
		t.Fatalf("second LLM request messages %+v", second)
	}
	if names := reqs[0].ToolNames(); strings.Join(names, ",") != "file_editor,finish,think" {
		t.Fatalf("tools offered %v", names)
	}
	if !strings.Contains(string(reqs[0].Body), `"security_risk"`) || !strings.Contains(string(reqs[0].Body), `"summary"`) {
		t.Fatal("security_risk/summary not offered in tool schemas")
	}
	for _, tool := range reqs[0].Tools {
		var params struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tool.Function.Parameters, &params); err != nil {
			t.Fatal(err)
		}
		risk, ok := params.Properties["security_risk"]
		if tool.Function.Name == "file_editor" && (!ok || strings.Join(risk.Enum, "|") != "LOW|MEDIUM|HIGH|UNKNOWN") {
			t.Fatalf("file_editor security_risk enum %v", risk.Enum)
		}
	}
}

func TestFileEditorCreatesFile(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.work, "hello.txt")
	e.llm.Add(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{"command": "create", "path": path, "file_text": "hello\n"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{"command": "str_replace", "path": path, "old_str": "hello", "new_str": "hello, world"}}}},
		llmtest.Reply{Text: "Created it."},
	)
	id := e.create(map[string]any{"initial_message": userMessage("create hello.txt", true)}, "file_editor")
	e.waitStatus(id, "finished")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "hello, world\n" {
		t.Fatalf("file: %q %v", b, err)
	}
	evs := e.allEvents(id)
	last := evs[len(evs)-2]
	if last["kind"] != "MessageEvent" || last["source"] != "agent" {
		t.Fatalf("a text reply should end with an agent message: %v", signature(evs))
	}
	fe := toolStep("file_editor", "FileEditorObservation")
	assertSequence(t, evs, seq(concat(fe, fe,
		[]string{"ConversationStateUpdateEvent:stats", "MessageEvent:agent", "ConversationStateUpdateEvent:execution_status=finished"})...)...)
	assertLinked(t, evs, true)
}

func TestBadToolCallsContinue(t *testing.T) {
	e := newEnv(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "a", Name: "no_such_tool", Arguments: map[string]any{}},
			{ID: "b", Name: "think", Arguments: map[string]any{"thoughts": "typo in the argument name"}},
			{ID: "c", Name: "think", RawArguments: "{not json"},
			{ID: "d", Name: "think", Arguments: map[string]any{"thought": "ok"}},
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "e", Name: "finish", Arguments: map[string]any{"message": "done"}}}},
	)
	id := e.create(map[string]any{"initial_message": userMessage("go", true)})
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertSequence(t, evs,
		"SystemPromptEvent", "MessageEvent:user", "ConversationStateUpdateEvent:last_user_message_id",
		"ConversationStateUpdateEvent:execution_status=running", "ConversationStateUpdateEvent:stats",
		"ActionEvent:no_such_tool", "ActionEvent:think", "ActionEvent:think", "ActionEvent:think",
		"AgentErrorEvent", "AgentErrorEvent", "AgentErrorEvent", "ObservationEvent:ThinkObservation",
		"ConversationStateUpdateEvent:stats", "ActionEvent:finish", "ObservationEvent:FinishObservation",
		"ConversationStateUpdateEvent:execution_status=finished")
	respID := evs[5]["llm_response_id"]
	for i := 5; i <= 8; i++ {
		if evs[i]["llm_response_id"] != respID {
			t.Fatal("parallel calls must share llm_response_id")
		}
		if (evs[i]["action"] == nil) != (i < 8) {
			t.Fatalf("event %d action %v", i, evs[i]["action"])
		}
		if i > 5 && len(evs[i]["thought"].([]any)) != 0 {
			t.Fatal("only the first action carries the thought")
		}
	}
	for i, want := range []string{"Tool 'no_such_tool' not found", "thoughts", "JSON object"} {
		ae := evs[9+i]
		if ae["tool_call_id"] != []string{"a", "b", "c"}[i] || !strings.Contains(ae["error"].(string), want) {
			t.Fatalf("agent error %d: %v", i, ae)
		}
	}
}

func TestSearchParameters(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Text: "Hello THERE, general."})
	id := e.create(map[string]any{"initial_message": userMessage("Say hello", true)})
	e.waitStatus(id, "finished")
	all := e.allEvents(id)
	base := "/api/conversations/" + id + "/events/search?"
	count := func(q string) int {
		t.Helper()
		r := e.call("GET", "/api/conversations/"+id+"/events/count?"+q, nil)
		if r.status != 200 {
			t.Fatalf("count %s: %d %s", q, r.status, r.body)
		}
		var n int
		r.json(t, &n)
		return n
	}
	search := func(q string) []map[string]any {
		t.Helper()
		r := e.call("GET", base+q, nil)
		if r.status != 200 {
			t.Fatalf("search %s: %d %s", q, r.status, r.body)
		}
		var p struct {
			Items []map[string]any `json:"items"`
		}
		r.json(t, &p)
		return p.Items
	}
	mid := all[3]["timestamp"].(string)
	cases := []struct {
		q    string
		want int
	}{
		{"", len(all)},
		{"kind=MessageEvent", 2},
		{"kind=openhands.sdk.event.llm_convertible.message.MessageEvent", 2},
		{"source=agent", 2}, // system prompt + agent message
		{"source=user", 1},
		{"body=hello", 2},
		{"body=general", 1},
		{"body=GENERAL", 1},
		{"timestamp__gte=" + url.QueryEscape(mid), len(all) - 3},
		{"timestamp__lt=" + url.QueryEscape(mid), 3},
		{"timestamp__gte=2000-01-01T00:00:00", len(all)},
		{"timestamp__lt=2000-01-01T00:00:00Z", 0},
		{"kind=MessageEvent&source=agent", 1},
	}
	for _, tc := range cases {
		if got := len(search(tc.q)); got != tc.want {
			t.Errorf("search %q: %d items, want %d", tc.q, got, tc.want)
		}
		if got := count(tc.q); got != tc.want {
			t.Errorf("count %q: %d, want %d", tc.q, got, tc.want)
		}
	}
	desc := search("sort_order=TIMESTAMP_DESC")
	if desc[0]["id"] != all[len(all)-1]["id"] {
		t.Error("TIMESTAMP_DESC does not start with the newest event")
	}
	if got := search("limit=2"); len(got) != 2 {
		t.Errorf("limit=2 gave %d", len(got))
	}

	invalid := []struct{ q, loc string }{
		{"limit=0", "query.limit"}, {"limit=101", "query.limit"}, {"limit=-1", "query.limit"}, {"limit=abc", "query.limit"},
		{"limit=1.5", "query.limit"}, {"sort_order=NEWEST", "query.sort_order"}, {"sort_order=timestamp", "query.sort_order"},
		{"source=robot", "query.source"}, {"kind=Nope", "query.kind"}, {"kind=openhands.sdk.event.Nope", "query.kind"},
		{"timestamp__gte=yesterday", "query.timestamp__gte"}, {"timestamp__lt=2026-13-01", "query.timestamp__lt"},
		{"page_id=not-an-event", "query.page_id"},
	}
	for _, tc := range invalid {
		r := e.call("GET", base+tc.q, nil)
		if r.status != 422 {
			t.Errorf("%s: got %d %s", tc.q, r.status, r.body)
			continue
		}
		assert422(t, r, tc.loc)
	}
	for _, tc := range invalid[:12] {
		if strings.HasPrefix(tc.q, "limit") || strings.HasPrefix(tc.q, "sort_order") || strings.HasPrefix(tc.q, "page_id") {
			continue
		}
		r := e.call("GET", "/api/conversations/"+id+"/events/count?"+tc.q, nil)
		if r.status != 422 {
			t.Errorf("count %s: got %d", tc.q, r.status)
		}
	}

	// Unknown and malformed conversation ids.
	r := e.call("GET", "/api/conversations/"+strings.Repeat("0", 32)+"/events/search", nil)
	if r.status != 404 || !strings.Contains(string(r.body), "Conversation not found") {
		t.Fatalf("unknown conversation: %d %s", r.status, r.body)
	}
	r = e.call("GET", "/api/conversations/not-a-uuid/events/search", nil)
	if r.status != 422 {
		t.Fatalf("malformed id: %d %s", r.status, r.body)
	}
	assert422(t, r, "path.conversation_id")

	// Single event get.
	r = e.call("GET", "/api/conversations/"+id+"/events/"+all[1]["id"].(string), nil)
	if r.status != 200 || !strings.Contains(string(r.body), "Say hello") {
		t.Fatalf("get event: %d %s", r.status, r.body)
	}
	if r := e.call("GET", "/api/conversations/"+id+"/events/nope", nil); r.status != 404 {
		t.Fatalf("missing event: %d", r.status)
	}
}

func TestRunConflictAndPause(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Text: "slow", Delay: 500 * time.Millisecond})
	id := e.create(nil)
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("hi", false)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/conversations/"+id+"/run", nil); r.status != 200 {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	r := e.call("POST", "/api/conversations/"+id+"/run", "{}")
	if r.status != 409 || !strings.Contains(string(r.body), "already running") {
		t.Fatalf("second run: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/conversations/"+id+"/pause", nil); r.status != 200 {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	e.waitStatus(id, "paused")
	// The LLM call in flight completes; its message is kept; status stays paused? The step
	// finished the task, so finished is the honest status.
	testwait.Until(5*time.Second, func() bool {
		var info map[string]any
		e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
		return info["execution_status"] != "paused"
	})
	evs := e.allEvents(id)
	found := false
	for _, ev := range evs {
		if ev["kind"] == "PauseEvent" && ev["source"] == "user" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no PauseEvent: %v", signature(evs))
	}
	for _, path := range []string{"/events", "/run", "/pause"} {
		r := e.call("POST", "/api/conversations/"+strings.Repeat("1", 32)+path, userMessage("x", false))
		if r.status != 404 {
			t.Errorf("%s on unknown conversation: %d", path, r.status)
		}
	}
	for _, body := range []string{`{"role":"user","content":[]}`, `{"role":"user","content":[{"type":"text","text":"x"}],"extra":1}`, `{"content":[{"type":"video"}]}`} {
		if r := e.call("POST", "/api/conversations/"+id+"/events", body); r.status != 422 {
			t.Errorf("bad message %s: %d %s", body, r.status, r.body)
		}
	}
}

func TestLLMFailureIsConversationError(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Status: 401, Error: "invalid api key"})
	id := e.create(map[string]any{"initial_message": userMessage("hi", true)})
	e.waitStatus(id, "error")
	evs := e.allEvents(id)
	var errEv map[string]any
	for _, ev := range evs {
		if ev["kind"] == "ConversationErrorEvent" {
			errEv = ev
		}
	}
	if errEv == nil || errEv["code"] != "LLMAuthenticationError" || !strings.Contains(errEv["detail"].(string), "invalid api key") {
		t.Fatalf("conversation error %v in %v", errEv, signature(evs))
	}
}

func TestMaxIterations(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Repeat: true, ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "hmm"}}}})
	id := e.create(map[string]any{"initial_message": userMessage("loop", true), "max_iterations": 3})
	e.waitStatus(id, "error")
	if n := len(e.llm.Requests()); n != 3 {
		t.Fatalf("%d LLM calls, want 3", n)
	}
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ConversationErrorEvent", nil)
	if !strings.Contains(string(r.body), `"code":"MaxIterationsReached"`) {
		t.Fatalf("no MaxIterationsReached: %s", r.body)
	}
	evs := e.allEvents(id)
	think := toolStep("think", "ThinkObservation")
	assertSequence(t, evs, seq(concat(think, think, think,
		[]string{"ConversationErrorEvent", "ConversationStateUpdateEvent:execution_status=error"})...)...)
	assertLinked(t, evs, true)
}

func TestMessageDuringRunIsNotLost(t *testing.T) {
	e := newEnv(t,
		llmtest.Reply{Text: "first answer", Delay: 300 * time.Millisecond},
		llmtest.Reply{MatchText: "second", Text: "second answer"},
	)
	id := e.create(map[string]any{"initial_message": userMessage("first", true)})
	if err := e.llm.WaitRequests(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("second question", true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	testwait.Until(10*time.Second, func() bool { return len(e.llm.Requests()) >= 2 })
	e.waitStatus(id, "finished")
	r := e.call("GET", "/api/conversations/"+id+"/events/search?body=second%20answer", nil)
	if !strings.Contains(string(r.body), "second answer") {
		t.Fatalf("the message sent during the run was not processed: %s", r.body)
	}
}

func TestRestartKeepsConversations(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Text: "persisted reply"})
	id := e.create(map[string]any{"initial_message": userMessage("remember me", true)})
	e.waitStatus(id, "finished")
	before := e.allEvents(id)
	e.restart()
	info := e.waitStatus(id, "finished")
	after := e.allEvents(id)
	if len(after) != len(before) {
		t.Fatalf("%d events after restart, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i]["id"] != after[i]["id"] {
			t.Fatal("events changed across restart")
		}
	}
	if info["last_user_message_id"] != before[1]["id"] {
		t.Fatal("state lost across restart")
	}
}

func TestConversationSearchAndBatch(t *testing.T) {
	e := newEnv(t)
	a := e.create(nil)
	b := e.create(nil)
	r := e.call("GET", "/api/conversations?ids="+a+"&ids="+strings.Repeat("2", 32)+"&ids="+b, nil)
	var got []map[string]any
	r.json(t, &got)
	if len(got) != 3 || got[0]["id"] != a || got[1] != nil || got[2]["id"] != b {
		t.Fatalf("batch get: %s", r.body)
	}
	r = e.call("GET", "/api/conversations/search?limit=1", nil)
	var page struct {
		Items      []map[string]any `json:"items"`
		NextPageID *string          `json:"next_page_id"`
	}
	r.json(t, &page)
	if len(page.Items) != 1 || page.NextPageID == nil {
		t.Fatalf("search page: %s", r.body)
	}
	r = e.call("GET", "/api/conversations/search?limit=1&page_id="+*page.NextPageID, nil)
	var page2 struct {
		Items []map[string]any `json:"items"`
	}
	r.json(t, &page2)
	if len(page2.Items) != 1 || page2.Items[0]["id"] == page.Items[0]["id"] {
		t.Fatalf("second page: %s", r.body)
	}
	r = e.call("GET", "/api/conversations/count?status=idle", nil)
	if string(r.body) != "2" {
		t.Fatalf("count: %s", r.body)
	}
	if r := e.call("GET", "/api/conversations/count?status=sleeping", nil); r.status != 422 {
		t.Fatalf("bad status filter: %d", r.status)
	}
	if r := e.call("GET", "/api/conversations?ids=zzz", nil); r.status != 422 {
		t.Fatalf("bad id in batch: %d", r.status)
	}
}

func TestTerminalSessionPersists(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.work, "sub"), 0o755)
	e.llm.Add(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "cd sub && export ACS_FOO=bar", "security_risk": "LOW"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "pwd; echo foo=$ACS_FOO; echo made > made.txt"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "exit_status_probe() { return 3; }; exit_status_probe"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "ok"}}}},
	)
	id := e.create(map[string]any{"initial_message": userMessage("shell", true)}, "terminal")
	e.waitStatus(id, "finished")
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ObservationEvent", nil)
	var page struct {
		Items []struct {
			Observation struct {
				Kind     string `json:"kind"`
				ExitCode *int   `json:"exit_code"`
				Content  []struct {
					Text string `json:"text"`
				} `json:"content"`
				Metadata struct {
					WorkingDir string `json:"working_dir"`
				} `json:"metadata"`
			} `json:"observation"`
		} `json:"items"`
	}
	r.json(t, &page)
	if len(page.Items) != 4 {
		t.Fatalf("observations: %s", r.body)
	}
	second := page.Items[1].Observation
	if !strings.Contains(second.Content[0].Text, filepath.Join(e.work, "sub")) || !strings.Contains(second.Content[0].Text, "foo=bar") {
		t.Fatalf("cwd/env did not persist: %q", second.Content[0].Text)
	}
	if second.Metadata.WorkingDir != filepath.Join(e.work, "sub") || *second.ExitCode != 0 {
		t.Fatalf("metadata %+v", second)
	}
	if third := page.Items[2].Observation; third.ExitCode == nil || *third.ExitCode != 3 {
		t.Fatalf("exit code not reported: %+v", third)
	}
	if b, err := os.ReadFile(filepath.Join(e.work, "sub", "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("file from the terminal: %q %v", b, err)
	}
}

// A conversation without a state snapshot (a create writes none, and a
// crash can lose the first, which is not synced) comes back in the state
// it was created with.
func TestRestartWithoutTheFirstStateSnapshot(t *testing.T) {
	e := newEnv(t)
	id := e.create(map[string]any{"confirmation_policy": map[string]any{"kind": "AlwaysConfirm"}})
	e.stop()
	if err := os.Remove(filepath.Join(e.cfg.ConversationsDir, strings.ReplaceAll(id, "-", ""), "state.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	e.start()
	var info map[string]any
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	policy, _ := info["confirmation_policy"].(map[string]any)
	if info["execution_status"] != "idle" || policy["kind"] != "AlwaysConfirm" {
		t.Fatalf("after a restart without the state snapshot: %v", info)
	}
}

// A create the machine stopped in the middle of was never acknowledged:
// the restarted server skips it, and creating that conversation again
// works, whatever the create left: its meta file written but not yet
// synced (so empty after the restart), or not yet renamed into place (a
// half-written new meta file beside a log holding bytes of nothing), or
// only the empty files a spare directory comes with (agent.Prepare),
// which the new create uses. A conversation that was created is not
// created twice.
func TestCreateAfterAnUnfinishedCreate(t *testing.T) {
	write := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		leftover func(t *testing.T, dir string)
	}{
		{"empty meta file", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "meta.json"), "") }},
		{"half-written new meta file and a torn log", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "meta.json"))
			write(t, filepath.Join(dir, ".meta.json.new"), `{"id":"`)
			write(t, filepath.Join(dir, "events.log"), "torn")
		}},
		{"only the prepared files", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "meta.json"))
			write(t, filepath.Join(dir, ".meta.json.new"), "")
			write(t, filepath.Join(dir, "events.log"), "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := e.create(nil)
			e.stop()
			tc.leftover(t, filepath.Join(e.cfg.ConversationsDir, strings.ReplaceAll(id, "-", "")))
			e.start()
			if r := e.call("GET", "/api/conversations/"+id, nil); r.status != 404 {
				t.Fatalf("an unfinished create was loaded: %d %s", r.status, r.body)
			}
			if got := e.create(map[string]any{"conversation_id": id}); got != id {
				t.Fatalf("created %s, want %s", got, id)
			}
			e.stop()
			e.start()
			if r := e.call("GET", "/api/conversations/"+id, nil); r.status != 200 {
				t.Fatalf("the conversation created again did not survive a restart: %d %s", r.status, r.body)
			}
			if r := e.call("POST", "/api/conversations", map[string]any{"agent": e.agent(), "conversation_id": id,
				"workspace": map[string]any{"working_dir": e.work}}); r.status != 200 {
				t.Fatalf("creating an existing conversation: %d %s, want 200 (it exists)", r.status, r.body)
			}
		})
	}
}
