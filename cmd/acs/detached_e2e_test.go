//go:build linux

package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/sandboxtest"
)

// TestDetachedJobStopsWithItsSandbox: a job an agent detaches from its
// shell (setsid, in the background) stops with its sandbox when the
// sandbox is paused or deleted and when `acs serve` stops or is killed;
// the agent server stops too. After a kill, `acs serve` started again
// finds the sandbox PAUSED.
func TestDetachedJobStopsWithItsSandbox(t *testing.T) {
	llm := llmtest.New()
	t.Cleanup(llm.Close)
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, s *acsServe, id string)
	}{
		{"pause", func(t *testing.T, s *acsServe, id string) {
			if err := s.api(apiKey).PauseSandbox(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete", func(t *testing.T, s *acsServe, id string) {
			if err := s.api(apiKey).DeleteSandbox(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}},
		{"serve stopped", func(t *testing.T, s *acsServe, _ string) { s.stop() }},
		{"serve killed", func(t *testing.T, s *acsServe, _ string) {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServe(t, t.TempDir(), llm.URL)
			c := s.api(apiKey)
			sb, err := c.CreateSandbox(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			var url, key string
			testwait.For(t, 30*time.Second, "the sandbox to run", func() bool {
				got, err := c.GetSandbox(t.Context(), sb.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != "RUNNING" || got.SessionAPIKey == nil || len(got.ExposedURLs) == 0 {
					return false
				}
				url, key = got.ExposedURLs[0].URL, *got.SessionAPIKey
				return true
			})
			job := sandboxtest.DetachJob(t, url, key)
			server := lcPid(t, s.dataDir, sb.ID)
			tc.stop(t, s, sb.ID)
			testwait.For(t, 20*time.Second, fmt.Sprintf("the detached job %d to stop", job), func() bool { return !sandboxtest.ProcessRuns(job, "while") })
			testwait.For(t, 20*time.Second, fmt.Sprintf("the agent server %d to stop", server), func() bool { return !sandboxtest.ProcessRuns(server, "agent-server") })
			if tc.name == "serve killed" {
				again := startServe(t, s.dataDir, llm.URL)
				if got := rsGetSandbox(again, sb.ID); got.Status != "PAUSED" {
					t.Fatalf("after a restart the sandbox reads %s, want PAUSED", got.Status)
				}
			}
		})
	}
}
