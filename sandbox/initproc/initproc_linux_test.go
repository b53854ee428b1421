//go:build linux

package initproc_test

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/initproc"
)

// roleVar, set in the environment, makes the test binary the program under
// init instead of running tests: as PID 1 it runs initproc.Run, and the
// child Run starts (the same binary, not PID 1) plays the role named.
const roleVar = "INITPROC_TEST_ROLE"

const testKey = "initproc-test-session-key-8b1e27"

func TestMain(m *testing.M) {
	role := os.Getenv(roleVar)
	if role == "" {
		os.Exit(m.Run())
	}
	if initproc.Needed() {
		code, err := initproc.Run(os.Args)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
		os.Exit(code)
	}
	if budget := os.Getenv(superviseVar); budget != "" && !slices.Contains(os.Args, "server") {
		d, _ := time.ParseDuration(budget)
		code, err := initproc.Supervise(append(slices.Clone(os.Args), "server"), d, 3)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
		os.Exit(code)
	}
	switch role {
	case "detach":
		detach()
	case "exit7":
		os.Exit(7)
	case "killed":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "signals":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
		fmt.Println("ready")
		fmt.Println("got", <-c)
		os.Exit(0)
	case "env":
		// What the server gets, and what PID 1 shows.
		environ, err := os.ReadFile("/proc/1/environ")
		fmt.Printf("pid=%d key=[%s]\nproc1=[%s] err=%v\n", os.Getpid(), os.Getenv("OH_SESSION_API_KEYS_0"),
			bytes.ReplaceAll(environ, []byte{0}, []byte{'\n'}), err)
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	os.Exit(98)
}

// superviseVar, set to a stop budget, makes the test binary run
// initproc.Supervise with fd 3 as its parent's pipe; the server it starts
// (the same binary, with the argument "server") plays the role named.
const superviseVar = "INITPROC_TEST_SUPERVISE"

// detach is the role of a server that detaches a job (setsid, in the
// background, from a shell that exits at once) which writes its pid to
// $JOB_DIR/job.pid and ignores SIGTERM when JOB_IGNORES_TERM is set. Once
// the job runs, it prints "ready" and then does what $THEN says: exit7,
// killed (SIGKILL itself), term (exit 0 on SIGTERM) or ignore (SIGTERM).
func detach() {
	dir := os.Getenv("JOB_DIR")
	trap := ""
	if os.Getenv("JOB_IGNORES_TERM") != "" {
		trap = `trap "" TERM; `
	}
	job := fmt.Sprintf(`%secho $$ > %s/job.pid; while :; do sleep 0.1; done`, trap, dir)
	if err := exec.Command("sh", "-c", "setsid sh -c '"+job+"' </dev/null >/dev/null 2>&1 &").Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(97)
	}
	for {
		if b, _ := os.ReadFile(dir + "/job.pid"); bytes.HasSuffix(b, []byte("\n")) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	then := os.Getenv("THEN")
	if then == "ignore" {
		signal.Ignore(syscall.SIGTERM)
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	fmt.Println("ready")
	switch then {
	case "exit7":
		os.Exit(7)
	case "killed":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "term":
		<-c
		os.Exit(0)
	}
	select {}
}

// TestSuperviseStopsEveryProcess: under Supervise, a job the server
// detached stops, SIGTERM first (SIGKILL a quarter of the budget later for
// one that ignores it), however the server ends: it exits or is killed,
// init is told to stop or its parent's pipe ends. A server that ignores
// SIGTERM is killed after half the budget. Init ends the way the server
// ended.
func TestSuperviseStopsEveryProcess(t *testing.T) {
	for _, tc := range []struct {
		name       string
		then       string
		budget     time.Duration // init's stop budget; 20s unless set
		ignoreTerm bool          // the job ignores SIGTERM
		stop       func(init *exec.Cmd, parent *os.File)
		code       int            // init's exit code, when no signal
		signal     syscall.Signal // the signal init ends with
	}{
		{name: "server exits", then: "exit7", code: 7},
		{name: "server killed", then: "killed", signal: syscall.SIGKILL},
		{name: "server killed, job ignores SIGTERM", then: "killed", budget: 2 * time.Second, ignoreTerm: true, signal: syscall.SIGKILL},
		{name: "init told to stop", then: "term",
			stop: func(init *exec.Cmd, _ *os.File) { init.Process.Signal(syscall.SIGTERM) }},
		{name: "parent gone", then: "term",
			stop: func(_ *exec.Cmd, parent *os.File) { parent.Close() }},
		{name: "server ignores SIGTERM", then: "ignore", budget: 2 * time.Second, signal: syscall.SIGKILL,
			stop: func(init *exec.Cmd, _ *os.File) { init.Process.Signal(syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := cmp.Or(tc.budget, 20*time.Second)
			dir := t.TempDir()
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), roleVar+"=detach", superviseVar+"="+budget.String(), "JOB_DIR="+dir, "THEN="+tc.then)
			if tc.ignoreTerm {
				cmd.Env = append(cmd.Env, "JOB_IGNORES_TERM=1")
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close()
			cmd.ExtraFiles = []*os.File{pr}
			stderr := &bytes.Buffer{}
			cmd.Stderr = stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				t.Fatalf("the server did not start: %q %v; stderr:\n%s", line, err, stderr)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "job.pid"))
			job, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			t.Cleanup(func() {
				if jobRuns(job) {
					syscall.Kill(job, syscall.SIGKILL)
				}
			})
			if !jobRuns(job) {
				t.Fatalf("the detached job %q does not run", b)
			}
			if tc.stop != nil {
				tc.stop(cmd, pw)
			}
			testwait.For(t, 10*time.Second, fmt.Sprintf("the detached job %d to stop", job), func() bool { return !jobRuns(job) })
			cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			switch {
			case tc.signal != 0 && (!ws.Signaled() || ws.Signal() != tc.signal):
				t.Errorf("init ended with %v, want the signal %v; stderr:\n%s", cmd.ProcessState, tc.signal, stderr)
			case tc.signal == 0 && cmd.ProcessState.ExitCode() != tc.code:
				t.Errorf("init ended with %v, want exit code %d; stderr:\n%s", cmd.ProcessState, tc.code, stderr)
			}
		})
	}
}

// jobRuns reports whether pid is a live process (not a zombie) running
// the job's loop.
func jobRuns(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid <= 1 {
		return false
	}
	if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) == 0 || f[0] == "Z" {
		return false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmdline, []byte("while"))
}

// underInit starts this test binary as PID 1 of a new PID namespace with
// the role given; stdout is returned as a pipe.
func underInit(t *testing.T, role string) (*exec.Cmd, io.Reader, *bytes.Buffer) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes a PID namespace (unshare --pid --mount-proc)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed to run as PID 1: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", "--kill-child", self, "-test.run=^$")
	cmd.Env = append(os.Environ(), roleVar+"="+role, "OH_SESSION_API_KEYS_0="+testKey)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out, stderr
}

// TestRunExitsWithTheServersStatus: init exits with the server's exit
// code, or 128+N when signal N killed it.
func TestRunExitsWithTheServersStatus(t *testing.T) {
	for _, tc := range []struct {
		role string
		want int
	}{{"exit7", 7}, {"killed", 128 + int(syscall.SIGKILL)}} {
		t.Run(tc.role, func(t *testing.T) {
			cmd, out, stderr := underInit(t, tc.role)
			io.Copy(io.Discard, out)
			cmd.Wait()
			if got := cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("exit status %d, want %d; stderr:\n%s", got, tc.want, stderr)
			}
		})
	}
}

// TestRunForwardsSignals: SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to PID
// 1 reach the server, which then exits; init exits with its status.
func TestRunForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, out, stderr := underInit(t, "signals")
			r := bufio.NewReader(out)
			if line, err := r.ReadString('\n'); line != "ready\n" {
				t.Fatalf("the server did not start: %q %v; stderr:\n%s", line, err, stderr)
			}
			init := pid1Of(t, cmd.Process.Pid)
			if err := syscall.Kill(init, sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(r)
			cmd.Wait()
			if want := "got " + sig.String() + "\n"; string(rest) != want {
				t.Errorf("the server printed %q, want %q; stderr:\n%s", rest, want, stderr)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit status %d, want 0; stderr:\n%s", code, stderr)
			}
		})
	}
}

// TestRunSealsPID1: the server gets the whole environment, session key
// included; PID 1's /proc/1/environ no longer holds it (not even for root,
// which may read a non-dumpable process's environ: the value is wiped).
func TestRunSealsPID1(t *testing.T) {
	cmd, out, stderr := underInit(t, "env")
	b, _ := io.ReadAll(out)
	cmd.Wait()
	got := string(b)
	if !strings.Contains(got, "key=["+testKey+"]") || strings.Contains(got, "pid=1 ") {
		t.Errorf("the server, a child of PID 1, did not get the session key:\n%s\nstderr:\n%s", got, stderr)
	}
	proc1, _, _ := strings.Cut(got[strings.Index(got, "proc1=["):], "] err=")
	if !strings.Contains(proc1, "PATH=") || !strings.Contains(proc1, "OH_SESSION_API_KEYS_0=") {
		t.Fatalf("PID 1's environ was not read: %s", got)
	}
	if strings.Contains(proc1, testKey) {
		t.Errorf("PID 1's /proc/1/environ holds the session key:\n%s", proc1)
	}
}

// pid1Of is the PID, outside the namespace, of unshare's child (the
// namespace's PID 1).
func pid1Of(t *testing.T, unshare int) int {
	t.Helper()
	var n int
	testwait.For(t, 10*time.Second, fmt.Sprintf("a child of unshare (%d)", unshare), func() bool {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(fields) > 1 && fields[1] == strconv.Itoa(unshare) {
				n, _ = strconv.Atoi(filepath.Base(filepath.Dir(f)))
				return true
			}
		}
		return false
	})
	return n
}
