//go:build linux

package main_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// pid1Sandbox is `acs agent-server` run as the sandbox image runs it: the
// first process (PID 1) of its own PID namespace, with its own /proc, as
// UID 10001, with the session key in its environment.
type pid1Sandbox struct {
	t         *testing.T
	cmd       *exec.Cmd // unshare, which waits for the namespace's PID 1
	exited    chan struct{}
	init      int    // PID 1's PID outside the namespace
	ns        string // the namespace, as /proc/<pid>/ns/pid reads
	base, key string
	work, log string
}

const pid1UID = 10001

// startPID1Sandbox starts acs as PID 1 of a new PID namespace with env
// (NAME=value) added to an ordinary environment.
func startPID1Sandbox(t *testing.T, key string, env ...string) *pid1Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes a PID namespace (unshare --pid --mount-proc) and runs acs in it as UID 10001")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed to run acs as PID 1: %v", err)
	}
	dir := t.TempDir()
	// UID 10001 must reach the binary and its directories.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile(testbin.ACS(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "acs")
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"workspace", "state", "home", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(dir, d), pid1UID, pid1UID); err != nil {
			t.Fatal(err)
		}
	}
	s := &pid1Sandbox{t: t, key: key, work: filepath.Join(dir, "workspace"), log: filepath.Join(dir, "acs.log"), exited: make(chan struct{})}
	addrFile := filepath.Join(dir, "run", "addr")
	uid := strconv.Itoa(pid1UID)
	s.cmd = exec.Command(unshare, "--pid", "--fork", "--mount-proc", "--kill-child", "--setuid", uid, "--setgid", uid,
		bin, "agent-server", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	s.cmd.Dir = s.work
	s.cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8",
		"ACS_WORKSPACE_DIR=" + s.work, "OH_CONVERSATIONS_PATH=" + filepath.Join(dir, "state", "conversations"),
		"OH_SESSION_API_KEYS_0=" + key}, env...)
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		if s.init != 0 {
			syscall.Kill(s.init, syscall.SIGKILL) // ends the namespace
		}
		s.cmd.Process.Kill()
		<-s.exited
	})
	s.waitFor("the agent server to listen", 30*time.Second, func() bool {
		b, err := os.ReadFile(addrFile)
		s.base = "http://" + string(b)
		return err == nil && len(b) > 0
	})
	// PID 1 of the namespace is unshare's child.
	s.waitFor("the namespace's PID 1", 10*time.Second, func() bool {
		s.init = childOf(s.cmd.Process.Pid)
		return s.init != 0
	})
	if s.ns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", s.init)); err != nil {
		t.Fatal(err)
	}
	if mine, _ := os.Readlink("/proc/self/ns/pid"); mine == s.ns {
		t.Fatalf("acs runs in the test's PID namespace %s", mine)
	}
	return s
}

// waitFor polls ok until it holds, failing the test with the server's log
// after timeout.
func (s *pid1Sandbox) waitFor(what string, timeout time.Duration, ok func() bool) {
	s.t.Helper()
	exited := false
	if !testwait.Until(timeout, func() bool {
		select {
		case <-s.exited:
			exited = true
			return true
		default:
			return ok()
		}
	}) {
		s.t.Fatalf("timed out after %s waiting for %s; log:\n%s", timeout, what, s.logText())
	}
	if exited {
		s.t.Fatalf("waiting for %s: unshare exited (%v); log:\n%s", what, s.cmd.ProcessState, s.logText())
	}
}

func (s *pid1Sandbox) logText() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// sh runs script through the bash API (as the agent's tools run) with its
// output going to a file of the workspace, and returns that output as the
// script wrote it (no masking).
func (s *pid1Sandbox) sh(script string) string {
	s.t.Helper()
	out := filepath.Join(s.work, fmt.Sprintf("out-%d.txt", time.Now().UnixNano()))
	agent := client.NewAgent(s.base, s.key, client.WithHTTPClient(&http.Client{Timeout: 90 * time.Second}))
	final, err := agent.ExecuteBash(s.t.Context(), &agentwire.ExecuteBashRequest{Command: "{\n" + script + "\n} > " + out + " 2>&1", Timeout: 60})
	if err != nil {
		s.t.Fatalf("bash API: %v; log:\n%s", err, s.logText())
	}
	if final.ExitCode == nil || *final.ExitCode != 0 {
		s.t.Fatalf("bash API: exit code %v", final.ExitCode)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		s.t.Fatal(err)
	}
	os.Remove(out)
	return string(b)
}

// childOf is the first child of pid found in /proc, or 0.
func childOf(pid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		if b, err := os.ReadFile(f); err == nil && statPPID(b) == pid {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return n
		}
	}
	return 0
}

// statPPID is the parent PID in a /proc/<pid>/stat line.
func statPPID(stat []byte) int {
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// inNamespace lists the host's processes that are in the PID namespace ns.
func inNamespace(ns string) []string {
	var out []string
	links, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
	for _, l := range links {
		if got, err := os.Readlink(l); err == nil && got == ns {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(l)), "cmdline"))
			out = append(out, filepath.Base(filepath.Dir(filepath.Dir(l)))+" "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// TestAgentServerAsPID1: `acs agent-server` as its container's first
// process (the image's entrypoint, no init wrapper) is a proper init. No
// process of the namespace, PID 1 included, shows the session key or the
// secret key in its /proc/<pid>/environ to the agent's tools; the orphans
// the agent's shells leave behind are reaped (none stays a zombie under
// PID 1); SIGTERM to PID 1 stops the server gracefully (exit status 0),
// the processes left get SIGTERM too, and the namespace ends.
//
// Before acs did init's work, its orphans stayed zombies of PID 1 for good
// (and with the image's tini as PID 1, tini's /proc/1/environ held the key).
func TestAgentServerAsPID1(t *testing.T) {
	const key, sealing = "pid1-session-key-5be0c7d1a9f2", "pid1-sealing-key-0e9d3a77c4"
	s := startPID1Sandbox(t, key, "OH_SECRET_KEY="+sealing)

	t.Run("no process shows the credentials", func(t *testing.T) {
		out := s.sh(`for p in /proc/[0-9]*; do echo "== ${p#/proc/} $(tr '\0' ' ' < $p/cmdline)"; tr '\0' '\n' < $p/environ; echo; done
echo "== /proc/1/environ"; cat /proc/1/environ; echo; echo "scan done"`)
		// The scan saw PID 1 (acs) and read environments (its own shell's).
		for _, want := range []string{"\n== 1 " + filepath.Join(filepath.Dir(s.work), "acs") + " agent-server", "\nPATH=/usr/local/bin:/usr/bin:/bin\n", "scan done"} {
			if !strings.Contains("\n"+out, want) {
				t.Errorf("the scan's output lacks %q:\n%s", want, out)
			}
		}
		for name, v := range map[string]string{"the session key": key, "the secret key": sealing} {
			if strings.Contains(out, v) || strings.Contains(out, v[:12]) {
				t.Errorf("a process of the namespace shows %s:\n%s", name, out)
			}
		}
	})

	t.Run("orphans are reaped", func(t *testing.T) {
		// Each sh exits at once; its background sleep is orphaned to PID 1
		// and ends 0.1 s later.
		if out := s.sh(`for i in 1 2 3 4 5; do sh -c 'sleep 0.1 & exec true'; done; echo made`); !strings.Contains(out, "made") {
			t.Fatalf("making orphans: %s", out)
		}
		var zombies string
		if !testwait.Until(15*time.Second, func() bool {
			zombies = s.sh(`cat /proc/[0-9]*/stat 2>/dev/null | grep -E '\) Z 1 ' || true`)
			return zombies == ""
		}) {
			t.Errorf("zombies of PID 1 are never reaped:\n%s", zombies)
		}
	})

	t.Run("SIGTERM stops the server and the namespace", func(t *testing.T) {
		// A background job that outlives its shell and records SIGTERM.
		s.sh(`sh -c 'trap "echo term > orphan-term; exit 0" TERM; echo ready > orphan-ready; while :; do sleep 1; done' >/dev/null 2>&1 &`)
		s.waitFor("the background job to set its trap", 10*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(s.work, "orphan-ready"))
			return err == nil
		})
		if err := syscall.Kill(s.init, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("PID 1 did not exit within 30 s of SIGTERM; log:\n%s", s.logText())
		}
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("PID 1 exited with status %d (%v), want 0 (a graceful stop); log:\n%s", code, s.cmd.ProcessState, s.logText())
		}
		if b, err := os.ReadFile(filepath.Join(s.work, "orphan-term")); err != nil || string(b) != "term\n" {
			t.Errorf("the background job was not sent SIGTERM before the namespace ended: %q %v", b, err)
		}
		s.init = 0
		left := inNamespace(s.ns)
		if len(left) > 0 {
			t.Errorf("processes outlive PID 1 in its namespace: %q", left)
		}
	})
}
