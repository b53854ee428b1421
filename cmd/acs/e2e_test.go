package main_test

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
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
	log     *testwait.Buffer // its console, safe to read while it runs
	status  *lastStatus      // of the answers the api clients got
}

func startServe(t testing.TB, dataDir, llmURL string, env ...string) *acsServe {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(testbin.ACS(t), "serve", "--addr-file", addrFile)
	cmd.Env = append(os.Environ(), "ACS_ADDR=127.0.0.1:0", "ACS_DATA_DIR="+dataDir, "ACS_API_KEY="+apiKey,
		"LLM_BASE_URL="+llmURL, "LLM_MODEL=openai/e2e-model", "LLM_API_KEY=sk-e2e")
	cmd.Env = append(cmd.Env, env...)
	log := &testwait.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &acsServe{t: t, cmd: cmd, dataDir: dataDir, log: log, status: &lastStatus{}}
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

// eventsOf collects every event of a search, page after page (five a
// page, so the transcripts span pages).
func eventsOf(t *testing.T, seq iter.Seq2[events.Event, error]) []events.Event {
	t.Helper()
	var out []events.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

var pageOfFive = client.Filter{"limit": {"5"}}

func TestEndToEnd(t *testing.T) {
	llm := llmtest.New(script()...)
	defer llm.Close()
	dataDir := t.TempDir()
	s := startServe(t, dataDir, llm.URL)
	ctx := t.Context()
	c := s.api(apiKey)

	if _, err := s.api("").SearchSandboxes(ctx, nil); client.StatusOf(err) != 401 || !errors.Is(err, acs.ErrUnauthorized) {
		t.Fatalf("no key: %v", err)
	}
	tk, err := c.StartConversation(ctx, startBody(t, `{"initial_message":{"role":"user","content":[{"type":"text","text":"Say hi in the shell and write notes/result.md"}],"run":true}}`))
	if err != nil || tk.Status != "WORKING" {
		t.Fatalf("start: %v %+v", err, tk)
	}
	testwait.For(t, 60*time.Second, "the start task to be READY", func() bool {
		tasks, err := c.GetStartTasks(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		tk = *tasks[0]
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

	var conv v1wire.Conversation
	testwait.For(t, 60*time.Second, "the conversation to finish", func() bool {
		conv, err = c.GetConversation(ctx, convID)
		if err != nil {
			t.Fatal(err)
		}
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
	agent, err := client.AgentOf(conv)
	if err != nil {
		t.Fatal(err)
	}
	var v1Events, agentEvents []events.Event
	testwait.For(t, 10*time.Second, "the webhook to deliver every event", func() bool {
		agentEvents = eventsOf(t, agent.Events(ctx, convID, pageOfFive))
		v1Events = eventsOf(t, c.Events(ctx, convID, pageOfFive))
		return len(v1Events) == len(agentEvents)
	})
	want := []string{"SystemPromptEvent", "MessageEvent", "ConversationStateUpdateEvent", "ConversationStateUpdateEvent",
		"ConversationStateUpdateEvent", "ActionEvent", "ObservationEvent", "ConversationStateUpdateEvent", "ActionEvent",
		"ObservationEvent", "ConversationStateUpdateEvent", "ActionEvent", "ObservationEvent", "ConversationStateUpdateEvent"}
	var kinds []string
	for i := range v1Events {
		kinds = append(kinds, v1Events[i].Kind())
		if v1Events[i].EventBase().ID != agentEvents[i].EventBase().ID {
			t.Fatalf("event %d differs between V1 (%v) and the agent server (%v)", i, v1Events[i].EventBase().ID, agentEvents[i].EventBase().ID)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("transcript kinds\n got %v\nwant %v", kinds, want)
	}
	obs := v1Events[6].(*events.ObservationEvent)
	text := obs.Observation.Common().Content[0].(*events.TextContent).Text
	if !strings.Contains(text, "shell says hi") || !strings.Contains(text, filepath.Join(conv.SandboxID, "workspace")) {
		t.Fatalf("terminal observation %q", text)
	}
	if obs.ActionID != v1Events[5].EventBase().ID {
		t.Fatal("observation does not link to its action")
	}

	// After a restart the sandbox process is gone (PAUSED) and the
	// transcript still reads from the control plane.
	s.stop()
	s2 := startServe(t, dataDir, llm.URL)
	c2 := s2.api(apiKey)
	after, err := c2.GetConversation(ctx, convID)
	if err != nil || after.SandboxStatus != "PAUSED" || after.ConversationURL != nil {
		t.Fatalf("after restart: %+v %v", after, err)
	}
	if n := len(eventsOf(t, c2.Events(ctx, convID, pageOfFive))); n != len(v1Events) {
		t.Fatalf("%d events after restart, %d before", n, len(v1Events))
	}
}

// A sandbox created through the API reaches RUNNING and is listed.
func TestSandboxesThroughTheAPI(t *testing.T) {
	llm := llmtest.New()
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	ctx := t.Context()
	c := s.api(apiKey)
	sb, err := c.CreateSandbox(ctx, "")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	testwait.For(t, 30*time.Second, "the sandbox to run", func() bool {
		got, err := c.GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == "RUNNING" && got.SessionAPIKey != nil && len(got.ExposedURLs) == 1 && got.ExposedURLs[0].Name == "AGENT_SERVER"
	})
	page, err := c.SearchSandboxes(ctx, nil)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != sb.ID {
		t.Fatalf("search: %+v %v", page, err)
	}
	specs, err := c.SearchSandboxSpecs(ctx, nil)
	if err != nil || len(specs.Items) == 0 {
		t.Fatalf("no sandbox spec: %v", err)
	}
}
