package agentserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// TestToolsNeverInheritTheServerCredentials: whatever the agent server's
// process environment holds of its own credentials and webhook settings
// (here set in it, as `acs agent-server` gets them, and not removed, as the
// binary does at start), the agent's terminal, the bash API's commands and
// hooks start without them, and keep the rest of the environment. What
// they saw is written to files, which no masking touches.
func TestToolsNeverInheritTheServerCredentials(t *testing.T) {
	withheld := map[string]string{
		"OH_SESSION_API_KEYS_0":      "env-session-key-7d1f0c",
		"SESSION_API_KEY":            "env-single-key-2b6e94",
		"OH_SECRET_KEY":              "env-sealing-key-51c0aa",
		"OH_WEBHOOKS_0_BASE_URL":     "http://127.0.0.1:9/api/v1/webhooks",
		"OH_WEBHOOKS_0_HEADERS":      `{"X-Hook":"env-hook-header-93e1"}`,
		"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=env-otel-header-0f4d",
	}
	for k, v := range withheld {
		t.Setenv(k, v)
	}
	t.Setenv("CRED_TEST_VISIBLE", "yes")
	out := t.TempDir()
	dump := func(name string) string { return "env > " + filepath.Join(out, name) }
	e := newEnv(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": dump("terminal.env"), "security_risk": "LOW", "summary": "env"}}}},
		finishCall())
	hooks := map[string]any{"user_prompt_submit": []any{map[string]any{"hooks": []any{
		map[string]any{"type": "command", "command": dump("hook.env")}}}}}
	id := e.create(map[string]any{"hook_config": hooks, "initial_message": userMessage("dump the environment", true)}, "terminal")
	e.waitStatus(id, "finished")
	if r := e.post("/api/bash/execute_bash_command", map[string]any{"command": dump("bash.env")}); r.status != 200 {
		t.Fatalf("bash API: %d %s", r.status, r.body)
	}
	for _, who := range []string{"terminal", "hook", "bash"} {
		b, err := os.ReadFile(filepath.Join(out, who+".env"))
		if err != nil {
			t.Errorf("%s: %v", who, err)
			continue
		}
		env := "\n" + string(b)
		if !strings.Contains(env, "\nCRED_TEST_VISIBLE=yes\n") || !strings.Contains(env, "\nPATH=") {
			t.Errorf("%s lost ordinary variables:\n%s", who, b)
		}
		for name, value := range withheld {
			if strings.Contains(env, "\n"+name+"=") || strings.Contains(env, value) {
				t.Errorf("%s sees %s", who, name)
			}
		}
	}
}

// TestServerCredentialsAreMasked: the session keys and the secret key are
// secrets of the server's masker: printed by the agent's terminal or a bash
// API command (from a file, where no environment filter helps), they read
// <secret-hidden> in the events, the bash events and the LLM's requests.
func TestServerCredentialsAreMasked(t *testing.T) {
	const second, sealing = "second-session-key-6c2a91", "sealing-key-for-masking-4e07"
	e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) {
		c.SessionKeys = []string{testKey, second}
		c.SecretKey = sealing
	}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "cat keys.txt", "security_risk": "LOW", "summary": "print"}}}},
		finishCall())
	writeFiles(t, e.work, map[string]string{"keys.txt": "keys: " + testKey + " " + second + " " + sealing + "\n"})

	id := e.create(map[string]any{"initial_message": userMessage("print keys.txt", true)}, "terminal")
	e.waitStatus(id, "finished")
	r := e.post("/api/bash/execute_bash_command", map[string]any{"command": "cat " + filepath.Join(e.work, "keys.txt")})
	if r.status != 200 {
		t.Fatalf("bash API: %d %s", r.status, r.body)
	}
	bashEvents := e.call("GET", "/api/bash/bash_events/search?limit=100", nil)
	places := map[string]string{"the events": string(mustJSON(e.allEvents(id))), "the bash answer": string(r.body),
		"the bash events": string(bashEvents.body)}
	for i, req := range e.llm.Requests() {
		places[fmt.Sprintf("LLM request %d", i)] = string(req.Body)
	}
	masked := 0
	for where, text := range places {
		for _, k := range []string{testKey, second, sealing} {
			if strings.Contains(text, k) {
				t.Errorf("%s hold %q", where, k)
			}
		}
		if strings.Contains(text, "keys: <secret-hidden> <secret-hidden> <secret-hidden>") ||
			strings.Contains(text, `keys: \u003csecret-hidden\u003e \u003csecret-hidden\u003e \u003csecret-hidden\u003e`) {
			masked++
		}
	}
	if masked < 3 {
		t.Errorf("the printed keys read masked in %d places, want the events, the bash answer and events, and the LLM request", masked)
	}
}
