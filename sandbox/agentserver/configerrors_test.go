package agentserver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// End-to-end tests of bad extension configurations (hooks files, MCP
// configurations, lookup secrets) and of the secret and session lifecycle
// paths that are otherwise only unit-tested.

// conversationErrors renders the conversation's ConversationErrorEvents as
// "code: detail".
func conversationErrors(evs []map[string]any) []string {
	var out []string
	for _, ev := range eventsOfKind(evs, "ConversationErrorEvent") {
		code, _ := ev["code"].(string)
		detail, _ := ev["detail"].(string)
		out = append(out, code+": "+detail)
	}
	return out
}

// assertRanToFinish checks that the conversation reached the LLM and ran its
// finish action despite the configuration problems.
func assertRanToFinish(t *testing.T, evs []map[string]any) {
	t.Helper()
	var finished bool
	for _, ev := range eventsOfKind(evs, "ObservationEvent") {
		if ev["observation"].(map[string]any)["kind"] == "FinishObservation" {
			finished = true
		}
	}
	if !finished {
		t.Fatalf("the conversation did not run to its finish action: %v", signature(evs))
	}
}

// TestProjectHooksFileErrors: a malformed project .openhands/hooks.json (bad
// JSON, then a well-formed file with a bad entry) and a plugin's malformed
// hooks file each give a HookConfigError naming the file and the problem;
// the conversation runs and the request's own hook_config still applies.
func TestProjectHooksFileErrors(t *testing.T) {
	e := newEnv(t, finishCall(), finishCall())
	hooksFile := filepath.Join(e.work, ".openhands", "hooks.json")
	writeFiles(t, e.work, map[string]string{".openhands/hooks.json": `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [}]}}`})
	reqHooks := map[string]any{"user_prompt_submit": []any{map[string]any{"hooks": []any{
		map[string]any{"type": "command", "command": `echo '{"additionalContext":"context from the request hooks"}'`},
	}}}}
	id := e.create(map[string]any{"hook_config": reqHooks, "initial_message": userMessage("go", true)})
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertRanToFinish(t, evs)
	errs := conversationErrors(evs)
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "HookConfigError: ") || !strings.Contains(errs[0], hooksFile) ||
		!strings.Contains(errs[0], "line 1, column 54: JSON decode error: invalid character '}'") {
		t.Fatalf("want one HookConfigError naming %s and the JSON problem, got %q", hooksFile, errs)
	}
	t.Logf("bad JSON: %s", errs[0])
	msg := eventsOfKind(evs, "MessageEvent")[0]
	if !strings.Contains(string(mustJSON(msg["extended_content"])), "context from the request hooks") {
		t.Errorf("the request's hook_config did not apply next to the broken file: %v", msg["extended_content"])
	}

	// Well-formed JSON with an unknown hook event and a command hook without
	// its command; a plugin whose hooks file is not JSON at all.
	writeFiles(t, e.work, map[string]string{".openhands/hooks.json": `{"pre_tool_use": [{"matcher": "*", "hooks": [{"type": "command"}]}], "before_everything": []}`})
	plugin := filepath.Join(t.TempDir(), "hooked-plugin")
	writeFiles(t, plugin, map[string]string{
		"hooks/hooks.json":   "pre_tool_use: yes",
		"skills/guidance.md": "---\nname: guidance\n---\nPlugin guidance survives a broken hooks file.",
	})
	id = e.create(map[string]any{"plugins": []any{map[string]any{"source": plugin}}, "initial_message": userMessage("go", true)})
	e.waitStatus(id, "finished")
	evs = e.allEvents(id)
	assertRanToFinish(t, evs)
	errs = conversationErrors(evs)
	joined := strings.Join(errs, "\n")
	t.Logf("errors:\n%s", joined)
	if len(errs) != 2 {
		t.Fatalf("want two HookConfigErrors, got:\n%s", joined)
	}
	var project, fromPlugin string
	for _, e := range errs {
		if strings.Contains(e, plugin) {
			fromPlugin = e
		} else {
			project = e
		}
	}
	if !strings.HasPrefix(project, "HookConfigError: ") || !strings.Contains(project, hooksFile) ||
		!strings.Contains(project, "before_everything") || !strings.Contains(project, "command") {
		t.Errorf("project hooks error should name the file, the unknown event and the missing command: %q", project)
	}
	if !strings.HasPrefix(fromPlugin, "HookConfigError: ") || !strings.Contains(fromPlugin, filepath.Join(plugin, "hooks", "hooks.json")) ||
		!strings.Contains(fromPlugin, "line 1, column 1: JSON decode error") {
		t.Errorf("plugin hooks error should name the plugin's file and the JSON problem: %q", fromPlugin)
	}
	if sys := e.llm.Requests()[1].SystemText(); !strings.Contains(sys, "Plugin guidance survives a broken hooks file.") {
		t.Errorf("the plugin's skills were dropped with its hooks:\n%s", sys)
	}
}

// TestMCPConfigErrors: an invalid agent.mcp_config entry is refused at
// creation with an error locating it; invalid plugin .mcp.json files (bad
// JSON, a server that is both stdio and remote) give MCPConfigErrors naming
// the plugin, the file and the problem, and the conversation runs.
func TestMCPConfigErrors(t *testing.T) {
	e := newEnv(t, finishCall())
	for name, cfg := range map[string]any{
		"neither command nor url": map[string]any{"broken": map[string]any{"args": []any{"x"}}},
		"not an object":           map[string]any{"broken": "npx server"},
	} {
		a := e.agent()
		a["mcp_config"] = cfg
		r := e.post("/api/conversations", map[string]any{"agent": a, "workspace": map[string]any{"working_dir": e.work}})
		if r.status != 422 || !bytes.Contains(r.body, []byte(`"mcp_config","broken"`)) {
			t.Errorf("%s: want 422 locating agent.mcp_config.broken, got %d %s", name, r.status, r.body)
		}
	}

	dir := t.TempDir()
	badJSON, twoKinds := filepath.Join(dir, "bad-json"), filepath.Join(dir, "two-kinds")
	writeFiles(t, badJSON, map[string]string{".mcp.json": `{"mcpServers": {"srv": {"command": "x",}}}`})
	writeFiles(t, twoKinds, map[string]string{
		".mcp.json":          `{"mcpServers": {"both": {"command": "server", "url": "http://127.0.0.1:1/mcp"}}}`,
		"skills/guidance.md": "---\nname: guidance\n---\nGuidance from the plugin with the bad MCP file.",
	})
	id := e.create(map[string]any{
		"plugins":         []any{map[string]any{"source": badJSON}, map[string]any{"source": twoKinds}},
		"initial_message": userMessage("go", true),
	})
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertRanToFinish(t, evs)
	errs := conversationErrors(evs)
	joined := strings.Join(errs, "\n")
	t.Logf("errors:\n%s", joined)
	if len(errs) != 2 {
		t.Fatalf("want two MCPConfigErrors, got:\n%s", joined)
	}
	for _, e := range errs {
		switch {
		case strings.Contains(e, badJSON):
			if !strings.HasPrefix(e, "MCPConfigError: ") || !strings.Contains(e, ".mcp.json") || !strings.Contains(e, "Invalid JSON") {
				t.Errorf("bad JSON: %q", e)
			}
		case strings.Contains(e, twoKinds):
			if !strings.HasPrefix(e, "MCPConfigError: ") || !strings.Contains(e, ".mcp.json") || !strings.Contains(e, "both") ||
				!strings.Contains(e, "Exactly one of 'command'") {
				t.Errorf("server both stdio and remote: %q", e)
			}
		default:
			t.Errorf("error names neither plugin: %q", e)
		}
	}
	if sys := e.llm.Requests()[0].SystemText(); !strings.Contains(sys, "Guidance from the plugin with the bad MCP file.") {
		t.Errorf("the plugin's skills were dropped with its MCP file:\n%s", sys)
	}
}

// TestLookupSecretUnavailable: lookup secrets whose URL answers 500 or is
// unreachable give SecretUnavailable errors naming the secret (never a value,
// a credential header or the URL's query); the other secrets work and the
// conversation runs.
func TestLookupSecretUnavailable(t *testing.T) {
	const (
		staticVal = "static-val-6b7c8d9e"
		cred      = "Bearer lookup-cred-0f1e2d"
		queryTok  = "query-tok-5a4b3c"
	)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "internal error")
	}))
	defer failing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/secret"
	gone.Close()

	e := newEnv(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": `echo "vals:$STATIC_OK:${BROKEN_LOOKUP:-unset}:${GONE_LOOKUP:-unset}"`}}}},
		finishCall(),
	)
	id := e.create(map[string]any{
		"secrets": map[string]any{
			"STATIC_OK":     staticVal,
			"BROKEN_LOOKUP": map[string]any{"kind": "LookupSecret", "url": failing.URL + "/v?token=" + queryTok, "headers": map[string]string{"Authorization": cred}},
			"GONE_LOOKUP":   map[string]any{"kind": "LookupSecret", "url": goneURL},
		},
		"initial_message": userMessage("print them", true),
	}, "terminal")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertRanToFinish(t, evs)
	errs := conversationErrors(evs)
	joined := strings.Join(errs, "\n")
	t.Logf("errors:\n%s", joined)
	if len(errs) != 2 || !strings.HasPrefix(errs[0], "SecretUnavailable: ") || !strings.HasPrefix(errs[1], "SecretUnavailable: ") {
		t.Fatalf("want two SecretUnavailable errors, got:\n%s", joined)
	}
	if !strings.Contains(joined, "BROKEN_LOOKUP") || !strings.Contains(joined, "HTTP 500") || !strings.Contains(joined, "GONE_LOOKUP") {
		t.Errorf("the errors should name both secrets and the HTTP status:\n%s", joined)
	}
	if !strings.Contains(string(mustJSON(evs)), "vals:<secret-hidden>:unset:unset") {
		t.Errorf("the static secret did not reach the terminal (masked) next to the unavailable ones")
	}
	all := mustJSON(evs)
	for _, v := range []string{staticVal, "lookup-cred-0f1e2d", queryTok} {
		if bytes.Contains(all, []byte(v)) {
			t.Errorf("events contain %q", v)
		}
	}

	// A lookup that fails on POST .../secrets is an error naming it; the
	// conversation keeps running.
	r := e.post("/api/conversations/"+id+"/secrets", map[string]any{"secrets": map[string]any{
		"LATE_LOOKUP": map[string]any{"kind": "LookupSecret", "url": failing.URL + "/late", "headers": map[string]string{"Authorization": cred}}}})
	if r.status != 422 || !bytes.Contains(r.body, []byte("LATE_LOOKUP")) || !bytes.Contains(r.body, []byte("HTTP 500")) ||
		bytes.Contains(r.body, []byte("lookup-cred-0f1e2d")) {
		t.Errorf("failing lookup on update: %d %s", r.status, r.body)
	}
	if r := e.call("GET", "/api/conversations/"+id, nil); r.status != 200 {
		t.Errorf("conversation after the failed update: %d %s", r.status, r.body)
	}
}

// TestSecretsAddedLaterReachLLM: names of secrets added with POST
// .../secrets after the system prompt was sent reach the LLM with the next
// user message (names only, once), while the system prompt stays unchanged.
func TestSecretsAddedLaterReachLLM(t *testing.T) {
	const (
		firstVal = "first-val-1a2b3c"
		laterVal = "later-val-4d5e6f"
	)
	e := newEnv(t, llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"}, llmtest.Reply{Text: "three"})
	id := e.create(map[string]any{"secrets": map[string]any{"FIRST_TOKEN": firstVal}}, "terminal")
	send := func(text string) {
		t.Helper()
		if r := e.post("/api/conversations/"+id+"/events", userMessage(text, true)); r.status != 200 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		e.waitStatus(id, "finished")
	}
	send("first")
	reqs := e.llm.Requests()
	sys := reqs[0].SystemText()
	if !strings.Contains(sys, "FIRST_TOKEN") || strings.Contains(sys, "LATER_TOKEN") {
		t.Fatalf("system prompt secrets:\n%s", sys)
	}

	if r := e.post("/api/conversations/"+id+"/secrets", map[string]any{"secrets": map[string]any{
		"LATER_TOKEN": laterVal, "FIRST_TOKEN": firstVal + "-rotated"}}); r.status != 200 {
		t.Fatalf("update secrets: %d %s", r.status, r.body)
	}
	send("second")
	send("third")
	reqs = e.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("want 3 LLM requests, got %d", len(reqs))
	}
	if reqs[1].SystemText() != sys {
		t.Errorf("the system prompt changed after the update:\n%s", reqs[1].SystemText())
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Text(), "second") || !strings.Contains(last.Text(), "LATER_TOKEN") {
		t.Fatalf("the next user turn does not name the new secret:\n%s", last.Text())
	}
	if strings.Contains(last.Text(), "FIRST_TOKEN") {
		t.Errorf("a replaced secret the LLM already knew was announced again:\n%s", last.Text())
	}
	if strings.Count(string(reqs[2].Body), "LATER_TOKEN") != strings.Count(string(reqs[1].Body), "LATER_TOKEN") {
		t.Errorf("the new secret was announced more than once:\n%s", reqs[2].Body)
	}
	for i, r := range reqs {
		for _, v := range []string{firstVal, laterVal} {
			if bytes.Contains(r.Body, []byte(v)) {
				t.Errorf("LLM request %d contains the value %q", i, v)
			}
		}
	}
	var users []map[string]any
	for _, m := range eventsOfKind(e.allEvents(id), "MessageEvent") {
		if m["source"] == "user" {
			users = append(users, m)
		}
	}
	if len(users) != 3 || !strings.Contains(string(mustJSON(users[1]["extended_content"])), "LATER_TOKEN") ||
		strings.Contains(string(mustJSON(users[2]["extended_content"])), "LATER_TOKEN") {
		t.Errorf("the announcement should be in the second user message's extended_content only: %v", users)
	}
}

// TestSessionEndHook: session_end hooks run when a conversation is deleted
// and when the server closes it, not when a run finishes; session_start
// has run before.
func TestSessionEndHook(t *testing.T) {
	e := newEnv(t, finishCall(), finishCall())
	logDir := t.TempDir()
	hookConfig := func(log, startDelay string) map[string]any {
		cmd := `printf '%s %s\n' "$OPENHANDS_EVENT_TYPE" "$OPENHANDS_SESSION_ID" >> ` + log
		return map[string]any{
			"session_start": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "sleep " + startDelay + "; " + cmd}}}},
			"session_end":   []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd}}}},
		}
	}
	deletedLog, closedLog := filepath.Join(logDir, "deleted.log"), filepath.Join(logDir, "closed.log")
	deleted := e.create(map[string]any{"hook_config": hookConfig(deletedLog, "0"), "initial_message": userMessage("go", true)})
	e.waitStatus(deleted, "finished")
	closed := e.create(map[string]any{"hook_config": hookConfig(closedLog, "0"), "initial_message": userMessage("go", true)})
	e.waitStatus(closed, "finished")

	if r := e.call("DELETE", "/api/conversations/"+deleted, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := read(deletedLog), "SessionStart "+deleted+"\nSessionEnd "+deleted+"\n"; got != want {
		t.Errorf("hooks of the deleted conversation:\n%q\nwant\n%q", got, want)
	}
	if got := read(closedLog); strings.Contains(got, "SessionEnd") {
		t.Errorf("session_end ran for a conversation that was only finished: %q", got)
	}

	// Deleted while its (slow) session_start hook runs: session_start
	// completes, then session_end runs.
	quickLog := filepath.Join(logDir, "quick.log")
	quick := e.create(map[string]any{"hook_config": hookConfig(quickLog, "0.5")})
	if r := e.call("DELETE", "/api/conversations/"+quick, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if got, want := read(quickLog), "SessionStart "+quick+"\nSessionEnd "+quick+"\n"; got != want {
		t.Errorf("hooks of the conversation deleted at once:\n%q\nwant\n%q", got, want)
	}

	e.stop()
	if got, want := read(closedLog), "SessionStart "+closed+"\nSessionEnd "+closed+"\n"; got != want {
		t.Errorf("hooks of the conversation closed with the server:\n%q\nwant\n%q", got, want)
	}
}
