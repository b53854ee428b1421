//go:build linux

package initproc

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

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
	env := os.Environ()
	if err := procenv.Seal(); err != nil {
		slog.Warn("init: could not fully seal the agent server's credentials in PID 1", "error", err)
	}
	// Catch the signals before the child exists, so none is lost or acted
	// on by default.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	pid, err := syscall.ForkExec("/proc/self/exe", argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return 0, fmt.Errorf("init: start the agent server: %w", err)
	}
	slog.Info("init: running as PID 1; the agent server is its child", "pid", pid)

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

	for {
		select {
		case s := <-sigs:
			// ESRCH: the server has just exited; its status follows.
			_ = syscall.Kill(pid, s.(syscall.Signal))
		case ws := <-serverDone:
			code := exitCode(ws)
			slog.Info("init: the agent server exited", "status", code)
			stopTheRest(noChildren)
			return code, nil
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
