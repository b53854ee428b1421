package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
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

// procStat reads /proc/<pid>/stat: the state, the parent pid and the start
// time (clock ticks after boot, which tells a reused pid apart).
func procStat(pid int) (state string, ppid int, start uint64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	// The command name is in parentheses and may hold spaces; the fields
	// after it start with state (3) and ppid (4); starttime is field 22.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return f[0], ppid, start, true
}

// descendants walks /proc/*/stat for the live (not zombie) descendants of
// root and returns their start times by pid.
func descendants(root int) map[int]uint64 {
	ents, _ := os.ReadDir("/proc")
	type info struct {
		ppid  int
		start uint64
	}
	procs := map[int]info{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid, start, ok := procStat(pid); ok && state != "Z" {
			procs[pid] = info{ppid, start}
		}
	}
	out := map[int]uint64{}
	for pid, p := range procs {
		// Climb to root (or to a process outside the tree); the depth bound
		// guards against a cycle from pids reused during the walk.
		for anc, depth := p.ppid, 0; anc > 1 && depth < 64; depth++ {
			if anc == root {
				out[pid] = p.start
				break
			}
			a, ok := procs[anc]
			if !ok {
				break
			}
			anc = a.ppid
		}
	}
	return out
}

// alive reports whether pid still runs as the process that started at start.
func alive(pid int, start uint64) bool {
	state, _, s, ok := procStat(pid)
	return ok && s == start && state != "Z"
}

// agentServerRSS starts `acs agent-server`, measures its RSS idle, runs n
// conversations to the end and measures again. Each conversation runs one
// terminal command before it finishes, so each holds its live persistent bash
// session (the terminal starts its shell on first use) when RSS is sampled.
// The returned figures are the server's own VmRSS; the summed VmRSS of its
// descendants (the shells) is reported as children-MB, with their count as
// children, when tb is a benchmark.
func agentServerRSS(tb testing.TB, n int) (idle, loaded float64) {
	llm := llmtest.New(
		// After the command's observation: finish.
		llmtest.Reply{Repeat: true, Match: func(r *llmtest.Request) bool {
			return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool"
		}, ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Ready."}}}},
		// The first step: one terminal command.
		llmtest.Reply{Repeat: true, MatchText: "hello", Text: "Checking the shell.", ToolCalls: []llmtest.ToolCall{{Name: "terminal",
			Arguments: map[string]any{"command": "echo ready", "security_risk": "LOW", "summary": "check the shell"}}}},
	)
	defer llm.Close()
	dir := tb.TempDir()
	addrFile := filepath.Join(dir, "addr")
	logFile, err := os.Create(filepath.Join(dir, "agent-server.log"))
	if err != nil {
		tb.Fatal(err)
	}
	defer logFile.Close()
	serverLog := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	cmd := exec.Command(testbin.ACS(tb), "agent-server", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	cmd.Env = append(os.Environ(), "ACS_WORKSPACE_DIR="+filepath.Join(dir, "w"), "OH_SESSION_API_KEYS_0=k")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		// Note the shells first: once the server is gone they are no longer
		// its descendants. Stop the server gracefully (SIGKILL if it hangs),
		// then kill whichever of them is still running.
		kids := descendants(cmd.Process.Pid)
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		for pid, start := range kids {
			if alive(pid, start) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for pid, start := range kids {
			testwait.Until(time.Until(deadline), func() bool { return !alive(pid, start) })
		}
	}()
	var base string
	if !testwait.Until(5*time.Second, func() bool {
		b, err := os.ReadFile(addrFile)
		base = "http://" + string(b)
		return err == nil && len(b) > 0
	}) {
		tb.Fatalf("agent server did not start:\n%s", serverLog())
	}
	// Legitimate sleep: let the process settle (lazy allocations, GC) so
	// that RSS is comparable between samples.
	settle := func() { time.Sleep(500 * time.Millisecond) }
	settle()
	idle = rssMB(cmd.Process.Pid)
	agent := client.NewAgent(base, "k")
	ids := make([]string, n)
	for i := range ids {
		var req agentwire.StartConversationRequest // decoded as the server decodes it
		body := fmt.Sprintf(`{"agent":{"llm":{"model":"m","base_url":%q,"num_retries":0},"tools":[{"name":"terminal"},{"name":"file_editor"}]},`+
			`"workspace":{"working_dir":%q},"initial_message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`,
			llm.URL, filepath.Join(dir, "w", fmt.Sprint(i)))
		if err := strictjson.Unmarshal([]byte(body), &req); err != nil {
			tb.Fatal(err)
		}
		created, err := agent.CreateConversation(context.Background(), &req)
		if err != nil || created.ID == "" {
			tb.Fatalf("create conversation: %v %+v", err, created)
		}
		ids[i] = created.ID
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		var info agentwire.ConversationInfo
		var err error
		testwait.Until(time.Until(deadline), func() bool {
			info, err = agent.GetConversation(context.Background(), id)
			st := info.ExecutionStatus
			return err != nil || st == "finished" || st == "error" || st == "stuck"
		})
		if err != nil || info.ExecutionStatus != "finished" {
			tb.Fatalf("conversation %s: %v %s\n%s", id, err, info.ExecutionStatus, serverLog())
		}
	}
	settle()
	loaded = rssMB(cmd.Process.Pid)
	kids := descendants(cmd.Process.Pid)
	var children float64
	for pid := range kids {
		if mb := rssMB(pid); mb > 0 {
			children += mb
		}
	}
	if len(kids) < n {
		tb.Fatalf("%d conversations finished but the server has %d descendant processes, want a live shell each", n, len(kids))
	}
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(children, "children-MB")
		b.ReportMetric(float64(len(kids)), "children")
	}
	return idle, loaded
}

// TestAgentServerRSSSmoke keeps the RSS helper working (figures come from
// BenchmarkAgentServerRSS).
func TestAgentServerRSSSmoke(t *testing.T) {
	idle, loaded := agentServerRSS(t, 2)
	if idle <= 0 || loaded <= 0 {
		t.Fatalf("could not read RSS: %v %v", idle, loaded)
	}
}
