package mcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// stderrKeep is how much of a stdio server's stderr is kept for errors.
const stderrKeep = 16 << 10

// DefaultEnv is the base environment of stdio servers when Options.Env is
// nil: PATH, HOME and LANG of this process (those that are set).
func DefaultEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// mergeEnv returns base with the configured variables set on top.
func mergeEnv(base []string, set map[string]string) []string {
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := set[k]; !over {
			out = append(out, kv)
		}
	}
	for _, k := range sortedKeys(set) {
		out = append(out, k+"="+set[k])
	}
	return out
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// process is a running stdio server.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end of the server's stdin
	stdout  *os.File // our end of the server's stdout
	stderr  *tailBuffer
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // set before done is closed
	killed  atomic.Bool   // we killed it
}

// startError is a failure to start the process; msg is safe (it holds no
// expanded value).
type startError struct{ msg string }

func (e *startError) Error() string { return e.msg }

// startProcess starts the server: exp is the expanded configuration, raw the
// configured one (for messages). The server gets env and nothing else of
// this process's environment, its own process group, and pipes for stdin,
// stdout and stderr.
func startProcess(raw, exp ServerConfig, env []string) (*process, error) {
	cwd := ""
	if exp.Cwd != nil {
		cwd = *exp.Cwd
		if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
			return nil, &startError{fmt.Sprintf("working directory %q does not exist or is not a directory", *raw.Cwd)}
		}
	}
	path, err := lookPath(*exp.Command, envValue(env, "PATH"), cwd)
	if err != nil {
		return nil, &startError{err.Error()}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &process{stdin: inW, stdout: outR, stderr: newTailBuffer(stderrKeep), done: make(chan struct{})}
	p.cmd = &exec.Cmd{
		Path:      path,
		Args:      append([]string{*exp.Command}, exp.Args...),
		Env:       env,
		Dir:       cwd,
		Stdin:     inR,
		Stdout:    outW,
		Stderr:    p.stderr,
		WaitDelay: time.Second, // do not wait for stderr held open by grandchildren
	}
	setProcessGroup(p.cmd)
	err = p.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, &startError{"could not be started: " + startErrorReason(err)}
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func startErrorReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, exec.ErrNotFound):
		return "not found"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error() // without the (expanded) path
	}
	return "start failed"
}

// lookPath finds an executable the way a shell would, using the PATH the
// server will get. Relative PATH entries are ignored.
func lookPath(name, pathEnv, cwd string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			base := cwd
			if base == "" {
				var err error
				if base, err = os.Getwd(); err != nil {
					return "", errors.New("cannot be resolved (no working directory)")
				}
			}
			p = filepath.Join(base, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", errors.New("not found in PATH (is it installed?)")
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("not found (no such file)")
	case err != nil:
		return errors.New("cannot be accessed")
	case st.IsDir():
		return errors.New("is a directory")
	case st.Mode()&0o111 == 0:
		return errors.New("is not executable")
	}
	return nil
}

// exited reports whether the process has exited, waiting at most d.
func (p *process) exited(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// exitStatus describes how the process ended; call after done.
func (p *process) exitStatus() string {
	st := p.cmd.ProcessState
	switch {
	case st == nil:
		return "exited"
	case p.killed.Load():
		return "was killed"
	case st.Exited():
		return fmt.Sprintf("exited with status %d", st.ExitCode())
	}
	return "ended: " + st.String() // "signal: killed"
}

// kill kills the process group at once and closes our pipe ends.
func (p *process) kill() {
	p.killed.Store(true)
	killGroup(p.cmd.Process, true)
	p.stdin.Close()
	p.stdout.Close()
}

// stop ends the server the way the MCP specification asks: close its stdin,
// wait up to grace for it to exit, then SIGTERM, then SIGKILL (at once when
// it was already killed). Whatever is left of its process group is killed
// too. stop returns once the process has been reaped, or after at most
// 2*grace+5s.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	if !p.killed.Load() && !p.exited(grace) {
		killGroup(p.cmd.Process, false)
		if !p.exited(grace) {
			p.killed.Store(true)
		}
	}
	killGroup(p.cmd.Process, true) // the server if it is still running, and children left behind
	p.exited(5 * time.Second)
	p.stdout.Close()
}
