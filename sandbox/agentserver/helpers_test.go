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

func newEnv(t testing.TB, replies ...llmtest.Reply) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), llm: llmtest.New(replies...)}
	t.Cleanup(e.llm.Close)
	e.work = filepath.Join(e.dir, "workspace")
	e.cfg = agentserver.Config{SessionKeys: []string{testKey}, ConversationsDir: filepath.Join(e.dir, "conversations"),
		WorkspaceDir: e.work, BuildSHA: "unknown", BuildRef: "unknown"}
	e.start()
	return e
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
	deadline := time.Now().Add(20 * time.Second)
	var info map[string]any
	for time.Now().Before(deadline) {
		r := e.call("GET", "/api/conversations/"+id, nil)
		r.json(e.t, &info)
		if info["execution_status"] == status {
			return info
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("conversation %s never reached %s (last %v)", id, status, info["execution_status"])
	return nil
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
