//go:build linux

package procsandbox_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxtest"
)

// detachedEnv is one sandbox, owned by this test process (rt) or by an
// owner process (owner), with a job its agent server detached.
type detachedEnv struct {
	root, id  string
	noCgroups bool
	rt        *procsandbox.Runtime
	owner     *exec.Cmd
}

// pid reads one of the sandbox's pid files (agent.pid, init.pid).
func (e *detachedEnv) pid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, e.id, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("%s: %q", name, b)
	}
	return pid
}

// signalOwner sends sig to the owner process.
func (e *detachedEnv) signalOwner(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := e.owner.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// TestDetachedProcessesStop: a job the agent detaches from its shell
// (setsid, in the background) stops with its sandbox, however the sandbox
// stops: paused, deleted, its agent server or its init killed, its owner
// stopped or killed. The agent server stops with it. Each case runs with
// the sandbox's init alone and, where this process may create cgroups,
// with a cgroup per sandbox too; the cases marked cgroup need one.
func TestDetachedProcessesStop(t *testing.T) {
	kill := func(t *testing.T, pid int) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		owned  bool // the sandbox's owner is a process of its own
		cgroup bool
		stop   func(t *testing.T, e *detachedEnv)
	}{
		{name: "pause", stop: func(t *testing.T, e *detachedEnv) {
			if err := e.rt.Pause(t.Context(), e.id); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "delete", stop: func(t *testing.T, e *detachedEnv) {
			if err := e.rt.Delete(t.Context(), e.id); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "agent server killed", stop: func(t *testing.T, e *detachedEnv) { kill(t, e.pid(t, "agent.pid")) }},
		{name: "init killed", cgroup: true, stop: func(t *testing.T, e *detachedEnv) { kill(t, e.pid(t, "init.pid")) }},
		{name: "owner stopped", owned: true, stop: func(t *testing.T, e *detachedEnv) { e.signalOwner(t, syscall.SIGTERM) }},
		{name: "owner killed", owned: true, stop: func(t *testing.T, e *detachedEnv) { e.signalOwner(t, syscall.SIGKILL) }},
		{name: "owner and init killed then a runtime started", owned: true, cgroup: true, stop: func(t *testing.T, e *detachedEnv) {
			// The owner cannot act (stopped), the init dies first: only the
			// next runtime on the root can stop the job.
			e.signalOwner(t, syscall.SIGSTOP)
			kill(t, e.pid(t, "init.pid"))
			e.signalOwner(t, syscall.SIGKILL)
			e.owner.Wait()
			restartOn(t, e.root)
		}},
	}
	cgroups := cgroupsHere()
	for _, mode := range []struct {
		name      string
		noCgroups bool
	}{{"init", true}, {"init and cgroup", false}} {
		for _, tc := range cases {
			if tc.cgroup && mode.noCgroups {
				continue
			}
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				if !mode.noCgroups && !cgroups {
					t.Skip("needs cgroup v2 this process may create cgroups in")
				}
				e := &detachedEnv{root: t.TempDir(), id: "detached", noCgroups: mode.noCgroups}
				var st acs.RuntimeStatus
				if tc.owned {
					e.owner, st = startOwner(t, e)
				} else {
					e.rt, st = startRuntime(t, e)
				}
				job := sandboxtest.DetachJob(t, st.AgentURL, st.SessionKey)
				server := e.pid(t, "agent.pid")
				tc.stop(t, e)
				testwait.For(t, 20*time.Second, fmt.Sprintf("the detached job %d to stop", job), func() bool { return !sandboxtest.ProcessRuns(job, "while") })
				testwait.For(t, 20*time.Second, fmt.Sprintf("the agent server %d to stop", server), func() bool { return !sandboxtest.ProcessRuns(server, "agent-server") })
			})
		}
	}
}

// TestStatusIsNotRunningOnceTheAgentServerExited: once a sandbox's agent
// server has exited and been reaped, Status no longer reads RUNNING, even
// while its init still waits for a job that ignores SIGTERM. The exit that
// completes a crash loop reads ERROR at once.
func TestStatusIsNotRunningOnceTheAgentServerExited(t *testing.T) {
	const id = "exited"
	root := t.TempDir()
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root, RestartBackoff: 100 * time.Millisecond,
		StopTimeout: 4 * time.Second, CrashLoopCount: 2, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	if _, err := rt.Start(t.Context(), acs.StartRequest{SandboxID: id, SessionKey: "test-key"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []acs.SandboxStatus{acs.SandboxStarting, acs.SandboxError} {
		var st acs.RuntimeStatus
		testwait.For(t, 30*time.Second, "the sandbox to run", func() bool {
			st, _ = rt.Status(t.Context(), id)
			return st.Status == acs.SandboxRunning
		})
		sandboxtest.DetachStubbornJob(t, st.AgentURL, st.SessionKey)
		e := &detachedEnv{root: root, id: id}
		server := e.pid(t, "agent.pid")
		if err := syscall.Kill(server, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 20*time.Second, "the agent server to be reaped", func() bool { return syscall.Kill(server, 0) != nil })
		got, err := rt.Status(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want {
			t.Fatalf("%s (%s) once the agent server was reaped, want %s", got.Status, got.Detail, want)
		}
	}
}

// restartOn starts a runtime on root and closes it: it stops what a
// runtime that died there left.
func restartOn(t *testing.T, root string) {
	t.Helper()
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
}

// startRuntime starts e's sandbox in a runtime of this process.
func startRuntime(t *testing.T, e *detachedEnv) (*procsandbox.Runtime, acs.RuntimeStatus) {
	t.Helper()
	root, id := e.root, e.id
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root, RestartBackoff: 200 * time.Millisecond,
		NoCgroups: e.noCgroups})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	if _, err := rt.Start(t.Context(), acs.StartRequest{SandboxID: id, SessionKey: "test-key"}); err != nil {
		t.Fatal(err)
	}
	var st acs.RuntimeStatus
	testwait.For(t, 30*time.Second, "the sandbox to run", func() bool {
		st, _ = rt.Status(t.Context(), id)
		return st.Status == acs.SandboxRunning
	})
	return rt, st
}

// startOwner starts an owner process (the owner role of TestMain) of e's
// sandbox and returns it with the running sandbox's status. Once the test
// has ended, a runtime started on the root stops what the owner left.
func startOwner(t *testing.T, e *detachedEnv) (*exec.Cmd, acs.RuntimeStatus) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), ownerVar+"=1", "OWNER_BIN="+testbin.ACS(t), "OWNER_ROOT="+e.root, "OWNER_ID="+e.id)
	if e.noCgroups {
		cmd.Env = append(cmd.Env, "OWNER_NO_CGROUPS=1")
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
		restartOn(t, e.root)
	})
	line, err := bufio.NewReader(out).ReadBytes('\n')
	var st acs.RuntimeStatus
	if err != nil || json.Unmarshal(line, &st) != nil {
		t.Fatalf("the owner did not report its sandbox: %q %v; stderr:\n%s", line, err, stderr)
	}
	return cmd, st
}

// cgroupsHere reports whether this process may create cgroup v2 groups
// in its own cgroup.
func cgroupsHere() bool {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	var path string
	for _, line := range strings.Split(string(own), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "cgroup2 ") || path == "" {
			continue
		}
		probe := filepath.Join(f[4], path, "procsandbox-test-probe-"+acs.NewID()[:8])
		if os.Mkdir(probe, 0o755) == nil {
			os.Remove(probe)
			return true
		}
	}
	return false
}
