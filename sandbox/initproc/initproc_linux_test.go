//go:build linux

package initproc_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
	switch role {
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
