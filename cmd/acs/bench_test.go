package main_test

import (
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/v1wire"
)

// BenchmarkStartToReady measures POST /api/v1/app-conversations until the
// start task is READY: with a new process sandbox each time (NO_GROUPING:
// create the sandbox record, start an agent server, wait for it to answer,
// then every setup step and the conversation), and on a sandbox that is
// already running (ADD_TO_ANY: reserve a slot, then the steps). The task is
// polled every 2ms, so figures carry up to 2ms of polling granularity.
func BenchmarkStartToReady(b *testing.B) {
	for _, tc := range []struct{ name, strategy string }{{"new-sandbox", "NO_GROUPING"}, {"reused-sandbox", "ADD_TO_ANY"}} {
		b.Run(tc.name, func(b *testing.B) {
			llm := llmtest.New()
			defer llm.Close()
			s := startServe(b, b.TempDir(), llm.URL, "ACS_MAX_RUNNING_SANDBOXES=0")
			s.admin("POST", "/api/v1/settings", map[string]any{"sandbox_grouping_strategy": tc.strategy, "max_conversations_per_sandbox": 1000}).want(200)
			if tc.strategy != "NO_GROUPING" {
				s.start(apiKey, map[string]any{}) // the sandbox to reuse
			}
			var total time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				c := s.api(apiKey)
				tk, err := c.StartConversation(b.Context(), &v1wire.StartRequest{})
				if err != nil {
					b.Fatalf("start: %v", err)
				}
				// A fine poll: the wait is what the benchmark times.
				if !testwait.UntilEvery(90*time.Second, 2*time.Millisecond, func() bool {
					if tk.Status == "READY" || tk.Status == "ERROR" {
						return true
					}
					tasks, err := c.GetStartTasks(b.Context(), tk.ID)
					if err != nil {
						b.Fatal(err)
					}
					tk = *tasks[0]
					return false
				}) || tk.Status != "READY" {
					b.Fatalf("start did not finish: %s %v", tk.Status, deref(tk.Detail))
				}
				total += time.Since(start)
				n++
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/ready")
		})
	}
}

// BenchmarkAgentServerRSS reports the agent server's resident memory when
// idle and after 20 conversations (terminal and file_editor configured, each
// run to the end through the scripted LLM).
func BenchmarkAgentServerRSS(b *testing.B) {
	for b.Loop() {
		idle, loaded := agentServerRSS(b, 20)
		b.ReportMetric(idle, "MB-idle")
		b.ReportMetric(loaded, "MB-20-conversations")
	}
}
