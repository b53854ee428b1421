package agentserver_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// newEnvWith is newEnv with tool servers given 10 s to connect and a hook
// to adjust the configuration before the server starts.
func newEnvWith(t testing.TB, adjust func(*agentserver.Config), replies ...llmtest.Reply) *env {
	t.Helper()
	return buildEnv(t, envOptions{adjust: func(c *agentserver.Config) {
		c.MCPConnectTimeout = 10 * time.Second
		if adjust != nil {
			adjust(c)
		}
	}}, replies...)
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func eventsOfKind(evs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["kind"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

func finishCall() llmtest.Reply {
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}}
}

// TestSkills loads repository, user and organisation skills: always-on ones
// reach the system prompt, a keyword skill joins the message that names it
// (once), and a malformed file is reported without stopping anything.
func TestSkills(t *testing.T) {
	userDir, orgDir := t.TempDir(), t.TempDir()
	writeFiles(t, userDir, map[string]string{
		"style.md":  "---\nname: style\n---\nUser style: prefer tabs.",
		"review.md": "---\nname: review\ntriggers: [review]\n---\nUser review checklist.",
	})
	writeFiles(t, orgDir, map[string]string{
		"review.md": "---\nname: review\ntriggers: [review]\n---\nOrg review checklist wins over the user's.",
	})
	e := newEnvWith(t, func(c *agentserver.Config) { c.SkillDirs = skills.Dirs{User: userDir, Org: orgDir} },
		llmtest.Reply{Text: "ok"}, llmtest.Reply{Text: "ok again"}, llmtest.Reply{Text: "reviewed"})
	writeFiles(t, e.work, map[string]string{
		"AGENTS.md":                        "Always run make lint before committing.",
		".openhands/skills/deploy.md":      "---\nname: deploy\ntriggers:\n  - deploy\n  - ship it\n---\nDeploy with ./ship.sh --prod.",
		".openhands/microagents/broken.md": "---\nname: [unclosed\ntriggers: deploy\n---\nbody",
	})
	id := e.create(map[string]any{"initial_message": userMessage("Please DEPLOY the app; github is fine.", true)})
	e.waitStatus(id, "finished")

	reqs := e.llm.Requests()
	sys := reqs[0].Messages[0].Text()
	for _, want := range []string{"Always run make lint", "User style: prefer tabs."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if user := reqs[0].Messages[len(reqs[0].Messages)-1].Text(); !strings.Contains(user, "Deploy with ./ship.sh --prod.") ||
		!strings.Contains(user, `keyword match for "deploy"`) {
		t.Errorf("the LLM did not get the activated skill:\n%s", user)
	}
	evs := e.allEvents(id)
	msg := eventsOfKind(evs, "MessageEvent")[0]
	if got := mustJSON(msg["activated_skills"]); string(bytes.TrimSpace(got)) != `["deploy"]` {
		t.Errorf("activated_skills %s", got)
	}
	errs := eventsOfKind(evs, "ConversationErrorEvent")
	if len(errs) != 1 || errs[0]["code"] != "SkillLoadError" || !strings.Contains(errs[0]["detail"].(string), "broken.md") {
		t.Fatalf("want one SkillLoadError naming broken.md, got %v", errs)
	}

	// Once fired, a skill does not fire again; another trigger word fires
	// the org's version of a skill the user also has.
	e.post("/api/conversations/"+id+"/events", userMessage("deploy once more", true))
	e.waitStatus(id, "finished")
	e.post("/api/conversations/"+id+"/events", userMessage("now review it", true))
	e.waitStatus(id, "finished")
	msgs := eventsOfKind(e.allEvents(id), "MessageEvent")
	var users []map[string]any
	for _, m := range msgs {
		if m["source"] == "user" {
			users = append(users, m)
		}
	}
	if len(users) != 3 || len(users[1]["activated_skills"].([]any)) != 0 {
		t.Fatalf("deploy fired twice: %v", users[1]["activated_skills"])
	}
	if ext := string(mustJSON(users[2]["extended_content"])); !strings.Contains(ext, "Org review checklist") {
		t.Fatalf("org skill did not win: %s", ext)
	}
	var info map[string]any
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if got := string(bytes.TrimSpace(mustJSON(info["activated_knowledge_skills"]))); got != `["deploy","review"]` {
		t.Errorf("activated_knowledge_skills %s", got)
	}

	// POST /api/skills lists the project's skills with the problems.
	r := e.post("/api/skills", map[string]any{"project_dir": e.work, "load_user": false, "load_org": false, "load_public": false})
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"deploy"`) || !strings.Contains(string(r.body), "broken.md") {
		t.Fatalf("skills: %d %s", r.status, r.body)
	}
	if r := e.post("/api/skills", map[string]any{"project_dir": "/etc"}); r.status != 422 {
		t.Fatalf("project_dir outside the workspace: %d %s", r.status, r.body)
	}
	if r := e.post("/api/skills", map[string]any{"project_dirs": e.work}); r.status != 422 {
		t.Fatalf("unknown field: %d", r.status)
	}
}

// TestHooks runs hooks from the project's hooks.json and from hook_config:
// blocking a tool call, observing results, adding context to and blocking
// user messages, denying a stop once, and surviving a hook that hangs or
// floods its output.
func TestHooks(t *testing.T) {
	term := func(cmd string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": cmd}}}}
	}
	e := newEnv(t,
		term("rm -rf /tmp/nothing-here"),
		term("echo allowed"),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "think", Arguments: map[string]any{"thought": "slow hooks"}}}},
		finishCall(),
		finishCall(),
	)
	logDir := t.TempDir()
	writeFiles(t, e.work, map[string]string{".openhands/hooks.json": `{"hooks": {
		"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command",
			"command": "if grep -q 'rm -rf' ; then echo 'dangerous command' >&2; exit 2; fi"}]}],
		"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "cat >> ` + logDir + `/post.log; echo >> ` + logDir + `/post.log"}]}],
		"UserPromptSubmit": [{"hooks": [{"type": "command",
			"command": "if grep -q forbidden; then echo '{\"decision\":\"deny\",\"reason\":\"no forbidden words\"}'; else echo '{\"additionalContext\":\"context from the hook\"}'; fi"}]}],
		"Stop": [{"hooks": [{"type": "command",
			"command": "if [ ! -f ` + logDir + `/stopped ]; then touch ` + logDir + `/stopped; echo 'run the tests first' >&2; exit 2; fi"}]}],
		"SessionStart": [{"hooks": [{"type": "command", "command": "echo \"$OPENHANDS_EVENT_TYPE $OPENHANDS_SESSION_ID\" > ` + logDir + `/session"}]}]
	}}`})
	hookConfig := map[string]any{"pre_tool_use": []any{map[string]any{"matcher": "think", "hooks": []any{
		map[string]any{"type": "command", "command": "sleep 30", "timeout": 1},
		map[string]any{"type": "command", "command": "head -c 5000000 /dev/zero | tr '\\0' x"},
	}}}}
	id := e.create(map[string]any{"hook_config": hookConfig, "initial_message": userMessage("clean up", true)}, "terminal")
	start := time.Now()
	e.waitStatus(id, "finished")
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %v: a hanging hook held the agent", d)
	}
	evs := e.allEvents(id)

	rejects := eventsOfKind(evs, "UserRejectObservation")
	if len(rejects) != 1 || rejects[0]["rejection_source"] != "hook" || !strings.Contains(rejects[0]["rejection_reason"].(string), "dangerous command") {
		t.Fatalf("want one hook rejection, got %v", rejects)
	}
	obs := eventsOfKind(evs, "ObservationEvent")
	if !strings.Contains(string(mustJSON(obs)), "allowed") {
		t.Fatal("the allowed command did not run")
	}
	post, _ := os.ReadFile(filepath.Join(logDir, "post.log"))
	if !strings.Contains(string(post), `"event_type":"PostToolUse"`) || !strings.Contains(string(post), "allowed") {
		t.Errorf("post_tool_use hook input: %s", post)
	}
	msg := eventsOfKind(evs, "MessageEvent")[0]
	if !strings.Contains(string(mustJSON(msg["extended_content"])), "context from the hook") {
		t.Errorf("additionalContext missing from extended_content: %v", msg["extended_content"])
	}
	// The stop hook denied the first finish: the agent was told why and
	// finished on its second attempt.
	if !strings.Contains(string(mustJSON(evs)), "run the tests first") {
		t.Error("the stop hook's reason did not reach the agent")
	}
	if n := len(eventsOfKind(evs, "ActionEvent")); n != 5 {
		t.Errorf("want 5 actions (2 terminal, think, 2 finish), got %d", n)
	}
	var timedOut, truncated bool
	for _, ev := range eventsOfKind(evs, "ConversationStateUpdateEvent") {
		if ev["key"] != "hook_execution" {
			continue
		}
		for _, x := range ev["value"].(map[string]any)["executions"].([]any) {
			ex := x.(map[string]any)
			timedOut = timedOut || ex["timed_out"] == true
			if s, _ := ex["stdout"].(string); len(s) < 100000 && strings.HasPrefix(s, "xxxx") {
				truncated = true
			}
		}
	}
	if !timedOut || !truncated {
		t.Errorf("hook_execution should report the timeout (%v) and the bounded output (%v)", timedOut, truncated)
	}
	if b, _ := os.ReadFile(filepath.Join(logDir, "session")); !strings.HasPrefix(string(b), "SessionStart ") {
		t.Errorf("session_start hook: %q", b)
	}

	// A blocked message is kept but never reaches the LLM.
	calls := len(e.llm.Requests())
	e.post("/api/conversations/"+id+"/events", userMessage("a forbidden request", true))
	// Legitimate sleep: nothing to wait for when the rule holds; a run the
	// block failed to stop would reach the LLM within this quiet period.
	time.Sleep(300 * time.Millisecond)
	if len(e.llm.Requests()) != calls {
		t.Fatal("a blocked message reached the LLM")
	}
	var info map[string]any
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if !strings.Contains(string(mustJSON(info["blocked_messages"])), "no forbidden words") {
		t.Errorf("blocked_messages: %v", info["blocked_messages"])
	}

	// POST /api/hooks returns the project's file; a bad hook_config is 422.
	r := e.post("/api/hooks", map[string]any{"project_dir": e.work})
	if r.status != 200 || !strings.Contains(string(r.body), `"pre_tool_use"`) {
		t.Fatalf("hooks: %d %s", r.status, r.body)
	}
	r = e.post("/api/conversations", map[string]any{"agent": e.agent(), "workspace": map[string]any{"working_dir": e.work},
		"hook_config": map[string]any{"pre_tool_use": []any{map[string]any{"matcher": "(", "hooks": []any{}}}}})
	if r.status != 422 || !strings.Contains(string(r.body), "hook_config") {
		t.Fatalf("bad hook_config: %d %s", r.status, r.body)
	}
}

// TestHooksSeeLiveSecrets updates a conversation's secrets and checks that
// the next hook run has the new values in its environment (read from a file
// the hook writes), while the hook's output in the events stays masked.
func TestHooksSeeLiveSecrets(t *testing.T) {
	const (
		oldVal   = "hook-old-5e6f7a8b"
		newVal   = "hook-new-1c2d3e4f"
		addedVal = "hook-added-9a8b7c6d"
	)
	e := newEnv(t)
	logDir := t.TempDir()
	envLog := filepath.Join(logDir, "env.log")
	hookConfig := map[string]any{"user_prompt_submit": []any{map[string]any{"hooks": []any{
		map[string]any{"type": "command", "command": `printf '%s|%s\n' "$HOOK_TOKEN" "${ADDED_TOKEN:-unset}" | tee -a ` + envLog},
	}}}}
	id := e.create(map[string]any{"hook_config": hookConfig, "secrets": map[string]any{"HOOK_TOKEN": oldVal}}, "terminal")
	send := func(text string) {
		t.Helper()
		if r := e.post("/api/conversations/"+id+"/events", userMessage(text, false)); r.status != 200 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
	}
	send("first")
	if r := e.post("/api/conversations/"+id+"/secrets", map[string]any{"secrets": map[string]any{
		"HOOK_TOKEN": newVal, "ADDED_TOKEN": addedVal}}); r.status != 200 {
		t.Fatalf("update secrets: %d %s", r.status, r.body)
	}
	send("second")
	b, err := os.ReadFile(envLog)
	if err != nil {
		t.Fatal(err)
	}
	if want := oldVal + "|unset\n" + newVal + "|" + addedVal + "\n"; string(b) != want {
		t.Fatalf("hook environment over the two messages:\n%s\nwant:\n%s", b, want)
	}
	all := mustJSON(e.allEvents(id))
	if !bytes.Contains(all, []byte(`"hook_execution"`)) {
		t.Fatalf("no hook_execution recorded: %s", all)
	}
	for _, v := range []string{oldVal, newVal, addedVal} {
		if bytes.Contains(all, []byte(v)) {
			t.Errorf("events contain secret %q", v)
		}
	}
}

// TestPluginsAndMCP attaches plugins whose MCP servers (stdio and
// streamable HTTP) need the conversation's API_TOKEN secret, plus one whose
// server cannot start, and a plugin cloned from git.
func TestPluginsAndMCP(t *testing.T) {
	const token = "tok-plugin-5b8c2e91"
	dir := t.TempDir()
	expect := filepath.Join(dir, "expected-token")
	os.WriteFile(expect, []byte(token), 0o600)
	remote := httptest.NewServer(mcptest.RequireBearer(token, mcptest.HTTPHandler("remote_", token)))
	defer remote.Close()

	local := filepath.Join(dir, "local-plugin")
	writeFiles(t, local, map[string]string{
		".mcp.json": `{"mcpServers": {"local": {"command": "` + os.Args[0] + `", "args": ["-test.run=^$"],
			"env": {"ACS_MCP_TEST_SERVER": "stdio", "ACS_MCP_TEST_PREFIX": "local_", "ACS_MCP_EXPECT_FILE": "` + expect + `",
			        "API_TOKEN": "${API_TOKEN}", "SKILL_DIR": "${SKILL_ROOT}"}}}}`,
		"skills/plugin-skill.md": "---\nname: plugin-skill\n---\nPlugin guidance: use the local tools.",
	})
	repo := filepath.Join(dir, "git-plugin")
	writeFiles(t, repo, map[string]string{"skills/from-git.md": "---\nname: from-git\n---\nGuidance cloned from git."})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}

	call := func(name string, args map[string]any) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: args}}}
	}
	e := newEnv(t,
		call("local_echo", map[string]any{"text": "hello over stdio"}),
		call("remote_add", map[string]any{"a": 2, "b": 3}),
		call("local_whoami", map[string]any{}),
		call("local_echo", map[string]any{"text": 42}),
		finishCall(),
	)
	start := time.Now()
	id := e.create(map[string]any{
		"secrets": map[string]any{"API_TOKEN": token},
		"plugins": []any{
			map[string]any{"source": local},
			map[string]any{"source": "inline", "mcp_servers": map[string]any{"remote": map[string]any{
				"url": remote.URL, "headers": map[string]any{"Authorization": "Bearer ${API_TOKEN}"}}}},
			map[string]any{"source": "file://" + repo, "ref": "main"},
			map[string]any{"source": local + "-missing"},
		},
		"initial_message": userMessage("use the tools", true),
	})
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	all := string(mustJSON(evs))
	t.Logf("create to finished with MCP servers: %v", time.Since(start))

	sys := evs[0]
	if sys["kind"] != "SystemPromptEvent" {
		sys = eventsOfKind(evs, "SystemPromptEvent")[0]
	}
	var mcpTools []string
	for _, tl := range sys["tools"].([]any) {
		td := tl.(map[string]any)
		if td["kind"] == "MCPToolDefinition" {
			mcpTools = append(mcpTools, td["title"].(string))
			if td["mcp_tool"] == nil || td["action_type"] != "MCPToolAction" {
				t.Errorf("MCP tool definition %v", td)
			}
		}
	}
	if !strings.Contains(strings.Join(mcpTools, ","), "local_echo") || !strings.Contains(strings.Join(mcpTools, ","), "remote_add") {
		t.Fatalf("MCP tools in the system prompt: %v", mcpTools)
	}
	for _, want := range []string{"[Tool 'local_echo' executed.]", "hello over stdio", "[Tool 'remote_add' executed.]",
		`"kind":"MCPToolAction"`, `"kind":"MCPToolObservation"`} {
		if !strings.Contains(all, want) {
			t.Errorf("events lack %s", want)
		}
	}
	if strings.Contains(all, token) || !strings.Contains(all, "<secret-hidden>") {
		t.Error("whoami's answer (the token) must be masked")
	}
	if strings.Contains(all, mcptest.Unauthorized) {
		t.Error("a server rejected the token taken from the secrets")
	}
	// Arguments that break the tool's schema are an error for the model,
	// not a call.
	if !strings.Contains(all, "Error validating the arguments of local_echo") {
		t.Error("invalid MCP arguments were not refused")
	}
	// The missing plugin is reported; the rest works.
	var codes []string
	for _, ev := range eventsOfKind(evs, "ConversationErrorEvent") {
		codes = append(codes, ev["code"].(string)+": "+ev["detail"].(string))
	}
	if len(codes) != 1 || !strings.Contains(codes[0], "PluginError") || !strings.Contains(codes[0], "local-plugin-missing") {
		t.Errorf("errors: %v", codes)
	}
	sysText := e.llm.Requests()[0].Messages[0].Text()
	for _, want := range []string{"Plugin guidance: use the local tools.", "Guidance cloned from git."} {
		if !strings.Contains(sysText, want) {
			t.Errorf("system prompt lacks plugin skill %q", want)
		}
	}

	// Without the secret, the placeholder cannot be filled: a clear error,
	// quickly, and the conversation still runs.
	e2 := newEnv(t, finishCall())
	start = time.Now()
	id2 := e2.create(map[string]any{
		"plugins":         []any{map[string]any{"source": local}, map[string]any{"source": "inline:dead", "mcp_servers": map[string]any{"dead": map[string]any{"command": "/nonexistent/server"}}}},
		"initial_message": userMessage("go", true),
	})
	e2.waitStatus(id2, "finished")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing servers held the conversation for %v", d)
	}
	var problems []string
	for _, ev := range eventsOfKind(e2.allEvents(id2), "ConversationErrorEvent") {
		problems = append(problems, ev["code"].(string)+": "+ev["detail"].(string))
	}
	joined := strings.Join(problems, "\n")
	if len(problems) != 2 || !strings.Contains(joined, "API_TOKEN") || !strings.Contains(joined, "dead") ||
		!strings.Contains(joined, "MCPConnectionError") {
		t.Fatalf("problems:\n%s", joined)
	}

	// A malformed mcp_servers block is refused at creation.
	r := e2.post("/api/conversations", map[string]any{"agent": e2.agent(), "workspace": map[string]any{"working_dir": e2.work},
		"plugins": []any{map[string]any{"source": "x", "mcp_servers": map[string]any{"s": map[string]any{"comand": "x"}}}}})
	if r.status != 422 || !strings.Contains(string(r.body), "comand") {
		t.Fatalf("bad mcp_servers: %d %s", r.status, r.body)
	}
}

// TestBrowserInConversation drives headless Chromium through the agent: a
// navigation, the page content, and a tab id that breaks the spec's limit
// (an error the model can act on, not a failure).
func TestBrowserInConversation(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><head><title>Fixture</title></head><body><h1>Hello from the fixture</h1><a href="/next">Next page</a></body></html>`))
	}))
	defer site.Close()
	call := func(name string, args map[string]any) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: args}}}
	}
	e := newEnv(t,
		call("browser_navigate", map[string]any{"url": site.URL}),
		call("browser_get_content", map[string]any{"extract_links": true}),
		call("browser_switch_tab", map[string]any{"tab_id": "abc"}),
		finishCall(),
	)
	id := e.create(map[string]any{"initial_message": userMessage("read the page", true)}, "browser_tool_set")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	all := string(mustJSON(evs))
	for _, want := range []string{"Hello from the fixture", "[Next page](" + site.URL + "/next)", `"kind":"BrowserObservation"`} {
		if !strings.Contains(all, want) {
			t.Errorf("events lack %q", want)
		}
	}
	errs := eventsOfKind(evs, "AgentErrorEvent")
	if len(errs) != 1 || !strings.Contains(errs[0]["error"].(string), "tab_id") {
		t.Fatalf("want an argument error naming tab_id, got %v", errs)
	}
}

// TestSecretInToolArgumentsIsMasked: a model that writes a secret's value
// literally into a tool call (and so into the action, the observation and
// the next LLM error) gets masked events, and the conversation runs on.
func TestSecretInToolArgumentsIsMasked(t *testing.T) {
	const token = "literal-tok-4d5e6f7a8b"
	e := newEnv(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "echo " + token}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "used " + token}}}},
	)
	id := e.create(map[string]any{"secrets": map[string]any{"API_TOKEN": token}}, "terminal")
	if r := e.post("/api/conversations/"+id+"/events", userMessage("go", true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertSequence(t, evs, concat(
		[]string{"SystemPromptEvent", "MessageEvent:user", "ConversationStateUpdateEvent:last_user_message_id",
			"ConversationStateUpdateEvent:execution_status=running"},
		toolStep("terminal", "TerminalObservation"),
		toolStep("finish", "FinishObservation"),
		[]string{"ConversationStateUpdateEvent:execution_status=finished"},
	)...)
	assertLinked(t, evs, true)
	all := mustJSON(evs)
	if bytes.Contains(all, []byte(token)) {
		t.Fatalf("events contain the secret: %s", all)
	}
	if !bytes.Contains(all, []byte("<secret-hidden>")) {
		t.Fatalf("no masked value in the events: %s", all)
	}
}
