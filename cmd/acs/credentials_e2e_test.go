package main_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/gittest"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// credMCPServer, set in the environment, makes this test binary an MCP
// stdio server (the mcptest tools, prefixed "probe_") instead of running
// tests: the sandbox starts it as a plugin's tool server.
const credMCPServer = "ACS_E2E_MCP_STDIO_SERVER"

// credMCPMain, called first by TestMain, runs the MCP server mode of the
// test binary (and exits) when credMCPServer is set.
func credMCPMain() {
	if os.Getenv(credMCPServer) != "1" {
		return
	}
	if err := mcptest.RunStdio(context.Background(), "probe_", os.Getenv("API_TOKEN")); err != nil {
		fmt.Fprintln(os.Stderr, "mcp test server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// credProbe prints, from a process the agent server started, what it can
// find of the server's session key: its own environment, the variables by
// name, and the server's /proc/<pid>/environ (its parent's), with the
// parent's command line to show whose environment was read.
const credProbe = `echo "probe:$0"; env; echo "key=[${OH_SESSION_API_KEYS_0:-}][${SESSION_API_KEY:-}][${OH_WEBHOOKS_0_BASE_URL:-}]"; ` +
	`echo "parent=[$(tr '\0' ' ' < /proc/$PPID/cmdline)]"; cat /proc/$PPID/environ 2>&1 | tr '\0' '\n'; echo "probe done"`

// TestSandboxToolsNeverSeeTheSessionKey: the agent's terminal, the bash
// API, a project hook, the project's setup script and an MCP stdio server
// look for the sandbox's session key (which authenticates the agent server
// and the control plane's webhooks) in their environment and in the agent
// server's /proc/<pid>/environ: they find none of it, it is in no event, no
// LLM request, no download and no file under the data directory. And when
// the key reaches output by other means (a file the agent prints), it is
// masked like a secret.
func TestSandboxToolsNeverSeeTheSessionKey(t *testing.T) {
	git := gittest.New(t)
	git.Create(t, "acme", "keyprobe", gittest.Repo{Files: map[string]string{
		"README.md":           "# keyprobe\n",
		".openhands/setup.sh": "{\n" + credProbe + "\n} > .setup-probe.txt 2>&1\n",
		".openhands/hooks.json": mustCredJSON(map[string]any{"user_prompt_submit": []any{map[string]any{"hooks": []any{
			map[string]any{"type": "command", "command": "{ " + credProbe + "; } 2>&1 | tee .hook-probe.txt"}}}}}),
	}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const mcpToken = "probe-mcp-token-3c9e1f"
	call := func(tag, name string, args map[string]any) llmtest.Reply {
		return llmtest.Reply{MatchText: tag, ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: args}}}
	}
	s, llm, dataDir := lcServe(t, []llmtest.Reply{
		call("tag-keyprobe", "terminal", map[string]any{"command": credProbe, "security_risk": "LOW", "summary": "probe"}),
		call("tag-keyprobe", "probe_getenv", map[string]any{"name": "OH_SESSION_API_KEYS_0"}),
		call("tag-keyprobe", "probe_getenv", map[string]any{"name": "SESSION_API_KEY"}),
		call("tag-keyprobe", "finish", map[string]any{"message": "probed"}),
		call("tag-planted", "terminal", map[string]any{"command": "cat planted.txt", "security_risk": "LOW", "summary": "print"}),
		call("tag-planted", "finish", map[string]any{"message": "printed-the-planted-file"}),
	}, "ACS_GIT_HOST="+git.URL)

	tk, err := s.api(apiKey).StartConversation(t.Context(), startBody(t, map[string]any{
		"selected_repository": "acme/keyprobe",
		"initial_message":     msg("tag-keyprobe: look for the key"),
		"plugins": []any{map[string]any{"source": "inline", "mcp_servers": map[string]any{"probe": map[string]any{
			"command": self, "args": []string{"-test.run=^$"},
			"env": map[string]string{credMCPServer: "1", "API_TOKEN": mcpToken}}}}},
	}))
	s.ok(err, 200, "start")
	convID, sbID := lcReady(s, apiKey, tk.ID)
	lcWaitFinished(s, apiKey, convID)
	lcSettled(s, apiKey, convID)
	c := s.conv(apiKey, convID)
	key := deref(c.SessionAPIKey)
	if len(key) < 20 {
		t.Fatalf("the conversation's session key %q", key)
	}
	agentBase := strings.TrimSuffix(deref(c.ConversationURL), "/api/conversations/"+convID)
	project := filepath.Join(lcSandboxDir(dataDir, sbID), "workspace", "keyprobe")

	// probeSaw checks one probe's output: it ran in a child of the agent
	// server, saw an ordinary environment, and found no key at all (not
	// even masked: the key must never reach a tool).
	probeSaw := func(who, out string) {
		t.Helper()
		for _, want := range []string{"probe done", "PATH=", "key=[][][]", "agent-server"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the probe's output lacks %q:\n%s", who, want, out)
			}
		}
		for _, bad := range []string{key, "<secret-hidden>", "OH_SESSION_API_KEYS_0=" + key[:8]} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the probe found the session key (%q):\n%s", who, bad, out)
			}
		}
	}

	// 1. The setup script and the hook wrote what they saw to the project.
	for who, file := range map[string]string{"the setup script": ".setup-probe.txt", "the user_prompt_submit hook": ".hook-probe.txt"} {
		b, err := os.ReadFile(filepath.Join(project, file))
		if err != nil {
			t.Errorf("%s left no output: %v", who, err)
			continue
		}
		probeSaw(who, string(b))
	}

	// 2. The agent's terminal and the MCP server, as the events show them.
	evs := credRawEvents(s, apiKey, convID)
	var terminalOut, mcpOut []string
	for _, ev := range evs {
		if ev["kind"] != "ObservationEvent" {
			continue
		}
		obs, _ := ev["observation"].(map[string]any)
		text := string(mustCredJSONBytes(obs["content"]))
		switch ev["tool_name"] {
		case "terminal":
			var items []struct {
				Text string `json:"text"`
			}
			json.Unmarshal(mustCredJSONBytes(obs["content"]), &items)
			if len(items) > 0 {
				terminalOut = append(terminalOut, items[0].Text)
			}
		case "probe_getenv":
			mcpOut = append(mcpOut, text)
		}
	}
	if len(terminalOut) != 1 {
		t.Fatalf("want one terminal observation, got %d: %v", len(terminalOut), terminalOut)
	}
	probeSaw("the agent's terminal", terminalOut[0])
	if len(mcpOut) != 2 || !strings.Contains(mcpOut[0], "OH_SESSION_API_KEYS_0 is unset") || !strings.Contains(mcpOut[1], "SESSION_API_KEY is unset") {
		t.Errorf("the MCP server's getenv answers: %v", mcpOut)
	}

	// 3. The bash API (what a client's IDE terminal and the setup step use).
	// Its output may come in several events: join them.
	agent := client.NewAgent(agentBase, key, client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}))
	final, err := agent.ExecuteBash(t.Context(), &agentwire.ExecuteBashRequest{Command: credProbe, Timeout: agentwire.DefaultBashTimeout})
	if err != nil {
		t.Fatalf("bash API: %v", err)
	}
	page, err := agent.SearchBashEvents(t.Context(), client.Filter{"kind__eq": {"BashOutput"}, "limit": {"100"}, "command_id__eq": {final.CommandID}})
	if err != nil {
		t.Fatalf("bash events of the probe: %v", err)
	}
	outputs := make([]agentwire.BashOutput, len(page.Items))
	for i, raw := range page.Items {
		if err := json.Unmarshal(raw, &outputs[i]); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(outputs, func(i, j int) bool { return outputs[i].Order < outputs[j].Order })
	var bashOut strings.Builder
	for _, o := range outputs {
		bashOut.WriteString(deref(o.Stdout))
	}
	probeSaw("the bash API", bashOut.String())

	// 4. Nowhere at rest: no file under the data directory (store, event
	// logs, bash events, the agent server's log, the workspace) holds it.
	if files, found := rulesScan(t, dataDir, map[string]string{"the session key": key}); len(found) > 0 {
		t.Errorf("the session key is at rest: %v", found)
	} else if files < 10 {
		t.Fatalf("scanned only %d files: the scan proves nothing", files)
	}

	// 5. Second wall: the key put in a file by other means (here the test)
	// and printed by the agent is masked.
	if err := os.WriteFile(filepath.Join(project, "planted.txt"), []byte("planted: "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lcSend(s, apiKey, convID, "tag-planted: print planted.txt", true)
	var all string
	testwait.For(t, 60*time.Second, "the second run to finish", func() bool {
		all = string(mustCredJSONBytes(credRawEvents(s, apiKey, convID)))
		return strings.Contains(all, "printed-the-planted-file") && lcExec(s.conv(apiKey, convID)) == "finished"
	})
	lcSettled(s, apiKey, convID)
	evs = credRawEvents(s, apiKey, convID)
	all = string(mustCredJSONBytes(evs))
	if !strings.Contains(all, "planted: <secret-hidden>") {
		t.Errorf("the printed key is not masked in the events")
	}

	// The key is in no event (V1 and agent server), no LLM request, no
	// WebSocket-visible API answer and not in the download.
	// Raw on purpose: the answers' bytes are scanned for the key.
	code, agentEvents, err := lcAgent(agentBase, key, "/api/conversations/"+convID+"/events/search?limit=100")
	if err != nil || code != 200 {
		t.Fatalf("agent server events: %d %v", code, err)
	}
	var bashEvents []byte
	if code, bashEvents, err = lcAgent(agentBase, key, "/api/bash/bash_events/search?limit=100"); err != nil || code != 200 {
		t.Fatalf("bash events: %d %v", code, err)
	}
	places := map[string][]byte{"the V1 events": []byte(all), "the agent server's events": agentEvents, "the bash events": bashEvents}
	for i, r := range llm.Requests() {
		places[fmt.Sprintf("LLM request %d", i)] = r.Body
	}
	dl, err := s.api(apiKey).DownloadConversation(t.Context(), convID)
	s.ok(err, 200, "download")
	zr, err := zip.NewReader(bytes.NewReader(dl), int64(len(dl)))
	if err != nil {
		t.Fatalf("download is not a zip: %v", err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		places["the download's "+f.Name] = b
	}
	sawPlanted := false
	for where, b := range places {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the session key", where)
		}
		sawPlanted = sawPlanted || bytes.Contains(b, []byte("planted: <secret-hidden>"))
	}
	if !lcSawMessage(llm, "tag-planted") || !sawPlanted || len(zr.File) < len(evs) {
		t.Fatalf("the checks saw too little: planted output %v, %d download entries for %d events", sawPlanted, len(zr.File), len(evs))
	}
}

// credRawEvents reads every V1 event of a conversation as the answers
// carry them (every field kept, not decoded into the event types), for the
// scans for the key.
func credRawEvents(s *acsServe, key, convID string) []map[string]any {
	s.t.Helper()
	var out []map[string]any
	page := ""
	for {
		path := "/api/v1/conversation/" + convID + "/events/search?limit=100"
		if page != "" {
			path += "&page_id=" + page
		}
		var p struct {
			Items      []map[string]any `json:"items"`
			NextPageID *string          `json:"next_page_id"`
		}
		s.do("GET", path, nil, key).into(&p)
		out = append(out, p.Items...)
		if p.NextPageID == nil {
			return out
		}
		page = *p.NextPageID
	}
}

// credAgentPost posts JSON to an agent server with its session key.
func credAgentPost(t *testing.T, base, key, path string, body, out any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(mustCredJSONBytes(body)))
	req.Header.Set("X-Session-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v %s", path, err, b)
	}
}

// mustCredJSONBytes encodes v without HTML escaping (so <secret-hidden>
// reads as itself).
func mustCredJSONBytes(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func mustCredJSON(v any) string { return string(mustCredJSONBytes(v)) }
