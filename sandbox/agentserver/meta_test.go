package agentserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// TestServerMetadata covers /api/llm/*, the settings schemas, VS Code and
// desktop: model lists come from configuration and from the configured
// endpoint's /models.
func TestServerMetadata(t *testing.T) {
	e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) {
		c.LLMModel = "openai/gpt-4o"
		c.LLMModels = []string{"anthropic/claude-sonnet-4-5", "openai/gpt-4o"}
		c.DesktopURL = "http://127.0.0.1:6080/vnc.html"
	}})
	e.cfg.LLMBaseURL = e.llm.URL // the endpoint is the env's scripted LLM
	e.restart()
	tests := []struct {
		name, path string
		status     int
		want       string // the JSON body
	}{
		{"providers", "/api/llm/providers", 200, `{"providers":["anthropic","openai"]}`},
		{"models", "/api/llm/models", 200, `{"models":["anthropic/claude-sonnet-4-5","openai/gpt-4o","openai/llmtest"]}`},
		{"models of a provider", "/api/llm/models?provider=openai", 200, `{"models":["openai/gpt-4o","openai/llmtest"]}`},
		{"models of an unknown provider", "/api/llm/models?provider=nobody", 200, `{"models":[]}`},
		{"verified models", "/api/llm/models/verified", 200, `{"models":{"anthropic":["claude-sonnet-4-5"],"openai":["gpt-4o"]}}`},
		{"vscode", "/api/vscode/status", 200, `{"running":false,"enabled":false,"message":"VSCode is not available in this sandbox"}`},
		{"desktop", "/api/desktop/url", 200, `{"url":"http://127.0.0.1:6080/vnc.html"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("GET", tc.path, nil)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			var got, want any
			r.json(t, &got)
			_ = json.Unmarshal([]byte(tc.want), &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("body %s, want %s", r.body, tc.want)
			}
		})
	}
	t.Run("schemas are the control plane's", func(t *testing.T) {
		for path, want := range map[string]settingsschema.Schema{"/api/settings/agent-schema": settingsschema.Agent(),
			"/api/settings/conversation-schema": settingsschema.Conversation()} {
			r := e.call("GET", path, nil)
			var got settingsschema.Schema
			r.json(t, &got)
			if r.status != 200 || got.ModelName != want.ModelName || len(got.Sections) != len(want.Sections) || len(got.Sections) == 0 {
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
		}
	})
	t.Run("routes need the session key", func(t *testing.T) {
		for _, p := range []string{"/api/llm/providers", "/api/llm/models", "/api/llm/models/verified", "/api/settings/agent-schema",
			"/api/settings/conversation-schema", "/api/vscode/status", "/api/desktop/url", "/api/profiles"} {
			if r := e.do("GET", p, nil, "wrong"); r.status != 401 {
				t.Fatalf("%s without the key: %d", p, r.status)
			}
		}
	})
}

// TestModelsWithoutEndpoint: a failing or absent /models leaves the
// configured models, never a 5xx; no desktop is a 503.
func TestModelsWithoutEndpoint(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream broke", http.StatusInternalServerError)
	}))
	defer failing.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	defer garbage.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, base := range map[string]string{"none": "", "5xx": failing.URL, "not JSON": garbage.URL, "unreachable": closed.URL} {
		t.Run(name, func(t *testing.T) {
			e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) {
				c.LLMModel, c.LLMBaseURL, c.LLMAPIKey = "openai/configured", base, "sk-endpoint-key-123456"
			}})
			r := e.call("GET", "/api/llm/models", nil)
			if r.status != 200 || string(r.body) != `{"models":["openai/configured"]}` {
				t.Fatalf("models: %d %s", r.status, r.body)
			}
			if r := e.call("GET", "/api/llm/providers", nil); r.status != 200 || string(r.body) != `{"providers":["openai"]}` {
				t.Fatalf("providers: %d %s", r.status, r.body)
			}
			if r := e.call("GET", "/api/desktop/url", nil); r.status != 503 || !strings.Contains(string(r.body), `"detail"`) {
				t.Fatalf("desktop without one: %d %s", r.status, r.body)
			}
		})
	}
}

// TestEndpointModelsUseTheKey: /models is asked with the endpoint's key,
// and the active profile's endpoint wins over LLM_BASE_URL.
func TestEndpointModelsUseTheKey(t *testing.T) {
	var gotAuth []string
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"profile-model-a"},{"id":"groq/profile-model-b"}]}`))
	}))
	defer ep.Close()
	e := newEnv(t)
	if r := e.call("POST", "/api/profiles/fast", map[string]any{"llm": map[string]any{"model": "openai/fast", "base_url": ep.URL, "api_key": "sk-profile-key-987654"}}); r.status != 201 {
		t.Fatalf("save: %d %s", r.status, r.body)
	}
	if r := e.call("GET", "/api/llm/models", nil); string(r.body) != `{"models":["openai/fast"]}` {
		t.Fatalf("before activation (no endpoint): %s", r.body)
	}
	if r := e.call("POST", "/api/profiles/fast/activate", map[string]any{}); r.status != 200 {
		t.Fatalf("activate: %d %s", r.status, r.body)
	}
	r := e.call("GET", "/api/llm/models", nil)
	if string(r.body) != `{"models":["groq/profile-model-b","openai/fast","openai/profile-model-a"]}` {
		t.Fatalf("after activation: %s", r.body)
	}
	if len(gotAuth) != 1 || gotAuth[0] != "Bearer sk-profile-key-987654" {
		t.Fatalf("the endpoint saw Authorization %q", gotAuth)
	}
}

// TestProfiles covers the profile routes: save, list, get (key hidden
// unless exposed), activate, rename (the active profile follows), delete,
// and their errors.
func TestProfiles(t *testing.T) {
	e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) { c.SecretKey = "profiles-secret-key" }})
	const key = "sk-profile-secret-abcdef"
	save := func(name string, llm map[string]any) resp {
		return e.call("POST", "/api/profiles/"+name, map[string]any{"llm": llm})
	}
	if r := save("work", map[string]any{"model": "openai/gpt-4o", "base_url": "http://llm.example/v1", "api_key": key}); r.status != 201 ||
		string(r.body) != `{"name":"work","message":"Profile 'work' saved"}` {
		t.Fatalf("save: %d %s", r.status, r.body)
	}
	if r := save("nokey", map[string]any{"model": "anthropic/claude"}); r.status != 201 {
		t.Fatalf("save: %d %s", r.status, r.body)
	}
	list := func() string { return string(e.call("GET", "/api/profiles", nil).body) }
	if got := list(); got != `{"profiles":[{"name":"nokey","model":"anthropic/claude","base_url":null,"api_key_set":false},`+
		`{"name":"work","model":"openai/gpt-4o","base_url":"http://llm.example/v1","api_key_set":true}],"active_profile":null}` {
		t.Fatalf("list: %s", got)
	}
	// The key is sealed at rest.
	b, err := os.ReadFile(filepath.Join(e.dir, "profiles", "llm", "work.json"))
	if err != nil || strings.Contains(string(b), key) || !strings.Contains(string(b), "acs-sealed:") {
		t.Fatalf("stored profile: %v %s", err, b)
	}

	get := func(name, expose string) (int, map[string]any, string) {
		req, _ := http.NewRequest("GET", e.http.URL+"/api/profiles/"+name, nil)
		req.Header.Set("X-Session-API-Key", testKey)
		if expose != "" {
			req.Header.Set("X-Expose-Secrets", expose)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		raw, _ := json.Marshal(body)
		return res.StatusCode, body, string(raw)
	}
	apiKey := func(body map[string]any) any { return body["config"].(map[string]any)["api_key"] }
	st, body, raw := get("work", "")
	if st != 200 || apiKey(body) != nil || body["api_key_set"] != true || body["config"].(map[string]any)["model"] != "openai/gpt-4o" || strings.Contains(raw, key) {
		t.Fatalf("get: %d %s", st, raw)
	}
	if st, body, raw := get("work", "plaintext"); st != 200 || apiKey(body) != key {
		t.Fatalf("get plaintext: %d %s", st, raw)
	}
	st, body, raw = get("work", "encrypted")
	sealed, _ := apiKey(body).(string)
	if st != 200 || !strings.HasPrefix(sealed, "acs-sealed:") {
		t.Fatalf("get encrypted: %d %s", st, raw)
	}
	// A sealed key posted back is opened, not stored sealed twice.
	if r := save("copy", map[string]any{"model": "openai/gpt-4o", "api_key": sealed}); r.status != 201 {
		t.Fatalf("save sealed: %d %s", r.status, r.body)
	}
	if _, body, raw := get("copy", "plaintext"); apiKey(body) != key {
		t.Fatalf("copy: %s", raw)
	}
	if st, _, raw := get("work", "yes-please"); st != 400 || !strings.Contains(raw, "detail") {
		t.Fatalf("bad X-Expose-Secrets: %d %s", st, raw)
	}

	if r := e.call("POST", "/api/profiles/work/activate", map[string]any{}); r.status != 200 ||
		string(r.body) != `{"name":"work","message":"Profile 'work' activated and applied to current settings","llm_applied":true}` {
		t.Fatalf("activate: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/profiles/work/rename", map[string]any{"new_name": "job"}); r.status != 200 ||
		string(r.body) != `{"name":"job","message":"Profile 'work' renamed to 'job'"}` {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}
	if got := list(); !strings.Contains(got, `"active_profile":"job"`) || strings.Contains(got, `"work"`) {
		t.Fatalf("after rename: %s", got)
	}
	if _, body, raw := get("job", "plaintext"); apiKey(body) != key {
		t.Fatalf("renamed profile lost its key: %s", raw)
	}
	// Profiles survive a restart, keys included.
	e.restart()
	if _, body, raw := get("job", "plaintext"); apiKey(body) != key {
		t.Fatalf("after restart: %s", raw)
	}
	if got := list(); !strings.Contains(got, `"active_profile":"job"`) {
		t.Fatalf("active profile after restart: %s", got)
	}
	if r := e.call("DELETE", "/api/profiles/job", nil); r.status != 200 || string(r.body) != `{"name":"job","message":"Profile 'job' deleted"}` {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if got := list(); !strings.Contains(got, `"active_profile":null`) || strings.Contains(got, `"job"`) {
		t.Fatalf("after delete: %s", got)
	}

	errs := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"get unknown", "GET", "/api/profiles/ghost", nil, 404},
		{"activate unknown", "POST", "/api/profiles/ghost/activate", map[string]any{}, 404},
		{"rename unknown", "POST", "/api/profiles/ghost/rename", map[string]any{"new_name": "x"}, 404},
		{"rename onto an existing one", "POST", "/api/profiles/nokey/rename", map[string]any{"new_name": "copy"}, 409},
		{"rename to a bad name", "POST", "/api/profiles/nokey/rename", map[string]any{"new_name": "a b"}, 422},
		{"rename to dot-dot", "POST", "/api/profiles/nokey/rename", map[string]any{"new_name": ".."}, 422},
		{"rename without new_name", "POST", "/api/profiles/nokey/rename", map[string]any{}, 422},
		{"bad name", "POST", "/api/profiles/a%20b", map[string]any{"llm": map[string]any{"model": "m"}}, 422},
		{"name too long", "GET", "/api/profiles/" + strings.Repeat("a", 65), nil, 422},
		{"save without llm", "POST", "/api/profiles/p", map[string]any{}, 422},
		{"save with an unknown field", "POST", "/api/profiles/p", map[string]any{"llm": map[string]any{"model": "m", "nope": 1}}, 422},
		{"save not JSON", "POST", "/api/profiles/p", "{", 422},
		{"save a sealed key that does not open", "POST", "/api/profiles/p", map[string]any{"llm": map[string]any{"model": "m", "api_key": "acs-sealed:v1:AAAA"}}, 422},
		{"delete unknown", "DELETE", "/api/profiles/ghost", nil, 200},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, tc.body)
			if r.status != tc.status || !strings.Contains(string(r.body), `"`) {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			if r.status >= 400 && !strings.Contains(string(r.body), `"detail"`) {
				t.Fatalf("error without detail: %s", r.body)
			}
		})
	}
}

// TestSwitchLLM: switch_llm and switch_profile change the model of the
// next LLM call; the info shows it; metrics stay keyed by usage_id; keys
// never show.
func TestSwitchLLM(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"}, llmtest.Reply{Text: "three"})
	id := e.create(nil)
	e.call("POST", "/api/conversations/"+id+"/events", userMessage("hi", true))
	e.waitStatus(id, "finished")

	const key2 = "sk-switched-key-abcdef12"
	r := e.call("POST", "/api/conversations/"+id+"/switch_llm", map[string]any{"llm": map[string]any{
		"model": "openai/second-model", "base_url": e.llm.URL, "api_key": key2, "num_retries": 0, "usage_id": "agent"}})
	if r.status != 200 || string(r.body) != `{"success":true}` {
		t.Fatalf("switch_llm: %d %s", r.status, r.body)
	}
	info := e.call("GET", "/api/conversations/"+id, nil)
	var got struct {
		Agent struct {
			LLM struct {
				Model  string `json:"model"`
				APIKey string `json:"api_key"`
			} `json:"llm"`
		} `json:"agent"`
		Stats struct {
			UsageToMetrics map[string]any `json:"usage_to_metrics"`
		} `json:"stats"`
	}
	info.json(t, &got)
	if got.Agent.LLM.Model != "openai/second-model" || strings.Contains(string(info.body), key2) {
		t.Fatalf("info after switch_llm: %s", info.body)
	}
	e.call("POST", "/api/conversations/"+id+"/events", userMessage("again", true))
	e.waitStatus(id, "finished")
	reqs := e.llm.Requests()
	if len(reqs) != 2 || reqs[0].Model != "test-model" || reqs[1].Model != "second-model" ||
		reqs[1].Header.Get("Authorization") != "Bearer "+key2 {
		t.Fatalf("LLM calls: %d, models %q", len(reqs), models(reqs))
	}
	e.call("GET", "/api/conversations/"+id, nil).json(t, &got)
	if len(got.Stats.UsageToMetrics) != 1 || got.Stats.UsageToMetrics["agent"] == nil {
		t.Fatalf("metrics not kept by usage_id: %v", got.Stats.UsageToMetrics)
	}

	// switch_profile: the profile's model, the conversation's usage_id.
	if r := e.call("POST", "/api/profiles/third", map[string]any{"llm": map[string]any{
		"model": "openai/third-model", "base_url": e.llm.URL, "api_key": "sk-third-key-abcdef", "num_retries": 0}}); r.status != 201 {
		t.Fatalf("save: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/conversations/"+id+"/switch_profile", map[string]any{"profile_name": "third"}); r.status != 200 {
		t.Fatalf("switch_profile: %d %s", r.status, r.body)
	}
	e.call("POST", "/api/conversations/"+id+"/events", userMessage("third", true))
	e.waitStatus(id, "finished")
	reqs = e.llm.Requests()
	if len(reqs) != 3 || reqs[2].Model != "third-model" {
		t.Fatalf("after switch_profile: models %q", models(reqs))
	}
	e.call("GET", "/api/conversations/"+id, nil).json(t, &got)
	if got.Agent.LLM.Model != "openai/third-model" || len(got.Stats.UsageToMetrics) != 1 {
		t.Fatalf("after switch_profile: model %s, metrics %v", got.Agent.LLM.Model, got.Stats.UsageToMetrics)
	}
	// The switch is persisted.
	e.restart()
	e.call("GET", "/api/conversations/"+id, nil).json(t, &got)
	if got.Agent.LLM.Model != "openai/third-model" {
		t.Fatalf("after restart: %s", got.Agent.LLM.Model)
	}
	// No key reached an event.
	for _, ev := range e.allEvents(id) {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), key2) || strings.Contains(string(b), "sk-third-key-abcdef") {
			t.Fatalf("event carries a key: %s", b)
		}
	}

	unknown := "/api/conversations/00000000-0000-0000-0000-000000000001"
	errs := []struct {
		name, path string
		body       any
		status     int
	}{
		{"switch_llm unknown conversation", unknown + "/switch_llm", map[string]any{"llm": map[string]any{"model": "m"}}, 404},
		{"switch_llm without llm", "/api/conversations/" + id + "/switch_llm", map[string]any{}, 422},
		{"switch_llm bad field", "/api/conversations/" + id + "/switch_llm", map[string]any{"llm": map[string]any{"model": "m", "top_p": 7}}, 422},
		{"switch_llm not JSON", "/api/conversations/" + id + "/switch_llm", "nope", 422},
		{"switch_profile unknown profile", "/api/conversations/" + id + "/switch_profile", map[string]any{"profile_name": "ghost"}, 404},
		{"switch_profile bad profile name", "/api/conversations/" + id + "/switch_profile", map[string]any{"profile_name": "../x"}, 404},
		{"switch_profile unknown conversation", unknown + "/switch_profile", map[string]any{"profile_name": "third"}, 404},
		{"switch_profile without a name", "/api/conversations/" + id + "/switch_profile", map[string]any{}, 422},
		{"switch_acp_model on an Agent conversation", "/api/conversations/" + id + "/switch_acp_model", map[string]any{"model": "x"}, 400},
		{"switch_acp_model without model", "/api/conversations/" + id + "/switch_acp_model", map[string]any{}, 422},
		{"switch_acp_model unknown conversation", unknown + "/switch_acp_model", map[string]any{"model": "x"}, 404},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", tc.path, tc.body)
			if r.status != tc.status || !strings.Contains(string(r.body), `"detail"`) {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
		})
	}
}

func models(reqs []*llmtest.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Model)
	}
	return out
}
