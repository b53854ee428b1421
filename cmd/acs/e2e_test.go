package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

func TestMain(m *testing.M) {
	credMCPMain()
	testbin.Main(m)
}

const apiKey = "e2e-admin-key-0123456789"

// acsServe is a running `acs serve` child process.
type acsServe struct {
	t       testing.TB
	cmd     *exec.Cmd
	url     string
	dataDir string
	log     *bytes.Buffer
}

func startServe(t testing.TB, dataDir, llmURL string, env ...string) *acsServe {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(testbin.ACS(t), "serve", "--addr-file", addrFile)
	cmd.Env = append(os.Environ(), "ACS_ADDR=127.0.0.1:0", "ACS_DATA_DIR="+dataDir, "ACS_API_KEY="+apiKey,
		"LLM_BASE_URL="+llmURL, "LLM_MODEL=openai/e2e-model", "LLM_API_KEY=sk-e2e")
	cmd.Env = append(cmd.Env, env...)
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &acsServe{t: t, cmd: cmd, dataDir: dataDir, log: log}
	t.Cleanup(s.stop)
	if !testwait.Until(30*time.Second, func() bool {
		b, err := os.ReadFile(addrFile)
		s.url = "http://" + string(b)
		return err == nil && len(b) > 0
	}) {
		t.Fatalf("acs serve did not start:\n%s", log)
	}
	return s
}

func (s *acsServe) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			s.t.Errorf("acs serve exited with %v:\n%s", err, s.log)
		}
		// A route that touched an adapter its Needs does not declare would
		// fail in its Lambda function.
		for _, line := range strings.Split(s.log.String(), "\n") {
			if strings.Contains(line, "Needs does not declare") {
				s.t.Errorf("acs serve: %s", line)
			}
		}
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		s.t.Errorf("acs serve did not stop on SIGTERM")
	}
}

func (s *acsServe) call(method, path, body, key string, out any) int {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return res.StatusCode
}

var workDirRE = regexp.MustCompile(`Working directory: (\S+)`)

// script is the scripted agent: run a shell command, create a file, finish.
func script() []llmtest.Reply {
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo shell says hi && pwd", "security_risk": "LOW", "summary": "say hi"}}}, Text: "Let me look around."},
		{Respond: func(req *llmtest.Request) llmtest.Reply {
			wd := workDirRE.FindStringSubmatch(req.SystemText())
			path := "/missing-working-directory/result.md"
			if wd != nil {
				path = filepath.Join(wd[1], "notes", "result.md")
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
				"command": "create", "path": path, "file_text": "# Result\n\nThe agent was here.\n"}}}}
		}},
		{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Ran a command and wrote notes/result.md."}}}},
	}
}

type task struct {
	ID                string  `json:"id"`
	Status            string  `json:"status"`
	Detail            *string `json:"detail"`
	AppConversationID *string `json:"app_conversation_id"`
	SandboxID         *string `json:"sandbox_id"`
	Steps             []struct {
		Status string `json:"status"`
	} `json:"steps"`
}

type conversation struct {
	ID              string          `json:"id"`
	SandboxID       string          `json:"sandbox_id"`
	SandboxStatus   string          `json:"sandbox_status"`
	ExecutionStatus *string         `json:"execution_status"`
	ConversationURL *string         `json:"conversation_url"`
	SessionAPIKey   *string         `json:"session_api_key"`
	Metrics         json.RawMessage `json:"metrics"`
}

// pageAll pages an event search at base (V1 or agent server).
func pageAll(t *testing.T, get func(path string) []byte, base string) []map[string]any {
	t.Helper()
	var out []map[string]any
	page := ""
	for {
		path := base + "?limit=5"
		if page != "" {
			path += "&page_id=" + page
		}
		var p struct {
			Items      []map[string]any `json:"items"`
			NextPageID *string          `json:"next_page_id"`
		}
		if err := json.Unmarshal(get(path), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Items...)
		if p.NextPageID == nil {
			return out
		}
		page = *p.NextPageID
	}
}

func TestEndToEnd(t *testing.T) {
	llm := llmtest.New(script()...)
	defer llm.Close()
	dataDir := t.TempDir()
	s := startServe(t, dataDir, llm.URL)

	if code := s.call("GET", "/api/v1/sandboxes/search", "", "", nil); code != 401 {
		t.Fatalf("no key: %d", code)
	}
	var tk task
	body := `{"initial_message":{"role":"user","content":[{"type":"text","text":"Say hi in the shell and write notes/result.md"}],"run":true}}`
	if code := s.call("POST", "/api/v1/app-conversations", body, apiKey, &tk); code != 200 || tk.Status != "WORKING" {
		t.Fatalf("start: %d %+v", code, tk)
	}
	seen := map[string]bool{}
	testwait.For(t, 60*time.Second, "the start task to be READY", func() bool {
		var tasks []task
		s.call("GET", "/api/v1/app-conversations/start-tasks?ids="+tk.ID, "", apiKey, &tasks)
		tk = tasks[0]
		seen[tk.Status] = true
		if tk.Status == "ERROR" {
			t.Fatalf("start failed: %s\n%s", *tk.Detail, s.log)
		}
		return tk.Status == "READY"
	})
	var steps []string
	for _, st := range tk.Steps {
		steps = append(steps, st.Status)
	}
	if strings.Join(steps, ",") != "WORKING,WAITING_FOR_SANDBOX,PREPARING_REPOSITORY,RUNNING_SETUP_SCRIPT,SETTING_UP_GIT_HOOKS,SETTING_UP_SKILLS,STARTING_CONVERSATION,READY" {
		t.Fatalf("recorded steps %v", steps)
	}
	if tk.AppConversationID == nil || tk.SandboxID == nil {
		t.Fatalf("READY task lacks ids: %+v", tk)
	}
	convID := *tk.AppConversationID

	var conv conversation
	testwait.For(t, 60*time.Second, "the conversation to finish", func() bool {
		var cs []conversation
		s.call("GET", "/api/v1/app-conversations?ids="+convID, "", apiKey, &cs)
		conv = cs[0]
		return conv.ExecutionStatus != nil && *conv.ExecutionStatus == "finished"
	})
	if conv.SandboxStatus != "RUNNING" || conv.SandboxID != *tk.SandboxID || conv.ConversationURL == nil || conv.SessionAPIKey == nil {
		t.Fatalf("conversation record %+v", conv)
	}
	if !strings.HasSuffix(*conv.ConversationURL, "/api/conversations/"+convID) {
		t.Fatalf("conversation_url %s", *conv.ConversationURL)
	}
	if !strings.Contains(string(conv.Metrics), `"prompt_tokens":300`) {
		t.Fatalf("metrics not kept on the record: %s", conv.Metrics)
	}

	// LLM_MODEL and LLM_API_KEY reach the LLM: the "openai/" provider prefix
	// is stripped (llmconfig.APIModel) and the key is the bearer token.
	reqs := llm.Requests()
	if len(reqs) < len(script()) {
		t.Fatalf("the LLM got %d requests, want at least %d", len(reqs), len(script()))
	}
	for i, r := range reqs {
		if r.Model != "e2e-model" {
			t.Errorf("LLM request %d: model %q, want %q", i, r.Model, "e2e-model")
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-e2e" {
			t.Errorf("LLM request %d: Authorization %q, want %q", i, got, "Bearer sk-e2e")
		}
	}

	// The file the agent created is on disk in the sandbox's workspace.
	file := filepath.Join(dataDir, "sandboxes", conv.SandboxID, "workspace", "notes", "result.md")
	if b, err := os.ReadFile(file); err != nil || string(b) != "# Result\n\nThe agent was here.\n" {
		t.Fatalf("created file: %q %v", b, err)
	}

	// The transcript from the control plane's store and from the agent server.
	v1Get := func(path string) []byte {
		var raw json.RawMessage
		if code := s.call("GET", path, "", apiKey, &raw); code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		return raw
	}
	agentBase := strings.TrimSuffix(*conv.ConversationURL, "/api/conversations/"+convID)
	agentGet := func(path string) []byte {
		req, _ := http.NewRequest("GET", agentBase+path, nil)
		req.Header.Set("X-Session-API-Key", *conv.SessionAPIKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("agent server %s: %d %s", path, res.StatusCode, b)
		}
		return b
	}
	var v1Events, agentEvents []map[string]any
	testwait.For(t, 10*time.Second, "the webhook to deliver every event", func() bool {
		agentEvents = pageAll(t, agentGet, "/api/conversations/"+convID+"/events/search")
		v1Events = pageAll(t, v1Get, "/api/v1/conversation/"+convID+"/events/search")
		return len(v1Events) == len(agentEvents)
	})
	want := []string{"SystemPromptEvent", "MessageEvent", "ConversationStateUpdateEvent", "ConversationStateUpdateEvent",
		"ConversationStateUpdateEvent", "ActionEvent", "ObservationEvent", "ConversationStateUpdateEvent", "ActionEvent",
		"ObservationEvent", "ConversationStateUpdateEvent", "ActionEvent", "ObservationEvent", "ConversationStateUpdateEvent"}
	var kinds []string
	for i := range v1Events {
		kinds = append(kinds, v1Events[i]["kind"].(string))
		if v1Events[i]["id"] != agentEvents[i]["id"] {
			t.Fatalf("event %d differs between V1 (%v) and the agent server (%v)", i, v1Events[i]["id"], agentEvents[i]["id"])
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("transcript kinds\n got %v\nwant %v", kinds, want)
	}
	obs := v1Events[6]["observation"].(map[string]any)
	text := obs["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(text, "shell says hi") || !strings.Contains(text, filepath.Join(conv.SandboxID, "workspace")) {
		t.Fatalf("terminal observation %q", text)
	}
	if v1Events[6]["action_id"] != v1Events[5]["id"] {
		t.Fatal("observation does not link to its action")
	}

	// After a restart the sandbox process is gone (PAUSED) and the
	// transcript still reads from the control plane.
	s.stop()
	s2 := startServe(t, dataDir, llm.URL)
	var cs []conversation
	s2.call("GET", "/api/v1/app-conversations?ids="+convID, "", apiKey, &cs)
	if cs[0].SandboxStatus != "PAUSED" || cs[0].ConversationURL != nil {
		t.Fatalf("after restart: %+v", cs[0])
	}
	after := pageAll(t, func(p string) []byte {
		var raw json.RawMessage
		s2.call("GET", p, "", apiKey, &raw)
		return raw
	}, "/api/v1/conversation/"+convID+"/events/search")
	if len(after) != len(v1Events) {
		t.Fatalf("%d events after restart, %d before", len(after), len(v1Events))
	}
}

// A sandbox created through the API reaches RUNNING and is listed.
func TestSandboxesThroughTheAPI(t *testing.T) {
	llm := llmtest.New()
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	var sb struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if code := s.call("POST", "/api/v1/sandboxes", "", apiKey, &sb); code != 200 {
		t.Fatalf("create: %d", code)
	}
	testwait.For(t, 30*time.Second, "the sandbox to run", func() bool {
		var got []*struct {
			Status        string  `json:"status"`
			SessionAPIKey *string `json:"session_api_key"`
			ExposedURLs   []struct {
				Name string `json:"name"`
				URL  string `json:"url"`
			} `json:"exposed_urls"`
		}
		s.call("GET", "/api/v1/sandboxes?id="+sb.ID, "", apiKey, &got)
		return got[0].Status == "RUNNING" && got[0].SessionAPIKey != nil && len(got[0].ExposedURLs) == 1 && got[0].ExposedURLs[0].Name == "AGENT_SERVER"
	})
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	s.call("GET", "/api/v1/sandboxes/search", "", apiKey, &page)
	if len(page.Items) != 1 || page.Items[0].ID != sb.ID {
		t.Fatalf("search: %+v", page)
	}
	var specs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	s.call("GET", "/api/v1/sandbox-specs/search", "", apiKey, &specs)
	if len(specs.Items) == 0 {
		t.Fatal("no sandbox spec")
	}
}
