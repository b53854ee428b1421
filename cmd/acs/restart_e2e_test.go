package main_test

// End-to-end tests, through `acs serve`, of the restart rule for crashed
// agent servers (issue 11, defect 6): the runtime restarts a killed agent
// server by itself with back-off, the interrupted run reads `error` and the
// conversation takes messages again; only a crash loop or a missing
// workspace makes the sandbox ERROR, and resuming an ERROR sandbox whose
// workspace exists starts it again.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/v1wire"
)

// rsPid reads a local sandbox's agent-server pid; 0 while the file is
// absent or being rewritten.
func rsPid(dataDir, sandboxID string) int {
	b, err := os.ReadFile(filepath.Join(lcSandboxDir(dataDir, sandboxID), "agent.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// rsKill SIGKILLs a sandbox's agent server (only it, as the OOM killer
// does) and waits until it is reaped; it returns the pid.
func rsKill(t *testing.T, dataDir, sandboxID string) int {
	t.Helper()
	pid := rsPid(dataDir, sandboxID)
	if pid <= 1 {
		t.Fatalf("no agent-server pid for sandbox %s", sandboxID)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill agent server %d: %v", pid, err)
	}
	testwait.For(t, 20*time.Second, "the killed agent server to be reaped", func() bool { return !lcAlive(pid) })
	return pid
}

func rsGetSandbox(s *acsServe, id string) v1wire.Sandbox {
	s.t.Helper()
	sb, err := s.api(apiKey).GetSandbox(s.t.Context(), id)
	if err != nil {
		s.t.Fatalf("sandbox %s: %v", id, err)
	}
	return sb
}

// rsCrashLoop kills a sandbox's agent server three times, each time after
// the runtime restarted it (the sandbox back to RUNNING, never ERROR), and
// returns the last pid killed. Nothing looks at the sandbox after the last
// kill.
func rsCrashLoop(s *acsServe, t *testing.T, dataDir, sandboxID string) int {
	t.Helper()
	for i := 1; ; i++ {
		pid := rsKill(t, dataDir, sandboxID)
		if i == 3 {
			return pid
		}
		testwait.For(t, 60*time.Second, "the runtime to restart the killed agent server", func() bool {
			p := rsPid(dataDir, sandboxID)
			if p == 0 || p == pid || !lcAlive(p) {
				return false
			}
			sb := rsGetSandbox(s, sandboxID)
			if sb.Status == "ERROR" {
				t.Fatalf("crash %d made the sandbox ERROR: %s", i, deref(sb.Detail))
			}
			return sb.Status == "RUNNING"
		})
	}
}

// rsProcs lists live processes whose command line is cmdline.
func rsProcs(cmdline string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(bytes.TrimRight(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}), " ")) == cmdline {
			out = append(out, pid)
		}
	}
	return out
}

// rsSend sends a message and reports success.
func rsSend(s *acsServe, convID, text string) bool {
	s.t.Helper()
	out, err := s.api(apiKey).SendMessage(s.t.Context(), convID, &v1wire.SendMessageRequest{Role: "user",
		Content: []events.Content{&events.TextContent{Text: text}}, Run: true})
	if err != nil {
		s.t.Fatalf("send-message to %s: %v", convID, err)
	}
	return out.Success
}

func TestAgentServerCrashIsRestarted(t *testing.T) {
	t.Parallel()
	const sleepCmd = "sleep 4321"
	replies := []llmtest.Reply{
		{MatchText: "tag-restart-run", Text: "Starting the long job.", ToolCalls: []llmtest.ToolCall{{ID: "call-restart-sleep", Name: "terminal",
			Arguments: map[string]any{"command": sleepCmd, "security_risk": "LOW", "summary": "long job"}}}},
		{MatchText: "tag-restart-wrap-up", ToolCalls: []llmtest.ToolCall{{ID: "call-restart-finish", Name: "finish",
			Arguments: map[string]any{"message": "Recovered after the crash."}}}},
		lcSay("tag-restart-loop"),
		lcSay("tag-restart-workspace"),
	}
	s, llm, dataDir := lcServe(t, replies)
	t.Cleanup(func() {
		for _, pid := range rsProcs(sleepCmd) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	// kill -9 mid-run: restarted without any manual action; the run reads
	// error with its orphan action closed; a new message runs to finished.
	t.Run("a crash is restarted", func(t *testing.T) {
		t.Parallel()
		s := lcBind(s, t)
		conv, sbID := lcStart(s, apiKey, "tag-restart-run: start the long job")
		testwait.For(t, 60*time.Second, "the terminal action to be stored", func() bool {
			for _, ev := range lcEvents(s, apiKey, conv) {
				if ev["kind"] == "ActionEvent" && ev["tool_call_id"] == "call-restart-sleep" {
					return true
				}
			}
			return false
		})
		testwait.For(t, 30*time.Second, sleepCmd+" to run in the agent's terminal", func() bool { return len(rsProcs(sleepCmd)) > 0 })
		before := rsGetSandbox(s, sbID)
		if before.Status != "RUNNING" || before.SessionAPIKey == nil {
			t.Fatalf("sandbox before the crash: %+v", before)
		}
		pid := rsKill(t, dataDir, sbID)

		var c *convInfo
		testwait.For(t, 60*time.Second, "the conversation to read error on a running sandbox", func() bool {
			if sb := rsGetSandbox(s, sbID); sb.Status == "ERROR" {
				t.Fatalf("one crash made the sandbox ERROR: %s", deref(sb.Detail))
			}
			c = s.conv(apiKey, conv)
			return c.SandboxStatus == "RUNNING" && lcExec(c) == "error"
		})
		if p := rsPid(dataDir, sbID); p == pid || !lcAlive(p) {
			t.Fatalf("no new agent server: pid %d (killed %d)", p, pid)
		}
		after := rsGetSandbox(s, sbID)
		if after.Status != "RUNNING" || deref(after.SessionAPIKey) != deref(before.SessionAPIKey) {
			t.Fatalf("after the restart the sandbox reads %s; session key kept: %v", after.Status, deref(after.SessionAPIKey) == deref(before.SessionAPIKey))
		}
		// The orphan action got exactly one AgentErrorEvent, no result.
		testwait.For(t, 30*time.Second, "the orphan action's AgentErrorEvent", func() bool {
			orphans := 0
			for _, ev := range lcEvents(s, apiKey, conv) {
				if ev["tool_call_id"] != "call-restart-sleep" {
					continue
				}
				switch ev["kind"] {
				case "ObservationEvent":
					t.Fatalf("a result for the killed command: %v", ev)
				case "AgentErrorEvent":
					if e, _ := ev["error"].(string); !strings.Contains(strings.ToLower(e), "restart") {
						t.Fatalf("orphan AgentErrorEvent: %v", ev)
					}
					orphans++
				}
			}
			if orphans > 1 {
				t.Fatalf("%d AgentErrorEvents for the orphan action", orphans)
			}
			return orphans == 1
		})

		if !rsSend(s, conv, "tag-restart-wrap-up: the agent server restarted; please wrap up") {
			t.Fatal("send-message after the restart failed")
		}
		// The run the message starts reaches the LLM; only then is
		// "finished" about that run (the record may still read the
		// previous run's finished until the agent server reports).
		testwait.For(t, 60*time.Second, "the LLM to see the message sent after the restart", func() bool {
			return lcSawMessage(llm, "tag-restart-wrap-up")
		})
		lcWaitFinished(s, apiKey, conv)
	})

	// Three crashes in a row: ERROR (read-only, a detail saying why) until
	// POST …/resume starts it again.
	t.Run("a crash loop is ERROR until resumed", func(t *testing.T) {
		t.Parallel()
		s := lcBind(s, t)
		conv, sbID := lcStart(s, apiKey, "tag-restart-loop one")
		lcWaitFinished(s, apiKey, conv)
		oldKey := deref(rsGetSandbox(s, sbID).SessionAPIKey)
		pid := rsCrashLoop(s, t, dataDir, sbID)
		var sb v1wire.Sandbox
		testwait.For(t, 30*time.Second, "the crash-looping sandbox to read ERROR", func() bool {
			sb = rsGetSandbox(s, sbID)
			return sb.Status == "ERROR"
		})
		if d := deref(sb.Detail); !strings.Contains(d, "crash loop") || !strings.Contains(d, "3 times") || !strings.Contains(d, "killed") {
			t.Fatalf("crash-loop detail %q", d)
		}
		if c := s.conv(apiKey, conv); c.SandboxStatus != "ERROR" {
			t.Fatalf("the conversation reads %s", c.SandboxStatus)
		}
		lcDetail(s, s.admin("POST", "/api/v1/app-conversations/"+conv+"/send-message", msg("tag-restart-loop refused")), 503, "send-message to an ERROR sandbox")
		if p := rsPid(dataDir, sbID); p != pid || lcAlive(p) {
			t.Fatalf("an agent server (pid %d) runs for the ERROR sandbox", p)
		}

		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/resume", nil))
		lcWaitSandbox(s, apiKey, sbID, "RUNNING", 60*time.Second)
		resumed := rsGetSandbox(s, sbID)
		if k := deref(resumed.SessionAPIKey); k == oldKey || k == "<nil>" || resumed.Detail != nil {
			t.Fatalf("after the resume: new key %v, detail %q", k != oldKey, deref(resumed.Detail))
		}
		if !rsSend(s, conv, "tag-restart-loop two") {
			t.Fatal("send-message to the resumed sandbox failed")
		}
		testwait.For(t, 60*time.Second, "the resumed sandbox to run the new message", func() bool {
			return lcSawMessage(llm, "tag-restart-loop two")
		})
		lcWaitFinished(s, apiKey, conv)
	})

	// A workspace that is gone: the crash makes the sandbox ERROR, and
	// resume is refused with the reason.
	t.Run("a missing workspace is ERROR", func(t *testing.T) {
		t.Parallel()
		s := lcBind(s, t)
		conv, sbID := lcStart(s, apiKey, "tag-restart-workspace")
		lcWaitFinished(s, apiKey, conv)
		if err := os.RemoveAll(filepath.Join(lcSandboxDir(dataDir, sbID), "workspace")); err != nil {
			t.Fatal(err)
		}
		rsKill(t, dataDir, sbID)
		var sb v1wire.Sandbox
		testwait.For(t, 30*time.Second, "the sandbox without a workspace to read ERROR", func() bool {
			sb = rsGetSandbox(s, sbID)
			return sb.Status == "ERROR"
		})
		if !strings.Contains(deref(sb.Detail), "workspace is gone") {
			t.Fatalf("detail %q does not name the missing workspace", deref(sb.Detail))
		}
		if d := lcDetail(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/resume", nil), 503, "resume without a workspace"); !strings.Contains(d, "workspace is gone") {
			t.Fatalf("resume refusal %q does not name the missing workspace", d)
		}
		if sb := rsGetSandbox(s, sbID); sb.Status != "ERROR" {
			t.Fatalf("after the refused resume: %s", sb.Status)
		}
	})
}
