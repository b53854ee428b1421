package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/gittest"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/v1wire"
)

// BenchmarkStartToReady measures POST /api/v1/app-conversations until the
// start task is READY, and where the time goes: beside the total (ms/ready,
// the median start; ms/ready-mean, the mean, which a few starts slowed by
// the machine pull up) it reports the mean time of each step the task
// recorded (ms/<STATUS>, from the task's own step times: a step lasts
// until the next begins).
//
//   - new-sandbox: NO_GROUPING, a new sandbox each time, from the warm pool
//     (ACS_WARM_SANDBOXES=1, refilled between starts: a start while it
//     refills is a cold one, which new-sandbox-cold measures).
//   - new-sandbox-cold: no warm pool: create the sandbox record, start an
//     agent server and wait for it to answer, then the steps.
//   - reused-sandbox: ADD_TO_ANY on a running sandbox: reserve a slot, then
//     the steps; no process at all.
//   - with-clone: a new sandbox (warm) and a repository cloned from a local
//     git server (no setup script, hooks or skills in it).
//   - new-sandbox-stream, reused-sandbox-stream: those starts through
//     stream-start, which answers each status as it is stored (no poll).
//
// Otherwise the task is polled every 2ms (after each answer), so totals
// carry up to 2ms of polling granularity and a poll's round trip (the step
// times do not: they are the worker's own).
func BenchmarkStartToReady(b *testing.B) {
	git := gittest.New(b)
	git.Create(b, "acme", "tiny", gittest.Repo{Files: map[string]string{"README.md": "# tiny\n"}})
	for _, tc := range []struct {
		name, strategy string
		env            []string
		body           v1wire.StartRequest
		stream         bool
	}{
		{name: "new-sandbox", strategy: "NO_GROUPING"},
		{name: "new-sandbox-stream", strategy: "NO_GROUPING", stream: true},
		{name: "reused-sandbox", strategy: "ADD_TO_ANY"},
		{name: "reused-sandbox-stream", strategy: "ADD_TO_ANY", stream: true},
		{name: "new-sandbox-cold", strategy: "NO_GROUPING", env: []string{"ACS_WARM_SANDBOXES=0"}},
		{name: "with-clone", strategy: "NO_GROUPING", body: v1wire.StartRequest{SelectedRepository: ptr("acme/tiny")}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			llm := llmtest.New()
			defer llm.Close()
			dataDir := b.TempDir()
			s := startServe(b, dataDir, llm.URL, append([]string{"ACS_MAX_RUNNING_SANDBOXES=0", "ACS_GIT_HOST=" + git.URL}, tc.env...)...)
			s.admin("POST", "/api/v1/settings", map[string]any{"sandbox_grouping_strategy": tc.strategy, "max_conversations_per_sandbox": 1000}).want(200)
			if tc.strategy != "NO_GROUPING" {
				s.start(apiKey, map[string]any{}) // the sandbox to reuse
			}
			// What the setup and the sub-benchmarks before wrote (and their
			// removed directories) is flushed first, so that no sync of
			// this one commits it.
			syscall.Sync()
			var totals []time.Duration
			steps := map[string]time.Duration{}
			var order []string
			n := 0
			for b.Loop() {
				waitWarm(b, dataDir, tc.env)
				start := time.Now()
				c := s.api(apiKey)
				body := tc.body
				var tk v1wire.StartTask
				var err error
				finished := func() bool { return tk.Status == "READY" || tk.Status == "ERROR" }
				if tc.stream {
					for item, err := range c.StreamStart(b.Context(), &body) {
						if err != nil {
							b.Fatalf("stream-start: %v", err)
						}
						tk = item
					}
					if tk.Status != "READY" {
						b.Fatalf("start did not finish: %s %v", tk.Status, deref(tk.Detail))
					}
				} else if tk, err = c.StartConversation(b.Context(), &body); err != nil {
					b.Fatalf("start: %v", err)
				}
				// A fine poll: the wait is what the benchmark times. The
				// answer that says READY ends it (no further interval).
				if !testwait.UntilEvery(90*time.Second, 2*time.Millisecond, func() bool {
					if finished() {
						return true
					}
					tasks, err := c.GetStartTasks(b.Context(), tk.ID)
					if err != nil {
						b.Fatal(err)
					}
					tk = *tasks[0]
					return finished()
				}) || tk.Status != "READY" {
					b.Fatalf("start did not finish: %s %v", tk.Status, deref(tk.Detail))
				}
				totals = append(totals, time.Since(start))
				n++
				for i := 0; i+1 < len(tk.Steps); i++ {
					st := tk.Steps[i].Status
					if _, ok := steps[st]; !ok {
						order = append(order, st)
					}
					steps[st] += tk.Steps[i+1].StartedAt.Time.Sub(tk.Steps[i].StartedAt.Time)
				}
				if strings.HasPrefix(tc.name, "new-sandbox") && tc.env == nil && n == 1 && (tk.Placement == nil || !strings.Contains(*tk.Placement, "warm pool hit")) {
					b.Fatalf("the first start after the pool filled was not a warm-pool hit: placement %v", deref(tk.Placement))
				}
			}
			b.ReportMetric(ms(median(totals)), "ms/ready")
			b.ReportMetric(ms(mean(totals)), "ms/ready-mean")
			for _, st := range order {
				b.ReportMetric(float64(steps[st].Microseconds())/1000/float64(n), "ms/"+st)
			}
		})
	}
}

// waitWarm waits until the data dir's sandbox root holds a warm agent
// server ready to be claimed (procsandbox's layout: an unclaimed member's
// meta file names it by its warm-… id, and its address file exists once it
// listens), unless env turns the pool off.
func waitWarm(b *testing.B, dataDir string, env []string) {
	for _, e := range env {
		if e == "ACS_WARM_SANDBOXES=0" {
			return
		}
	}
	root := filepath.Join(dataDir, "sandboxes")
	if !testwait.UntilEvery(30*time.Second, time.Millisecond, func() bool {
		dirs, _ := filepath.Glob(filepath.Join(root, "warm-*"))
		for _, d := range dirs {
			var m struct {
				ID string `json:"id"`
			}
			raw, err := os.ReadFile(filepath.Join(d, "sandbox.json"))
			if err != nil || json.Unmarshal(raw, &m) != nil || !strings.HasPrefix(m.ID, "warm-") {
				continue
			}
			if _, err := os.Stat(filepath.Join(d, "agent.addr")); err == nil {
				return true
			}
		}
		return false
	}) {
		b.Fatal("no warm sandbox became ready within 30s")
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

func ptr[T any](v T) *T { return &v }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// median is the middle of ds (the mean of the two middle ones when their
// number is even); ds is sorted in place.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
