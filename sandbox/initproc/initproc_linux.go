//go:build linux

package initproc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/acs-project/acs/sandbox/procenv"
)

// Needed reports whether this process is PID 1, the init of its PID
// namespace (a container's first process), which must run Run.
func Needed() bool { return os.Getpid() == 1 }

// forwarded are the signals init passes on to the server.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

// Run acts as init, as the package documentation says: it starts argv (the
// process's own arguments, os.Args) again as a child of this binary, reaps
// every child until that one exits, and returns its exit status. It returns
// an error only when the child could not be started. A failure to seal
// itself is logged and does not stop it.
func Run(argv []string) (int, error) {
	ws, err := run(argv, nil)
	if err != nil {
		return 0, err
	}
	return exitCode(ws), nil
}

// supervision is what Supervise adds to Run.
type supervision struct {
	budget time.Duration
	parent *os.File
}

// Supervise acts as a sandbox's init without being PID 1, as the package
// documentation says. argv is the agent server's command line. parentFD,
// when not negative, is a pipe from the parent process that is never
// written: its end means the parent died. It ends the way the server
// ended: killed by the same signal, or with its exit code, which it
// returns.
func Supervise(argv []string, budget time.Duration, parentFD int) (int, error) {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1, 0); e != 0 {
		return 0, fmt.Errorf("init: become the subreaper of the agent server's processes: %w", e)
	}
	sup := &supervision{budget: budget}
	if parentFD >= 0 {
		syscall.CloseOnExec(parentFD)
		sup.parent = os.NewFile(uintptr(parentFD), "parent")
	}
	ws, err := run(argv, sup)
	if err != nil {
		return 0, err
	}
	if ws.Signaled() {
		// The parent sees the server's death, not an exit code.
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal())
	}
	return exitCode(ws), nil
}

// run starts argv as the server and reaps every child until it has
// exited and the processes it left are stopped. sup is nil for PID 1.
func run(argv []string, sup *supervision) (syscall.WaitStatus, error) {
	env := os.Environ()
	if err := procenv.Seal(); err != nil {
		slog.Warn("init: could not fully seal the agent server's credentials", "error", err)
	}
	// Catch the signals before the child exists, so none is lost or acted
	// on by default.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	// The server dies with this process. The kernel ties that to the
	// thread that forks it, so the thread must outlive the server.
	runtime.LockOSThread()
	pid, err := syscall.ForkExec("/proc/self/exe", argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, fmt.Errorf("init: start the agent server: %w", err)
	}
	if sup == nil {
		slog.Info("init: running as PID 1; the agent server is its child", "pid", pid)
	} else {
		slog.Info("init: the agent server is its child; this process is the subreaper of its processes", "pid", pid)
	}

	// One goroutine reaps every child, the server and the orphans alike;
	// it ends when none is left.
	serverDone := make(chan syscall.WaitStatus, 1)
	noChildren := make(chan struct{})
	go func() {
		defer close(noChildren)
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, 0, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil: // ECHILD: no child left
				return
			case p == pid:
				serverDone <- ws
			}
		}
	}()

	var parentGone chan struct{}
	if sup != nil && sup.parent != nil {
		parentGone = make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, sup.parent)
			close(parentGone)
		}()
	}
	// Supervise gives the server half its budget to stop once told to.
	var killServer <-chan time.Time
	stop := func(sig syscall.Signal) {
		if killServer == nil {
			killServer = time.After(sup.budget / 2)
		}
		_ = syscall.Kill(pid, sig)
	}
	for {
		select {
		case s := <-sigs:
			if sup == nil {
				// ESRCH: the server has just exited; its status follows.
				_ = syscall.Kill(pid, s.(syscall.Signal))
				continue
			}
			stop(s.(syscall.Signal))
		case <-parentGone:
			slog.Warn("init: the parent process is gone; stopping the agent server")
			parentGone = nil
			stop(syscall.SIGTERM)
		case <-killServer:
			slog.Warn("init: the agent server did not stop in time; killing it", "after", sup.budget/2)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		case ws := <-serverDone:
			slog.Info("init: the agent server exited", "status", exitCode(ws))
			if sup == nil {
				stopTheRest(noChildren)
			} else {
				stopDescendants(noChildren, sup.budget/4)
			}
			return ws, nil
		}
	}
}

// stopTheRest sends SIGTERM to every other process of the PID namespace
// (kill(-1) from PID 1) and waits until init has no child left or
// StopGrace has passed.
func stopTheRest(noChildren <-chan struct{}) {
	if os.Getpid() != 1 {
		return // kill(-1) reaches the namespace only from its init
	}
	if err := syscall.Kill(-1, syscall.SIGTERM); err != nil {
		return // ESRCH: no process left
	}
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-noChildren:
	case <-t.C:
		slog.Warn("init: processes still running after SIGTERM; exiting, which kills them", "grace", StopGrace)
	}
}

// stopDescendants stops every process below this one: SIGTERM, then
// SIGKILL after grace, again until none is left. As the subreaper, this
// process becomes the parent of each orphan among them, so it has no
// child only once it has no descendant. It gives up after a further
// grace: a process in uninterruptible sleep cannot be killed.
func stopDescendants(noChildren <-chan struct{}, grace time.Duration) {
	self := os.Getpid()
	signalDescendants(self, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-noChildren:
		return
	case <-t.C:
	}
	slog.Warn("init: processes still running after SIGTERM; killing them", "grace", grace)
	t.Reset(grace)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		signalDescendants(self, syscall.SIGKILL)
		select {
		case <-noChildren:
			return
		case <-t.C:
			slog.Error("init: processes survived SIGKILL; leaving them", "pids", descendants(self))
			return
		case <-tick.C:
		}
	}
}

// signalDescendants sends sig to every descendant of root. Each is named
// by a pidfd, checked to be still below root once that pidfd is open, and
// signalled through it: a pid reused by another process meanwhile is never
// signalled.
func signalDescendants(root int, sig syscall.Signal) {
	below := descendants(root)
	tree := map[int]bool{root: true}
	for _, pid := range below {
		tree[pid] = true
	}
	for _, pid := range below {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, syscall.ENOSYS) {
			// Before Linux 5.3: the check and the signal are not atomic.
			if tree[parentOf(pid)] {
				_ = syscall.Kill(pid, sig)
			}
			continue
		}
		if err != nil {
			continue // gone
		}
		if tree[parentOf(pid)] {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		syscall.Close(fd)
	}
}

// descendants lists the processes below root, read from /proc.
func descendants(root int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid := parentOf(pid); ppid > 0 {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	seen := map[int]bool{root: true}
	queue := slices.Clone(children[root])
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue // a pid reused while /proc was read
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out
}

// parentOf is a process's parent pid, or 0 when it is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name in parentheses: state, ppid.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

// exitCode is the status a shell would report: the exit code, or 128+N
// for a process ended by signal N.
func exitCode(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 1
}
