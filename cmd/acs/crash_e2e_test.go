package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// The crash-recovery rule of the agent server (issue 3): after the process
// dies mid-run (SIGKILL, not a graceful stop) and is started again on the
// same directories with the same key, the conversation is reloaded from disk,
// reads `error`, the action that never got an observation gets exactly one
// AgentErrorEvent, no event logged before the crash is lost, and the
// conversation can be run again.

const crashKey = "crash-e2e-session-key"

// crashAgentServer is one `acs agent-server` child process.
type crashAgentServer struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	log  *bytes.Buffer
	done chan struct{}
	err  error
	api  *client.Agent // of the server, with its key
	last *lastStatus   // of the answers api got
}

// crashStart starts `acs agent-server` on dir (workspace and conversations
// live below it). marker is put in the environment, which the terminal's
// shells inherit, so that leftovers can be found.
func crashStart(t *testing.T, dir, marker string) *crashAgentServer {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(testbin.ACS(t), "agent-server", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	cmd.Env = append(os.Environ(),
		"OH_SESSION_API_KEYS_0="+crashKey,
		"ACS_WORKSPACE_DIR="+filepath.Join(dir, "workspace"),
		"OH_CONVERSATIONS_PATH="+filepath.Join(dir, "conversations"),
		"OH_BASH_EVENTS_DIR="+filepath.Join(dir, "bash_events"),
		"ACS_SKILLS_DIR="+filepath.Join(dir, "no-skills"),
		"ACS_CRASH_E2E_MARKER="+marker)
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &crashAgentServer{t: t, cmd: cmd, log: log, done: make(chan struct{}), last: &lastStatus{}}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			cmd.Process.Kill()
			<-s.done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			s.url = "http://" + string(b)
			s.api = client.NewAgent(s.url, crashKey, client.WithHTTPClient(&http.Client{Transport: s.last}))
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("acs agent-server exited at start (%v):\n%s", s.err, log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("acs agent-server did not start:\n%s", log)
	return nil
}

// kill SIGKILLs the process and waits until it is reaped.
func (s *crashAgentServer) kill() {
	s.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.t.Fatal("the killed agent server was not reaped")
	}
	if s.err == nil || !strings.Contains(s.err.Error(), "killed") {
		s.t.Fatalf("agent server ended with %v, want killed by SIGKILL:\n%s", s.err, s.log)
	}
}

// ok fails unless err is nil and the last answer's status was code.
func (s *crashAgentServer) ok(err error, code int, what string) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", what, err, s.log)
	}
	s.last.mu.Lock()
	got := s.last.code
	s.last.mu.Unlock()
	if got != code {
		s.t.Fatalf("%s: HTTP %d, want %d", what, got, code)
	}
}

// events pages through the conversation's event search (with the client:
// every event decodes), each as its JSON object.
func (s *crashAgentServer) events(id string) []map[string]any {
	s.t.Helper()
	var out []map[string]any
	for ev, err := range s.api.Events(s.t.Context(), id, client.Filter{"limit": {"5"}}) {
		if err != nil {
			s.t.Fatalf("events of %s: %v", id, err)
		}
		var m map[string]any
		if err := json.Unmarshal(events.MustEncode(ev), &m); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func (s *crashAgentServer) status(id string) string {
	s.t.Helper()
	info, err := s.api.GetConversation(s.t.Context(), id)
	s.ok(err, 200, "get conversation "+id)
	return string(info.ExecutionStatus)
}

func crashIDs(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i], _ = ev["id"].(string)
	}
	return out
}

func crashSig(ev map[string]any) string {
	s, _ := ev["kind"].(string)
	for _, k := range []string{"tool_name", "tool_call_id", "key"} {
		if v, ok := ev[k].(string); ok {
			s += " " + k + "=" + v
		}
	}
	return s
}

// crashLeftovers lists the pids of live processes (other than this test)
// whose environment carries marker and, when cmdline is set, whose command
// line is cmdline (arguments joined by spaces).
func crashLeftovers(marker, cmdline string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if cmdline != "" {
			cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if string(bytes.TrimRight(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}), " ")) != cmdline {
				continue
			}
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == "ACS_CRASH_E2E_MARKER="+marker {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func TestAgentServerSurvivesSIGKILL(t *testing.T) {
	llm := llmtest.New(
		llmtest.Reply{MatchText: "start the long job", Text: "Starting the long job.", ToolCalls: []llmtest.ToolCall{{ID: "call-sleep", Name: "terminal",
			Arguments: map[string]any{"command": "sleep 60", "security_risk": "LOW", "summary": "long job"}}}},
		llmtest.Reply{MatchText: "wrap up", ToolCalls: []llmtest.ToolCall{{ID: "call-finish", Name: "finish",
			Arguments: map[string]any{"message": "Recovered after the crash."}}}},
	)
	defer llm.Close()
	dir := t.TempDir()
	marker := dir
	t.Cleanup(func() {
		// Shells of the killed server that outlived it (by pid, only ours).
		for _, pid := range crashLeftovers(marker, "") {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	})
	work := filepath.Join(dir, "workspace", "project")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}

	// 1. A conversation whose first step runs `sleep 60` in the terminal.
	s1 := crashStart(t, dir, marker)
	req, err := json.Marshal(map[string]any{
		"agent": map[string]any{"kind": "Agent", "tools": []map[string]any{{"name": "terminal"}},
			"llm": map[string]any{"model": "openai/crash-model", "base_url": llm.URL, "api_key": "sk-crash-e2e",
				"num_retries": 0, "usage_id": "agent"}},
		"workspace":       map[string]any{"working_dir": work},
		"autotitle":       false,
		"initial_message": map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": "Please start the long job."}}, "run": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	var start agentwire.StartConversationRequest // decoded as the server decodes it
	if err := strictjson.Unmarshal(req, &start); err != nil {
		t.Fatal(err)
	}
	created, err := s1.api.CreateConversation(t.Context(), &start)
	s1.ok(err, 201, "create conversation")
	if created.ID == "" {
		t.Fatalf("create conversation: no id: %+v", created)
	}
	id := created.ID

	// 2. Wait for the terminal's ActionEvent to be logged, then SIGKILL.
	testwait.For(t, 30*time.Second, "the terminal ActionEvent", func() bool {
		p, err := s1.api.SearchEvents(t.Context(), id, client.Filter{"kind": {"ActionEvent"}})
		s1.ok(err, 200, "search ActionEvents")
		if len(p.Items) != 1 {
			return false
		}
		a, ok := p.Items[0].(*events.ActionEvent)
		return ok && a.ToolCallID == "call-sleep"
	})
	if st := s1.status(id); st != "running" {
		t.Fatalf("before the crash the conversation reads %q, want running", st)
	}
	// Kill while the command really runs, not between the ActionEvent and
	// the tool starting.
	testwait.For(t, 30*time.Second, "sleep 60 to run in the agent's terminal", func() bool {
		return len(crashLeftovers(marker, "sleep 60")) > 0
	})
	before := s1.events(id)
	s1.kill()
	// The killed server's shell hangs up with its PTY: the command must not
	// outlive it and keep changing the workspace behind the restarted one.
	testwait.For(t, 20*time.Second, "the killed server's shell and sleep to exit", func() bool {
		return len(crashLeftovers(marker, "")) == 0
	})

	var action map[string]any
	for _, ev := range before {
		switch {
		case ev["kind"] == "ActionEvent" && ev["tool_call_id"] == "call-sleep":
			action = ev
		case ev["kind"] == "ObservationEvent" || ev["kind"] == "AgentErrorEvent":
			t.Fatalf("sleep 60 already has a result before the crash: %v", ev)
		}
	}
	if action == nil || action["tool_name"] != "terminal" {
		t.Fatalf("no terminal ActionEvent before the crash: %v", before)
	}

	// 3. Restart on the same directories with the same key.
	s2 := crashStart(t, dir, marker)
	search, err := s2.api.SearchConversations(t.Context(), nil)
	s2.ok(err, 200, "search conversations")
	if len(search.Items) != 1 || search.Items[0].ID != id {
		t.Fatalf("after the restart the conversation search lists %+v, want only %s\n%s", search.Items, id, s2.log)
	}
	// The server is listening, so loading is over: the status must already
	// be the post-crash one (no waiting on a transient "running").
	if st := search.Items[0].ExecutionStatus; st != "error" {
		t.Fatalf("after the restart the conversation reads %q in search, want error", st)
	}
	if st := s2.status(id); st != "error" {
		t.Fatalf("after the restart the conversation reads %q, want error", st)
	}

	// 4. Every event from before the crash, same ids, same order; then one
	// AgentErrorEvent for the orphaned call and the status change to error.
	after := s2.events(id)
	if len(after) < len(before) || strings.Join(crashIDs(after[:len(before)]), ",") != strings.Join(crashIDs(before), ",") {
		t.Fatalf("events before the crash were not kept in order:\nbefore %v\nafter  %v", crashIDs(before), crashIDs(after))
	}
	var orphanErrors, errorStatus int
	for i, ev := range after[len(before):] {
		switch {
		case ev["kind"] == "AgentErrorEvent":
			if ev["tool_call_id"] != "call-sleep" || ev["tool_name"] != "terminal" || !strings.Contains(strings.ToLower(ev["error"].(string)), "restart") {
				t.Fatalf("unexpected AgentErrorEvent after the restart: %v", ev)
			}
			if ev["source"] != "agent" {
				t.Fatalf("orphan AgentErrorEvent source %v, want agent", ev["source"])
			}
			orphanErrors++
		case ev["kind"] == "ObservationEvent":
			t.Fatalf("an observation appeared for the killed command: %v", ev)
		case ev["kind"] == "ConversationStateUpdateEvent" && ev["key"] == "execution_status":
			if ev["value"] != "error" || orphanErrors != 1 {
				t.Fatalf("status change #%d after the crash: %v (orphan errors so far %d)", i, ev, orphanErrors)
			}
			errorStatus++
		}
	}
	if orphanErrors != 1 || errorStatus != 1 {
		var sig []string
		for _, ev := range after[len(before):] {
			sig = append(sig, crashSig(ev))
		}
		t.Fatalf("after the restart: %d orphan AgentErrorEvents and %d error status changes, want 1 and 1; new events: %v", orphanErrors, errorStatus, sig)
	}
	// Event ids stay unique.
	seen := map[string]bool{}
	for _, id := range crashIDs(after) {
		if id == "" || seen[id] {
			t.Fatalf("duplicate or empty event id %q after the restart", id)
		}
		seen[id] = true
	}

	// 5. The conversation continues: a new message runs it to finished.
	err = s2.api.SendMessage(t.Context(), id, &agentwire.SendMessageRequest{Role: "user",
		Content: []events.Content{events.TextItem("The server restarted; please wrap up.")}, Run: true})
	s2.ok(err, 200, "send message after the restart")
	testwait.For(t, 30*time.Second, "the conversation to finish after the restart", func() bool { return s2.status(id) == "finished" })
	final := s2.events(id)
	if strings.Join(crashIDs(final[:len(after)]), ",") != strings.Join(crashIDs(after), ",") {
		t.Fatalf("events changed after the new run:\nbefore %v\nafter  %v", crashIDs(after), crashIDs(final))
	}
	var finishObs bool
	for _, ev := range final[len(after):] {
		if ev["kind"] == "ObservationEvent" && ev["tool_call_id"] == "call-finish" {
			finishObs = true
		}
		if ev["tool_call_id"] == "call-sleep" {
			t.Fatalf("a result for the killed command after the new run: %v", ev)
		}
	}
	if !finishObs {
		t.Fatalf("no finish observation after the new run")
	}
	resp, err := s2.api.FinalResponse(t.Context(), id)
	s2.ok(err, 200, "agent_final_response")
	if resp != "Recovered after the crash." {
		t.Fatalf("final response %q", resp)
	}

	// The LLM saw the orphaned call answered by the restart error, right
	// after the call and before the new user message.
	reqs := llm.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.LastUserText(), "wrap up") {
		t.Fatalf("last LLM request was not the one after the restart: %q", last.LastUserText())
	}
	callAt := -1
	for i, m := range last.Messages {
		for _, tc := range m.ToolCalls {
			if tc.ID == "call-sleep" {
				callAt = i
			}
		}
	}
	if callAt < 0 || callAt+2 >= len(last.Messages) {
		t.Fatalf("the LLM request after the restart lacks the sleep call: %+v", last.Messages)
	}
	res, next := last.Messages[callAt+1], last.Messages[callAt+2]
	if res.Role != "tool" || res.ToolCallID != "call-sleep" || !strings.Contains(strings.ToLower(res.Text()), "restart") || next.Role != "user" {
		t.Fatalf("the LLM request after the restart: call at %d followed by %+v then %+v", callAt, res, next)
	}
}
