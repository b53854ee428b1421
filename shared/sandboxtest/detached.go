package sandboxtest

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
)

// DetachJob has the agent server at agentURL run, through its bash API, a
// command that detaches a job with setsid; the job writes a file every
// 100ms outside the workspace. It returns the job's pid once the job runs
// and writes, and kills the job when the test ends if it still runs.
func DetachJob(t *testing.T, agentURL, sessionKey string) int {
	t.Helper()
	return detachJob(t, agentURL, sessionKey, "")
}

// DetachStubbornJob is DetachJob with a job that ignores SIGTERM: only
// SIGKILL stops it.
func DetachStubbornJob(t *testing.T, agentURL, sessionKey string) int {
	t.Helper()
	return detachJob(t, agentURL, sessionKey, `trap "" TERM; `)
}

// detachJob is DetachJob with prefix run first in the job's shell.
func detachJob(t *testing.T, agentURL, sessionKey, prefix string) int {
	t.Helper()
	dir := t.TempDir()
	script := prefix + fmt.Sprintf(`echo $$ > %[1]s/job.pid.tmp && mv %[1]s/job.pid.tmp %[1]s/job.pid; while :; do date >> %[1]s/job.log; sleep 0.1; done`, dir)
	body, _ := json.Marshal(map[string]any{"command": "setsid sh -c '" + script + "' </dev/null >/dev/null 2>&1 &", "timeout": 20})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", agentURL+"/api/bash/execute_bash_command", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-API-Key", sessionKey)
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
		return ProcessRuns(pid, "while") && err == nil && fi.Size() > 0
	})
	t.Cleanup(func() {
		if ProcessRuns(pid, "while") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// ProcessRuns reports whether pid, above 1, is a live process, not a
// zombie, whose command line contains what. It reads /proc.
func ProcessRuns(pid int, what string) bool {
	if pid <= 1 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:]); len(f) == 0 || string(f[0]) == "Z" {
		return false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmdline, []byte(what))
}
