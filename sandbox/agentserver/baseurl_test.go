package agentserver_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestLLMBaseURLMustBeHTTP: every place the agent server takes an LLM
// configuration (a conversation's agent.llm and its condenser's llm,
// switch_llm, a saved profile) takes a base URL only as an http or https
// URL with a host, since the LLM key is sent there; anything else is a 422
// at the field, and an empty one means the default.
func TestLLMBaseURLMustBeHTTP(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	llm := func(field, url string) string {
		v, _ := json.Marshal(url)
		return fmt.Sprintf(`{"model":"m",%q:%s}`, field, v)
	}
	routes := []struct {
		name, path, field string
		ok                int
		body              func(llm string) string
		loc               string
	}{
		{"create, agent.llm", "/api/conversations", "base_url", 201, func(l string) string {
			return `{"agent":{"llm":` + l + `},"workspace":{"working_dir":"` + e.work + `"}}`
		}, "body.agent.llm"},
		{"create, condenser llm", "/api/conversations", "base_url", 201, func(l string) string {
			return `{"agent":{"llm":{"model":"m"},"condenser":{"kind":"LLMSummarizingCondenser","llm":` + l + `}},"workspace":{"working_dir":"` + e.work + `"}}`
		}, "body.agent.condenser.llm"},
		{"switch_llm", "/api/conversations/" + id + "/switch_llm", "base_url", 200, func(l string) string {
			return `{"llm":` + l + `}`
		}, "body.llm"},
		{"switch_llm, ollama_base_url", "/api/conversations/" + id + "/switch_llm", "ollama_base_url", 200, func(l string) string {
			return `{"llm":` + l + `}`
		}, "body.llm"},
		{"save profile", "/api/profiles/checked", "base_url", 201, func(l string) string {
			return `{"llm":` + l + `}`
		}, "body.llm"},
	}
	values := []struct {
		url string
		ok  bool
	}{
		{"gopher://127.0.0.1:70/_x", false},
		{"file:///etc/passwd", false},
		{"ftp://llm.example/v1", false},
		{"javascript:alert(1)", false},
		{"localhost:8000", false},
		{"http://", false},
		{"//llm.example/v1", false},
		{"http://127.0.0.1:9/v1", true},
		{"HTTPS://llm.example/v1", true},
		{"", true},
	}
	for _, rt := range routes {
		for _, v := range values {
			t.Run(rt.name+" "+v.url, func(t *testing.T) {
				r := e.call("POST", rt.path, rt.body(llm(rt.field, v.url)))
				if v.ok {
					if r.status != rt.ok {
						t.Fatalf("%s: %d %s, want %d", v.url, r.status, r.body, rt.ok)
					}
					return
				}
				assert422(t, r, rt.loc+"."+rt.field)
			})
		}
	}
}
