package agentserver_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// errorEvent returns the conversation's last ConversationErrorEvent.
func (e *env) errorEvent(id string) map[string]any {
	e.t.Helper()
	var last map[string]any
	for _, ev := range e.allEvents(id) {
		if ev["kind"] == "ConversationErrorEvent" {
			last = ev
		}
	}
	if last == nil {
		e.t.Fatalf("no ConversationErrorEvent in %v", signature(e.allEvents(id)))
	}
	return last
}

// TestUnusableLLMEndsTheRunAtOnce: an LLM that cannot be reached or refuses
// the configuration ends the run with an error the user can act on, without
// minutes of retries, although the config allows long ones.
func TestUnusableLLMEndsTheRunAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	cases := []struct {
		name, baseURL string // "" uses the scripted server
		reply         llmtest.Reply
		code          string
		detail        string
	}{
		{"connection refused", refused, llmtest.Reply{}, "LLMConnectionError", "LLM_BASE_URL"},
		{"name does not resolve", "http://acs-no-such-llm.invalid/v1", llmtest.Reply{}, "LLMConnectionError", "acs-no-such-llm.invalid"},
		{"401", "", llmtest.Reply{Status: 401, Error: "invalid api key"}, "LLMAuthenticationError", "LLM_API_KEY"},
		{"404", "", llmtest.Reply{Status: 404, Error: "model not found"}, "LLMNotFoundError", "LLM_MODEL"},
		{"400", "", llmtest.Reply{Status: 400, Error: "unknown parameter: foo"}, "LLMBadRequestError", "unknown parameter: foo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.reply)
			agent := e.agent()
			llmCfg := agent["llm"].(map[string]any)
			llmCfg["num_retries"], llmCfg["retry_min_wait"], llmCfg["retry_max_wait"] = 5, 60, 60
			if tc.baseURL != "" {
				llmCfg["base_url"] = tc.baseURL
			}
			id := e.create(map[string]any{"initial_message": userMessage("go", true), "agent": agent})
			e.waitStatus(id, "error")
			ev := e.errorEvent(id)
			detail, _ := ev["detail"].(string)
			if ev["code"] != tc.code || !strings.Contains(detail, tc.detail) || strings.Contains(detail, "sk-secret-llm-key") {
				t.Fatalf("error event %v", ev)
			}
		})
	}
}

// TestLLMErrorThenMessageRunsAgain: after an LLM error, a message runs the
// agent again.
func TestLLMErrorThenMessageRunsAgain(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Status: 401, Error: "invalid api key"}, llmtest.Reply{Text: "working now"})
	id := e.create(map[string]any{"initial_message": userMessage("first", true)})
	e.waitStatus(id, "error")
	if r := e.post("/api/conversations/"+id+"/events", userMessage("key fixed, again", true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	e.waitStatus(id, "finished")
	if n := len(e.llm.Requests()); n != 2 {
		t.Fatalf("%d LLM calls, want 2", n)
	}
}

// TestLLMRetriesAreVisible: each retry of a failure that may heal is an
// llm_retry state update (attempt, wait, reason), and the end of the call a
// null one; when the retries run out, a ConversationErrorEvent says so.
func TestLLMRetriesAreVisible(t *testing.T) {
	t.Run("healed", func(t *testing.T) {
		e := newEnv(t, llmtest.Reply{Status: 503, Error: "overloaded"}, llmtest.Reply{Status: 502}, llmtest.Reply{Text: "made it"})
		agent := e.agent()
		agent["llm"].(map[string]any)["num_retries"] = 3
		id := e.create(map[string]any{"initial_message": userMessage("go", true), "agent": agent})
		e.waitStatus(id, "finished")
		retries := llmRetries(t, e.allEvents(id))
		if len(retries) != 3 || retries[2] != nil {
			t.Fatalf("retry notices %v, want two then null", retries)
		}
		first := retries[0]
		if first["attempt"] != 1.0 || first["max_retries"] != 3.0 || first["code"] != "LLMServiceUnavailableError" ||
			!strings.Contains(first["reason"].(string), "HTTP 503") || first["retry_at"] == "" {
			t.Fatalf("first retry notice %v", first)
		}
		if _, ok := first["wait_seconds"].(float64); !ok {
			t.Fatalf("no wait in %v", first)
		}
	})
	t.Run("retries run out", func(t *testing.T) {
		e := newEnv(t, llmtest.Reply{Status: 500, Error: "boom", Repeat: true})
		agent := e.agent()
		agent["llm"].(map[string]any)["num_retries"] = 2
		id := e.create(map[string]any{"initial_message": userMessage("go", true), "agent": agent})
		e.waitStatus(id, "error")
		ev := e.errorEvent(id)
		if ev["code"] != "LLMServiceUnavailableError" || !strings.Contains(ev["detail"].(string), "Gave up after 2 retries") {
			t.Fatalf("error event %v", ev)
		}
		if retries := llmRetries(t, e.allEvents(id)); len(retries) != 3 || retries[1]["attempt"] != 2.0 {
			t.Fatalf("retry notices %v", retries)
		}
	})
}

// llmRetries returns the values of the llm_retry state updates, in order.
func llmRetries(t *testing.T, evs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["kind"] != "ConversationStateUpdateEvent" || ev["key"] != "llm_retry" {
			continue
		}
		raw, _ := json.Marshal(ev["value"])
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
