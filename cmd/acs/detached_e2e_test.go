//go:build linux

package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
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
			job := detachJob(t, url, key)
			server := lcPid(t, s.dataDir, sb.ID)
			tc.stop(t, s, sb.ID)
			testwait.For(t, 20*time.Second, fmt.Sprintf("the detached job %d to stop", job), func() bool { return !procRuns(job, "while") })
			testwait.For(t, 20*time.Second, fmt.Sprintf("the agent server %d to stop", server), func() bool { return !procRuns(server, "agent-server") })
			if tc.name == "serve killed" {
				again := startServe(t, s.dataDir, llm.URL)
				if got := rsGetSandbox(again, sb.ID); got.Status != "PAUSED" {
					t.Fatalf("after a restart the sandbox reads %s, want PAUSED", got.Status)
				}
			}
		})
	}
}

// detachJob runs, through the agent server's bash API, a command that
// detaches a job writing a file every 100ms; it returns the job's pid
// once it writes.
func detachJob(t *testing.T, url, key string) int {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`echo $$ > %[1]s/job.pid.tmp && mv %[1]s/job.pid.tmp %[1]s/job.pid; while :; do date >> %[1]s/job.log; sleep 0.1; done`, dir)
	body, _ := json.Marshal(map[string]any{"command": "setsid sh -c '" + script + "' </dev/null >/dev/null 2>&1 &", "timeout": 20})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/api/bash/execute_bash_command", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("execute_bash_command: HTTP %d", res.StatusCode)
	}
	var pid int
	testwait.For(t, 20*time.Second, "the detached job to write", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "job.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		fi, err := os.Stat(filepath.Join(dir, "job.log"))
		return pid > 1 && procRuns(pid, "while") && err == nil && fi.Size() > 0
	})
	t.Cleanup(func() {
		if procRuns(pid, "while") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// procRuns reports whether pid is a live process (not a zombie) whose
// command line contains what.
func procRuns(pid int, what string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid <= 1 {
		return false
	}
	if f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:]); len(f) == 0 || string(f[0]) == "Z" {
		return false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmdline, []byte(what))
}
