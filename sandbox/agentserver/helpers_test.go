package agentserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

const testKey = "test-session-key"

type env struct {
	t    testing.TB
	dir  string
	cfg  agentserver.Config
	srv  *agentserver.Server
	http *httptest.Server
	llm  *llmtest.Server
	work string
}

// envOptions say how an env differs from the default one.
type envOptions struct {
	// dir holds the workspace and the conversations (a new temporary
	// directory when "").
	dir string
	// adjust changes the configuration before the server starts.
	adjust func(*agentserver.Config)
}

// buildEnv starts an agent server as o describes, whose LLM answers
// replies: every test of the package gets its wiring from here (newEnv,
// newEnvWith and newEnvOnDisk name its common uses).
func buildEnv(t testing.TB, o envOptions, replies ...llmtest.Reply) *env {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	e := &env{t: t, dir: o.dir, llm: llmtest.New(replies...)}
	t.Cleanup(e.llm.Close)
	e.cfg = agentserver.Config{SessionKeys: []string{testKey}, ConversationsDir: filepath.Join(e.dir, "conversations"),
		WorkspaceDir: filepath.Join(e.dir, "workspace"), BuildSHA: "unknown", BuildRef: "unknown"}
	if o.adjust != nil {
		o.adjust(&e.cfg)
	}
	e.work = e.cfg.WorkspaceDir
	e.start()
	return e
}

// newEnv is the default env.
func newEnv(t testing.TB, replies ...llmtest.Reply) *env {
	t.Helper()
	return buildEnv(t, envOptions{}, replies...)
}

func (e *env) start() {
	srv, err := agentserver.New(context.Background(), e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv = srv
	e.http = httptest.NewServer(srv.Handler())
	e.t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.http != nil {
		e.http.Close()
		e.srv.Close()
		e.http = nil
	}
}

func (e *env) restart() {
	e.stop()
	e.start()
}

type resp struct {
	status int
	body   []byte
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, r.body)
	}
}

func (e *env) do(method, path string, body any, key string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.http.URL+path, rd)
	if key != "" {
		req.Header.Set("X-Session-API-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, b}
}

func (e *env) call(method, path string, body any) resp { return e.do(method, path, body, testKey) }

func (e *env) agent(tools ...string) map[string]any {
	ts := []map[string]any{}
	for _, t := range tools {
		ts = append(ts, map[string]any{"name": t})
	}
	return map[string]any{"kind": "Agent", "tools": ts, "llm": map[string]any{
		"model": "openai/test-model", "base_url": e.llm.URL, "api_key": "sk-secret-llm-key",
		"num_retries": 0, "retry_min_wait": 0.001, "retry_max_wait": 0.01, "usage_id": "agent"}}
}

// create starts a conversation and returns its id.
func (e *env) create(extra map[string]any, tools ...string) string {
	e.t.Helper()
	body := map[string]any{"agent": e.agent(tools...), "workspace": map[string]any{"working_dir": e.work}}
	for k, v := range extra {
		body[k] = v
	}
	r := e.call("POST", "/api/conversations", body)
	if r.status != 201 {
		e.t.Fatalf("create: %d %s", r.status, r.body)
	}
	var info struct {
		ID string `json:"id"`
	}
	r.json(e.t, &info)
	return info.ID
}

func userMessage(text string, run bool) map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": text}}, "run": run}
}

// waitStatus polls the conversation until it has the execution status.
func (e *env) waitStatus(id, status string) map[string]any {
	e.t.Helper()
	var info map[string]any
	if !testwait.Until(20*time.Second, func() bool {
		e.call("GET", "/api/conversations/"+id, nil).json(e.t, &info)
		return info["execution_status"] == status
	}) {
		e.t.Fatalf("conversation %s never reached %s (last %v)", id, status, info["execution_status"])
	}
	return info
}

// allEvents pages through the event search.
func (e *env) allEvents(id string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	page := ""
	for {
		path := "/api/conversations/" + id + "/events/search?limit=7"
		if page != "" {
			path += "&page_id=" + page
		}
		r := e.call("GET", path, nil)
		if r.status != 200 {
			e.t.Fatalf("search: %d %s", r.status, r.body)
		}
		var p struct {
			Items      []map[string]any `json:"items"`
			NextPageID *string          `json:"next_page_id"`
		}
		r.json(e.t, &p)
		out = append(out, p.Items...)
		if p.NextPageID == nil {
			return out
		}
		page = *p.NextPageID
	}
}

// signature renders events as "Kind" or "Kind:detail" for sequence checks.
func signature(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		s := ev["kind"].(string)
		switch s {
		case "ConversationStateUpdateEvent":
			s += ":" + ev["key"].(string)
			if ev["key"] == "execution_status" {
				s += "=" + ev["value"].(string)
			}
		case "MessageEvent":
			s += ":" + ev["source"].(string)
		case "ActionEvent":
			s += ":" + ev["tool_name"].(string)
		case "ObservationEvent":
			s += ":" + ev["observation"].(map[string]any)["kind"].(string)
		case "UserRejectObservation":
			s += ":" + ev["rejection_source"].(string)
		}
		out = append(out, s)
	}
	return out
}

func assertSequence(t *testing.T, evs []map[string]any, want ...string) {
	t.Helper()
	got := signature(evs)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("event sequence\n got %v\nwant %v", got, want)
	}
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		if _, err := events.Decode(b); err != nil {
			t.Fatalf("served event does not decode strictly: %v\n%s", err, b)
		}
	}
}

// rawRequest sends a body with its own content type.
func (e *env) rawRequest(method, path, body, contentType string) resp {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	req.Header.Set("X-Session-API-Key", testKey)
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, b}
}

// toolStep is the events of one LLM call answered with a single tool call:
// the stats update, the action and its observation.
func toolStep(tool, observation string) []string {
	return []string{"ConversationStateUpdateEvent:stats", "ActionEvent:" + tool, "ObservationEvent:" + observation}
}

// assertLinked checks that every observation (ObservationEvent or
// UserRejectObservation) answers exactly one earlier ActionEvent: its
// action_id is the action's id and its tool_call_id and tool_name are the
// action's. With all set, every executable action must have been answered.
func assertLinked(t *testing.T, evs []map[string]any, all bool) {
	t.Helper()
	actions := map[any]map[string]any{}
	answered := map[any]bool{}
	for i, ev := range evs {
		switch ev["kind"] {
		case "ActionEvent":
			actions[ev["id"]] = ev
		case "ObservationEvent", "UserRejectObservation":
			a, ok := actions[ev["action_id"]]
			if !ok {
				t.Fatalf("event %d (%s) answers no earlier action: action_id %v", i, ev["kind"], ev["action_id"])
			}
			if ev["tool_call_id"] != a["tool_call_id"] || ev["tool_name"] != a["tool_name"] {
				t.Fatalf("event %d (%s) links to action %v but has tool_call_id %v / tool_name %v, want %v / %v",
					i, ev["kind"], a["id"], ev["tool_call_id"], ev["tool_name"], a["tool_call_id"], a["tool_name"])
			}
			if answered[a["id"]] {
				t.Fatalf("action %v answered twice (event %d)", a["id"], i)
			}
			answered[a["id"]] = true
		}
	}
	if all {
		for id, a := range actions {
			if a["action"] != nil && !answered[id] {
				t.Fatalf("action %v (%v, call %v) has no observation", id, a["tool_name"], a["tool_call_id"])
			}
		}
	}
}

// concat joins event signature lists.
func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
