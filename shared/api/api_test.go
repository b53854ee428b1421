package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

func TestMain(m *testing.M) { testbin.Main(m) }

const (
	aliceKey = "alice-key-0123456789"
	bobKey   = "bob-key-0123456789ab"
)

type env struct {
	t      *testing.T
	store  *boltstore.Store
	srv    *httptest.Server
	llm    *llmtest.Server
	worker context.CancelFunc
}

// newEnv starts the V1 API with the embedded adapters; withWorker also runs
// the start-flow worker with process sandboxes.
func newEnv(t *testing.T, withWorker bool) *env {
	t.Helper()
	store := openStore(t)
	queue := openQueue(t)
	binary := "/nonexistent/acs"
	if withWorker {
		binary = testbin.ACS(t)
	}
	rt := openRuntime(t, binary)
	ctx := context.Background()
	for _, u := range []struct{ id, key string }{{"alice", aliceKey}, {"bob", bobKey}} {
		if err := store.CreateUser(ctx, acs.User{ID: u.id, Name: u.id}); err != nil {
			t.Fatal(err)
		}
		if err := store.CreateAPIKey(ctx, acs.APIKey{ID: u.id + "-k", UserID: u.id, Hash: acs.HashKey(u.key)}); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, store: store, llm: llmtest.New()}
	t.Cleanup(e.llm.Close)
	cfg := llm.DefaultConfig()
	cfg.Model, cfg.BaseURL, cfg.NumRetries = "test", &e.llm.URL, 0
	flow := startflow.Config{LLM: cfg, StartupTimeout: 30 * time.Second, Sandboxes: sandboxes.Config{PollInterval: 50 * time.Millisecond,
		Specs: []acs.SandboxSpec{{ID: "acs-local"}, {ID: "second"}}}}
	v1 := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue, Runtime: rt,
		Flow: flow, Sealer: sealbox.FromPassphrase("api test passphrase")})})
	e.srv = httptest.NewServer(v1.Handler())
	t.Cleanup(e.srv.Close)
	flow.Sandboxes.WebhookBaseURL = e.srv.URL + "/api/v1/webhooks"
	if withWorker {
		// Wired as acs serve wires them: the worker places starts as they
		// are submitted when that needs no wait.
		w := startflow.NewWorker(store, queue, rt, sealbox.FromPassphrase("api test passphrase"), flow)
		v1 = api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue, Runtime: rt,
			Flow: flow, Sealer: sealbox.FromPassphrase("api test passphrase"), Placer: w})})
		e.srv.Config.Handler = v1.Handler()
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { w.Run(wctx, 2); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return e
}

type resp struct {
	status int
	body   []byte
	header http.Header
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("not JSON (%d): %s", r.status, r.body)
	}
}

func (e *env) do(method, path, body string, headers map[string]string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, b, res.Header}
}

func (e *env) as(key, method, path, body string) resp {
	return e.do(method, path, body, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"})
}

func assert422(t *testing.T, r resp, loc string) {
	t.Helper()
	if r.status != 422 {
		t.Fatalf("want 422 at %s, got %d %s", loc, r.status, r.body)
	}
	var body events.HTTPValidationError
	r.json(t, &body)
	if len(body.Detail) == 0 {
		t.Fatalf("no detail: %s", r.body)
	}
	for i, p := range body.Detail[0].Loc {
		if f, ok := p.(float64); ok {
			body.Detail[0].Loc[i] = int(f)
		}
	}
	if got := body.Detail[0].Path(); got != loc {
		t.Fatalf("loc %s, want %s: %s", got, loc, r.body)
	}
	if body.Detail[0].Msg == "" || body.Detail[0].Type == "" {
		t.Fatalf("detail lacks msg/type: %s", r.body)
	}
}

func TestEveryUserRouteNeedsAValidKey(t *testing.T) {
	e := newEnv(t, false)
	for _, rt := range api.Routes {
		if rt.Auth != api.AuthUser {
			continue
		}
		path := strings.ReplaceAll(rt.Path, "{conversation_id}", strings.Repeat("a", 32))
		for name, headers := range map[string]map[string]string{
			"none":      nil,
			"wrong key": {"Authorization": "Bearer not-a-key"},
			"basic":     {"Authorization": "Basic " + aliceKey},
			"empty":     {"Authorization": "Bearer "},
		} {
			r := e.do(rt.Method, path, "{}", headers)
			if r.status != 401 {
				t.Errorf("%s %s with %s auth: %d %s", rt.Method, rt.Path, name, r.status, r.body)
			}
			var body struct {
				Detail string `json:"detail"`
			}
			r.json(t, &body)
			if !strings.HasPrefix(body.Detail, "Unauthorized") {
				t.Errorf("401 detail %q", body.Detail)
			}
		}
	}
	if r := e.as(aliceKey, "GET", "/api/v1/sandboxes/search", ""); r.status != 200 {
		t.Fatalf("valid key: %d %s", r.status, r.body)
	}
	if r := e.as(aliceKey, "GET", "/api/v1/no-such-route", ""); r.status != 404 {
		t.Fatalf("unknown route: %d", r.status)
	}
}

func TestStartRequestValidation(t *testing.T) {
	e := newEnv(t, false)
	msg := func(text string) string {
		return `{"role":"user","content":[{"type":"text","text":"` + text + `"}],"run":true}`
	}
	cases := []struct{ name, body, loc string }{
		{"not json", `{"initial_message":`, "body[19]"},
		{"array body", `[]`, "body"},
		{"unknown field", `{"selected_repo":"a/b"}`, "body.selected_repo"},
		{"unknown nested field", `{"initial_message":{"role":"user","content":[{"type":"text","text":"x"}],"runn":true}}`, "body.initial_message.runn"},
		{"wrong type", `{"selected_repository":42}`, "body.selected_repository"},
		{"malformed repository", `{"selected_repository":"just-a-name"}`, "body.selected_repository"},
		{"repository with shell", `{"selected_repository":"a/b;rm -rf"}`, "body.selected_repository"},
		{"repository traversal", `{"selected_repository":"../etc"}`, "body.selected_repository"},
		{"bad branch", `{"selected_repository":"a/b","selected_branch":"-rf"}`, "body.selected_branch"},
		{"branch without repository", `{"selected_branch":"main"}`, "body.selected_branch"},
		{"bad sandbox id", `{"sandbox_id":"../x"}`, "body.sandbox_id"},
		{"bad conversation id", `{"conversation_id":"abc"}`, "body.conversation_id"},
		{"bad git provider", `{"git_provider":"svn"}`, "body.git_provider"},
		{"bad agent type", `{"agent_type":"wizard"}`, "body.agent_type"},
		{"bad message role", `{"initial_message":{"role":"robot","content":[]}}`, "body.initial_message.role"},
		{"empty message content", `{"initial_message":{"role":"user","content":[]}}`, "body.initial_message.content"},
		{"bad content type", `{"initial_message":{"role":"user","content":[{"type":"audio"}]}}`, "body.initial_message.content[0].type"},
		{"secrets not a map of strings", `{"secrets":{"A":1}}`, "body.secrets.A"},
		{"reserved secret name", `{"secrets":{"LLM_API_KEY":"x"}}`, "body.secrets.LLM_API_KEY"},
		{"bad secret name", `{"secrets":{"1BAD":"x"}}`, "body.secrets.1BAD"},
		{"secret in message", `{"secrets":{"TOKEN":"hunter2-secret"},"initial_message":` + msg("use hunter2-secret please") + `}`, "body.initial_message.content[0].text"},
		{"metadata nested object", `{"observability_metadata":{"a":{"b":1}}}`, "body.observability_metadata.a"},
		{"metadata mixed array", `{"observability_metadata":{"a":[1,"x"]}}`, "body.observability_metadata.a[1]"},
		{"metadata null", `{"observability_metadata":{"a":null}}`, "body.observability_metadata.a"},
		{"metadata array of objects", `{"observability_metadata":{"a":[{}]}}`, "body.observability_metadata.a[0]"},
		{"metadata not object", `{"observability_metadata":[1]}`, "body.observability_metadata"},
		{"tags not strings", `{"observability_tags":[1]}`, "body.observability_tags[0]"},
		{"pr numbers", `{"pr_number":["1"]}`, "body.pr_number[0]"},
		{"plugin without source", `{"plugins":[{"ref":"main"}]}`, "body.plugins[0].source"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert422(t, e.as(aliceKey, "POST", "/api/v1/app-conversations", tc.body), tc.loc)
		})
	}
	// Valid metadata forms are accepted.
	ok := `{"observability_metadata":{"s":"x","n":1.5,"b":true,"ss":["a","b"],"ns":[1,2],"bs":[true],"empty":[]},"observability_tags":["t"]}`
	if r := e.as(aliceKey, "POST", "/api/v1/app-conversations", ok); r.status != 200 {
		t.Fatalf("valid request refused: %d %s", r.status, r.body)
	}
	// {} is a valid start request; the secret values are masked in the task.
	r := e.as(aliceKey, "POST", "/api/v1/app-conversations", `{"secrets":{"TOKEN":"hunter2-secret"}}`)
	if r.status != 200 || strings.Contains(string(r.body), "hunter2") || !strings.Contains(string(r.body), `"TOKEN":"**********"`) {
		t.Fatalf("secret not masked in the task: %d %s", r.status, r.body)
	}
	var task struct {
		Status string `json:"status"`
	}
	r.json(t, &task)
	if task.Status != "WORKING" {
		t.Fatalf("new task status %s", task.Status)
	}
	if r := e.as(aliceKey, "POST", "/api/v1/app-conversations", ""); r.status != 200 {
		t.Fatalf("empty body: %d %s", r.status, r.body)
	}
}

func TestBatchGetsAndIsolation(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	now := time.Now().UTC()
	e.store.CreateSandbox(ctx, acs.Sandbox{ID: "sb-alice", OwnerID: "alice", Status: acs.SandboxMissing, CreatedAt: now})
	e.store.CreateSandbox(ctx, acs.Sandbox{ID: "sb-bob", OwnerID: "bob", Status: acs.SandboxMissing, CreatedAt: now})
	alice, bob := strings.Repeat("a", 32), strings.Repeat("b", 32)
	e.store.CreateConversation(ctx, acs.Conversation{ID: alice, OwnerID: "alice", SandboxID: "sb-alice", CreatedAt: now})
	e.store.CreateConversation(ctx, acs.Conversation{ID: bob, OwnerID: "bob", SandboxID: "sb-bob", CreatedAt: now})
	e.store.PutEvents(ctx, bob, []acs.StoredEvent{{ID: "e1", Kind: "PauseEvent", Source: "user", Timestamp: now, JSON: []byte(`{}`)}})

	var got []map[string]any
	dashed := acs.Dashed(alice)
	r := e.as(aliceKey, "GET", "/api/v1/app-conversations?ids="+dashed+"&ids="+bob+"&ids="+strings.Repeat("c", 32), "")
	r.json(t, &got)
	if len(got) != 3 || got[0]["id"] != alice || got[1] != nil || got[2] != nil {
		t.Fatalf("conversations by ids: %s", r.body)
	}
	if got[0]["sandbox_status"] != "MISSING" || got[0]["conversation_url"] != nil {
		t.Fatalf("read-only conversation: %s", r.body)
	}
	r = e.as(aliceKey, "GET", "/api/v1/sandboxes?id=sb-bob&id=sb-alice", "")
	r.json(t, &got)
	if got[0] != nil || got[1]["id"] != "sb-alice" {
		t.Fatalf("sandboxes by ids: %s", r.body)
	}
	for _, path := range []string{"/events/search", "/events/count", "/events?id=e1"} {
		r := e.as(aliceKey, "GET", "/api/v1/conversation/"+bob+path, "")
		if r.status != 404 {
			t.Errorf("another user's events %s: %d %s", path, r.status, r.body)
		}
		if r := e.as(bobKey, "GET", "/api/v1/conversation/"+bob+path, ""); r.status != 200 {
			t.Errorf("own events %s: %d %s", path, r.status, r.body)
		}
	}
	if r := e.as(aliceKey, "GET", "/api/v1/conversation/not-a-uuid/events/search", ""); r.status != 404 {
		t.Errorf("malformed id: %d", r.status)
	}
	for _, q := range []string{"ids=nope", "ids=" + strings.Repeat("z", 32), "ids=" + strings.Repeat(alice+",", 101)} {
		for _, path := range []string{"/api/v1/app-conversations?", "/api/v1/app-conversations/start-tasks?"} {
			if r := e.as(aliceKey, "GET", path+q, ""); r.status != 422 {
				t.Errorf("%s%s: %d", path, q[:min(len(q), 20)], r.status)
			}
		}
	}
	// Start tasks: another user's task is null.
	r = e.as(bobKey, "POST", "/api/v1/app-conversations", "{}")
	var task struct {
		ID string `json:"id"`
	}
	r.json(t, &task)
	r = e.as(aliceKey, "GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, "")
	if string(r.body) != "[null]" {
		t.Fatalf("another user's task: %s", r.body)
	}
	// A conversation id in use is a conflict.
	r = e.as(aliceKey, "POST", "/api/v1/app-conversations", `{"conversation_id":"`+bob+`"}`)
	if r.status != 409 {
		t.Fatalf("conversation id in use: %d %s", r.status, r.body)
	}
}

func TestEventSearchParameters(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	id := strings.Repeat("d", 32)
	e.store.CreateConversation(ctx, acs.Conversation{ID: id, OwnerID: "alice", SandboxID: "x", CreatedAt: now})
	var evs []acs.StoredEvent
	for i := 0; i < 5; i++ {
		kind, text := "ActionEvent", ""
		if i%2 == 0 {
			kind, text = "MessageEvent", fmt.Sprintf("message number %d", i)
		}
		ts := now.Add(time.Duration(i) * time.Minute)
		evs = append(evs, acs.StoredEvent{ID: fmt.Sprint("e", i), Kind: kind, Source: "agent", Timestamp: ts, Text: text,
			JSON: []byte(fmt.Sprintf(`{"kind":%q,"id":"e%d"}`, kind, i))})
	}
	if _, err := e.store.PutEvents(ctx, id, evs); err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/conversation/" + id + "/events/search?"
	count := func(q string) int {
		r := e.as(aliceKey, "GET", base+q, "")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		r.json(t, &p)
		return len(p.Items)
	}
	for q, want := range map[string]int{
		"": 5, "kind=MessageEvent": 3, "kind__eq=ActionEvent": 2, "body=NUMBER%202": 1, "source=user": 0,
		"timestamp__gte=2026-03-01T10:02:00Z": 3, "timestamp__lt=2026-03-01T10:02:00": 2, "limit=2": 2,
		"kind=openhands.sdk.event.llm_convertible.message.MessageEvent": 3, "sort_order=TIMESTAMP_DESC&limit=1": 1,
	} {
		if got := count(q); got != want {
			t.Errorf("%q: %d, want %d", q, got, want)
		}
	}
	for _, tc := range []struct{ q, loc string }{
		{"limit=0", "query.limit"}, {"limit=101", "query.limit"}, {"limit=x", "query.limit"},
		{"sort_order=DESC", "query.sort_order"}, {"source=bot", "query.source"}, {"kind=Bogus", "query.kind"},
		{"kind__eq=Bogus", "query.kind__eq"}, {"timestamp__gte=soon", "query.timestamp__gte"},
		{"timestamp__lt=2026-02-30", "query.timestamp__lt"}, {"page_id=garbage!", "query.page_id"},
	} {
		assert422(t, e.as(aliceKey, "GET", base+tc.q, ""), tc.loc)
	}
	r := e.as(aliceKey, "GET", base+"limit=2", "")
	var p struct {
		NextPageID *string `json:"next_page_id"`
	}
	r.json(t, &p)
	if p.NextPageID == nil {
		t.Fatal("no next page")
	}
	if got := count("limit=2&page_id=" + *p.NextPageID); got != 2 {
		t.Fatalf("second page %d", got)
	}
}

func TestSandboxRoutesValidation(t *testing.T) {
	e := newEnv(t, false)
	assert422(t, e.as(aliceKey, "POST", "/api/v1/sandboxes?sandbox_spec_id=nope", ""), "query.sandbox_spec_id")
	assert422(t, e.as(aliceKey, "GET", "/api/v1/sandboxes/search?limit=0", ""), "query.limit")
	assert422(t, e.as(aliceKey, "GET", "/api/v1/sandboxes/search?page_id=@@@", ""), "query.page_id")
	assert422(t, e.as(aliceKey, "GET", "/api/v1/sandbox-specs/search?limit=500", ""), "query.limit")
	r := e.as(aliceKey, "GET", "/api/v1/sandbox-specs/search?limit=1", "")
	var page struct {
		Items      []map[string]any `json:"items"`
		NextPageID *string          `json:"next_page_id"`
	}
	r.json(t, &page)
	if len(page.Items) != 1 || page.Items[0]["id"] != "acs-local" || page.NextPageID == nil {
		t.Fatalf("specs page: %s", r.body)
	}
	r = e.as(aliceKey, "GET", "/api/v1/sandbox-specs/search?page_id="+*page.NextPageID, "")
	r.json(t, &page)
	if len(page.Items) != 1 || page.Items[0]["id"] != "second" || page.NextPageID != nil {
		t.Fatalf("specs second page: %s", r.body)
	}
}

func TestWebhooks(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	now := time.Now().UTC()
	e.store.CreateSandbox(ctx, acs.Sandbox{ID: "sb1", OwnerID: "alice", Status: acs.SandboxRunning, SessionKeyHash: acs.HashKey("sandbox-one-key"), CreatedAt: now})
	e.store.CreateSandbox(ctx, acs.Sandbox{ID: "sb2", OwnerID: "bob", Status: acs.SandboxRunning, SessionKeyHash: acs.HashKey("sandbox-two-key"), CreatedAt: now})
	conv := strings.Repeat("e", 32)
	e.store.CreateConversation(ctx, acs.Conversation{ID: conv, OwnerID: "alice", SandboxID: "sb1", CreatedAt: now})

	post := func(key, path, body string) resp {
		return e.do("POST", path, body, map[string]string{"X-Session-API-Key": key, "Content-Type": "application/json"})
	}
	// Report times in the past: a time after the report's receipt counts
	// as its receipt.
	ts := func(s int) string { return events.At(now.Add(time.Duration(s-10) * time.Second)).String() }
	batch := `[{"kind":"MessageEvent","id":"m1","timestamp":"` + ts(1) + `","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"Hello"}]}},` +
		`{"kind":"ConversationStateUpdateEvent","id":"s1","timestamp":"` + ts(3) + `","key":"execution_status","value":"finished"},` +
		`{"kind":"ConversationStateUpdateEvent","id":"s0","timestamp":"` + ts(2) + `","key":"execution_status","value":"running"},` +
		`{"kind":"ConversationStateUpdateEvent","id":"s2","timestamp":"` + ts(2) + `","key":"stats","value":{"usage_to_metrics":{"agent":{"model_name":"m","accumulated_cost":0.5,"max_budget_per_task":null,"accumulated_token_usage":{"model":"m","prompt_tokens":10,"completion_tokens":5,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"context_window":0,"per_turn_token":15,"response_id":"r"}}}}}]`
	path := "/api/v1/webhooks/events/" + conv
	if r := post("", path, batch); r.status != 401 {
		t.Fatalf("no key: %d", r.status)
	}
	if r := post("unknown", path, batch); r.status != 401 {
		t.Fatalf("unknown key: %d", r.status)
	}
	if r := post("sandbox-two-key", path, batch); r.status != 403 {
		t.Fatalf("another sandbox's conversation: %d %s", r.status, r.body)
	}
	if r := post("sandbox-one-key", path, `[{"kind":"MessageEvent","id":"x","timestamp":"`+ts(0)+`","source":"user","llm_message":{"role":"user"},"bogus":1}]`); r.status != 422 {
		t.Fatalf("invalid event: %d %s", r.status, r.body)
	} else {
		assert422(t, r, "body[0].bogus")
	}
	for i := 0; i < 2; i++ { // delivered twice: stored once
		if r := post("sandbox-one-key", path, batch); r.status != 200 {
			t.Fatalf("ingest: %d %s", r.status, r.body)
		}
	}
	r := e.as(aliceKey, "GET", "/api/v1/conversation/"+conv+"/events/count", "")
	if string(r.body) != "4" {
		t.Fatalf("stored %s events, want 4", r.body)
	}
	c, _ := e.store.GetConversation(ctx, conv)
	if c.ExecutionStatus != "finished" {
		t.Fatalf("an older status report overwrote a newer one: %s", c.ExecutionStatus)
	}
	if !strings.Contains(string(c.Metrics), `"accumulated_cost":0.5`) {
		t.Fatalf("metrics %s", c.Metrics)
	}
	// An untitled conversation is titled by its first user message.
	if c.Title == nil || *c.Title != "Hello" {
		t.Fatalf("title %v after the first message", c.Title)
	}
	// The conversation info webhook updates title and status; older info is ignored.
	info := `{"id":"` + acs.Dashed(conv) + `","execution_status":"running","title":"Renamed","updated_at":"` + ts(1) + `"}`
	if r := post("sandbox-one-key", "/api/v1/webhooks/conversations", info); r.status != 200 {
		t.Fatalf("info: %d %s", r.status, r.body)
	}
	c, _ = e.store.GetConversation(ctx, conv)
	if c.ExecutionStatus != "finished" || c.Title == nil || *c.Title != "Renamed" {
		t.Fatalf("after info: %+v", c)
	}
	// A conversation created directly on the agent server gets a stub record.
	other := strings.Repeat("f", 32)
	if r := post("sandbox-one-key", "/api/v1/webhooks/conversations", `{"id":"`+other+`","execution_status":"idle"}`); r.status != 200 {
		t.Fatalf("stub: %d %s", r.status, r.body)
	}
	if c, err := e.store.GetConversation(ctx, other); err != nil || c.OwnerID != "alice" || c.SandboxID != "sb1" {
		t.Fatalf("stub record %+v %v", c, err)
	}
	if r := post("sandbox-one-key", "/api/v1/webhooks/conversations", `{"nope":1}`); r.status != 422 {
		t.Fatalf("bad info: %d", r.status)
	}
	if r := post("sandbox-one-key", path, `{"not":"an array"}`); r.status != 422 {
		t.Fatalf("not an array: %d", r.status)
	}
}

// Behind API Gateway the authorizer is the only authority: with
// ContextAuthOnly a valid Bearer key alone is refused, and a user in the
// request context is served.
func TestContextAuthOnly(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	if err := store.CreateUser(ctx, acs.User{ID: "alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateAPIKey(ctx, acs.APIKey{ID: "k", UserID: "alice", Hash: acs.HashKey(aliceKey)}); err != nil {
		t.Fatal(err)
	}
	h := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store,
		Sealer: sealbox.FromPassphrase("context auth passphrase")}), ContextAuthOnly: true}).RouteHandler("get_me")
	for _, tc := range []struct {
		name string
		user *acs.User
		want int
	}{
		{"bearer key only", nil, 401},
		{"authorizer context", &acs.User{ID: "alice", Name: "alice"}, 200},
	} {
		req := httptest.NewRequest("GET", "/api/v1/users/me", nil)
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		if tc.user != nil {
			req = req.WithContext(acs.WithUser(req.Context(), *tc.user))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
}

// Behind a buffering proxy the stream ends (well-formed) at StreamLimit even
// though the task is still starting.
func TestStreamStartLimit(t *testing.T) {
	store := openStore(t)
	queue := openQueue(t)
	ctx := context.Background()
	store.CreateUser(ctx, acs.User{ID: "alice", Name: "alice"})
	store.CreateAPIKey(ctx, acs.APIKey{ID: "k", UserID: "alice", Hash: acs.HashKey(aliceKey)})
	h := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue,
		Sealer: sealbox.FromPassphrase("stream limit passphrase"),
		Flow:   startflow.Config{Sandboxes: sandboxes.Config{Specs: []acs.SandboxSpec{{ID: "acs-local"}}}}}), StreamLimit: 200 * time.Millisecond}).Handler()
	req := httptest.NewRequest("POST", "/api/v1/app-conversations/stream-start", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	var states []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &states); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if len(states) != 1 || states[0]["status"] != "WORKING" {
		t.Fatalf("states %v", states)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the stream did not end at its limit (%s)", d)
	}
}
