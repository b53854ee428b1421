package main_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

// agentServerRSS starts `acs agent-server`, measures its RSS idle, runs n
// conversations to the end and measures again.
func agentServerRSS(tb testing.TB, n int) (idle, loaded float64) {
	llm := llmtest.New(llmtest.Reply{Repeat: true, MatchText: "hello", Text: "Hello! Nothing to do."})
	defer llm.Close()
	dir := tb.TempDir()
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(testbin.ACS(tb), "agent-server", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	cmd.Env = append(os.Environ(), "ACS_WORKSPACE_DIR="+filepath.Join(dir, "w"), "OH_SESSION_API_KEYS_0=k")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var base string
	for i := 0; i < 500 && base == ""; i++ {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			base = "http://" + string(b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if base == "" {
		tb.Fatal("agent server did not start")
	}
	time.Sleep(500 * time.Millisecond)
	idle = rssMB(cmd.Process.Pid)
	post := func(path, body string) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("X-Session-API-Key", "k")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 201 {
			tb.Fatalf("%s: %d", path, res.StatusCode)
		}
	}
	for i := 0; i < n; i++ {
		post("/api/conversations", fmt.Sprintf(`{"agent":{"llm":{"model":"m","base_url":%q,"num_retries":0},"tools":[{"name":"terminal"},{"name":"file_editor"}]},`+
			`"workspace":{"working_dir":%q},"initial_message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`,
			llm.URL, filepath.Join(dir, "w", fmt.Sprint(i))))
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(llm.Requests()) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	return idle, rssMB(cmd.Process.Pid)
}

// TestAgentServerRSSSmoke keeps the RSS helper working (figures come from
// BenchmarkAgentServerRSS).
func TestAgentServerRSSSmoke(t *testing.T) {
	idle, loaded := agentServerRSS(t, 2)
	if idle <= 0 || loaded <= 0 {
		t.Fatalf("could not read RSS: %v %v", idle, loaded)
	}
}
