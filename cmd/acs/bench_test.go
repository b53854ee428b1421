package main_test

import (
	"testing"
	"time"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// BenchmarkStartToReady measures POST /api/v1/app-conversations until the
// start task is READY, with a new process sandbox each time (NO_GROUPING):
// store the task, queue it, create the sandbox record, start an agent
// server, wait for it to answer, create the conversation. The task is
// polled every 2ms, so figures carry up to 2ms of polling granularity.
func BenchmarkStartToReady(b *testing.B) {
	llm := llmtest.New()
	defer llm.Close()
	s := startServe(b, b.TempDir(), llm.URL)
	var total time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		var tk task
		if code := s.call("POST", "/api/v1/app-conversations", "{}", apiKey, &tk); code != 200 {
			b.Fatalf("start: %d", code)
		}
		for tk.Status != "READY" {
			if tk.Status == "ERROR" {
				b.Fatalf("start failed: %v", *tk.Detail)
			}
			time.Sleep(2 * time.Millisecond)
			var tasks []task
			s.call("GET", "/api/v1/app-conversations/start-tasks?ids="+tk.ID, "", apiKey, &tasks)
			tk = tasks[0]
		}
		total += time.Since(start)
		n++
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/ready")
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
