// Package procsandbox is the local acs.Runtime: each sandbox is a child
// process running `acs agent-server` on its own 127.0.0.1 port, with its own
// workspace, home directory and random session key, under Root/{sandbox id}.
//
// Pausing stops the process and keeps the directory; resuming starts it
// again with a new session key. A sandbox whose directory exists but has no
// process (for example after `acs serve` restarted) is PAUSED. Children get a
// minimal environment (never the control plane's secrets).
//
// Every process a sandbox starts stops with it. On Linux the child is the
// sandbox's init (initproc.Supervise), which starts the agent server: the
// subreaper of every process below it, detached ones included, it stops
// them all when the agent server exits, when the sandbox is paused or
// deleted, and when this process dies (the end of a pipe from it). Where
// this process may create cgroups (v2), each start also gets a cgroup of
// its own, killed once the init has exited: nothing the sandbox started
// outlives it even when its init was killed. A runtime started on the root
// of one that died stops what that one left: the inits, known by their
// command line, and the cgroups.
//
// An agent server that exits on its own (a crash, an OOM kill) is restarted
// like a Kubernetes container with restartPolicy Always: on the same
// directories with the same session key and environment, after a back-off
// (RestartBackoff, doubled per recent crash, at most RestartBackoffMax);
// meanwhile the sandbox is STARTING. Only a crash loop (CrashLoopCount exits
// within CrashLoopWindow), a workspace that is gone or an agent server that
// cannot start (it exits before listening) makes it ERROR, and an ERROR
// sandbox stays so until Resume starts it afresh (a new key, the crash count
// cleared) or it is deleted.
package procsandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/shared/acs"
)

// Config configures the runtime.
type Config struct {
	// Binary is the acs executable started in each sandbox.
	Binary string
	// Root holds one directory per sandbox.
	Root string
	// PassEnv lists variables copied from this process's environment into
	// every sandbox (default PATH, LANG, LC_ALL, TZ, TERM, GOCOVERDIR).
	PassEnv []string
	// StopTimeout is how long a sandbox gets to exit after SIGTERM; its
	// init gives the agent server half of it and the processes left a
	// quarter.
	StopTimeout time.Duration
	// RestartBackoff is the wait before restarting an agent server that
	// exited on its own (default 1s); it doubles with each further crash
	// within CrashLoopWindow, up to RestartBackoffMax (default 30s).
	RestartBackoff    time.Duration
	RestartBackoffMax time.Duration
	// CrashLoopCount exits within CrashLoopWindow (default 3 within 5m) are
	// a crash loop: the sandbox is ERROR instead of restarted again.
	CrashLoopCount  int
	CrashLoopWindow time.Duration
	// Warm is how many pre-started agent servers the runtime keeps ready
	// for the spec Fill is given first (the default spec); 0 keeps none.
	// Start claims one (see pool.go) when the request's spec and
	// environment are those the pool was started with.
	Warm int
	// NoCgroups turns the sandboxes' cgroups off: each sandbox's init
	// alone stops the processes it started.
	NoCgroups bool
	// WarmEnv is the environment the control plane starts sandboxes with
	// (StartRequest.Env, for example its webhook URL): warm agent servers
	// are started with it over their spec's InitialEnv.
	WarmEnv map[string]string
}

const (
	metaFile = "sandbox.json"
	addrFile = "agent.addr"
	// pidFile holds the agent server's pid, written by it.
	pidFile = "agent.pid"
	// initPidFile holds the pid of the sandbox's init, this process's child.
	initPidFile = "init.pid"
	// cgroupFile holds the path of the sandbox's cgroup, if it has one.
	cgroupFile = "agent.cgroup"
	logFile    = "agent-server.log"
)

type meta struct {
	ID         string    `json:"id"`
	OwnerID    string    `json:"owner_id"`
	SpecID     string    `json:"spec_id"`
	WorkingDir string    `json:"working_dir"`
	CreatedAt  time.Time `json:"created_at"`
}

// proc is a sandbox's supervised agent server: its current process and,
// across automatic restarts, its key, environment and recent crashes.
type proc struct {
	// id is the sandbox's id (a warm member's own id until it is claimed).
	id       string
	key      string
	env      map[string]string
	run      *run
	stopping bool // stopped on purpose (pause, delete, close): no restart
	// crashes are the times of exits on its own within CrashLoopWindow.
	crashes []time.Time
	// lastExit says how the last process ended ("signal: killed").
	lastExit string
	// restart is the pending restart, due at restartAt.
	restart   *time.Timer
	restartAt time.Time
	// failed, once set, makes the sandbox ERROR with it as the detail; no
	// restart follows.
	failed string
	// wasReady: a process of this sandbox got as far as listening. One
	// that exits before (it cannot start) is ERROR at once.
	wasReady bool
	// pool is "hit" for a sandbox given a warm agent server, "miss" for
	// one started cold while the pool was on, "" without a pool.
	pool string
}

// run is one agent-server process, under its init.
type run struct {
	cmd *exec.Cmd
	// cgroup is the path of its cgroup, "" without one.
	cgroup string
	// done is closed once the process has exited and its cgroup is gone.
	done    chan struct{}
	exitErr error
	// agentPid is the agent server's pid, once read from its pid file.
	agentPid int
}

// live reports whether the current process runs.
func (p *proc) live() bool { return p.run != nil && !exited(p.run) }

// Runtime runs sandboxes as child processes.
type Runtime struct {
	cfg   Config
	mu    sync.Mutex
	procs map[string]*proc
	warm  warmPool
	// lifeline is a pipe nothing is written to. Each sandbox's init gets
	// its read end; the write end closes when this process dies.
	lifeline, lifelineRead *os.File
	cg                     cgroups
}

var _ acs.Runtime = (*Runtime)(nil)

// New returns a runtime over cfg.Root, killing orphans of a previous run.
func New(cfg Config) (*Runtime, error) {
	if cfg.Binary == "" {
		return nil, errors.New("procsandbox: Binary is required")
	}
	if cfg.PassEnv == nil {
		cfg.PassEnv = []string{"PATH", "LANG", "LC_ALL", "TZ", "TERM", "GOCOVERDIR"}
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = time.Second
	}
	if cfg.RestartBackoffMax <= 0 {
		cfg.RestartBackoffMax = 30 * time.Second
	}
	if cfg.CrashLoopCount <= 0 {
		cfg.CrashLoopCount = 3
	}
	if cfg.CrashLoopWindow <= 0 {
		cfg.CrashLoopWindow = 5 * time.Minute
	}
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, fmt.Errorf("procsandbox: create root: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("procsandbox: create the sandboxes' lifeline: %w", err)
	}
	r := &Runtime{cfg: cfg, procs: map[string]*proc{}, warm: warmPool{hash: map[string]string{}},
		lifeline: pw, lifelineRead: pr}
	if !cfg.NoCgroups {
		r.cg = newCgroups()
	}
	entries, _ := os.ReadDir(cfg.Root)
	r.stopOrphans(entries)
	r.removeUnclaimed(entries)
	return r, nil
}

// stopOrphans stops what a runtime that died left running under root:
// each sandbox's init, or agent server from before inits, is sent SIGTERM
// and given StopTimeout, then killed with its process group; then each
// sandbox's cgroup is killed. A pid counts only while its command line
// is an agent server's in the sandbox's directory.
func (r *Runtime) stopOrphans(entries []os.DirEntry) {
	type orphan struct {
		pid int
		dir string
	}
	var left []orphan
	for _, e := range entries {
		dir := filepath.Join(r.cfg.Root, e.Name())
		for _, f := range []string{initPidFile, pidFile} {
			if pid := orphanPid(dir, f); pid > 0 {
				slog.Warn("procsandbox: stopping an orphaned agent server", "pid", pid, "dir", dir)
				_ = syscall.Kill(pid, syscall.SIGTERM)
				left = append(left, orphan{pid, dir})
			}
		}
	}
	deadline := time.Now().Add(r.cfg.StopTimeout)
	for _, o := range left {
		for time.Now().Before(deadline) && orphanOf(o.pid, o.dir) {
			time.Sleep(20 * time.Millisecond)
		}
		if orphanOf(o.pid, o.dir) {
			_ = syscall.Kill(-o.pid, syscall.SIGKILL)
			_ = syscall.Kill(o.pid, syscall.SIGKILL)
		}
	}
	for _, e := range entries {
		dir := filepath.Join(r.cfg.Root, e.Name())
		if b, err := os.ReadFile(filepath.Join(dir, cgroupFile)); err == nil {
			killCgroup(strings.TrimSpace(string(b)))
		}
		removeRunFiles(dir)
	}
}

// orphanPid is the pid in dir's pid file f when it is a live agent server
// or init of the sandbox in dir; 0 otherwise.
func orphanPid(dir, f string) int {
	b, err := os.ReadFile(filepath.Join(dir, f))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !orphanOf(pid, dir) {
		return 0
	}
	return pid
}

// orphanOf reports whether pid runs `acs agent-server` for the sandbox in
// dir (its command line names the directory a warm sandbox's link leads
// to, where it was started).
func orphanOf(pid int, dir string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "agent-server") && strings.Contains(string(cmdline), dir)
}

// removeRunFiles removes the files that describe a running sandbox.
func removeRunFiles(dir string) {
	for _, f := range []string{initPidFile, pidFile, addrFile, cgroupFile} {
		os.Remove(filepath.Join(dir, f))
	}
}

func (r *Runtime) dir(id string) string { return filepath.Join(r.cfg.Root, id) }

func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Start creates the sandbox directory and starts its agent server. A
// sandbox already running, starting or restarting after a crash is left as
// it is; one that failed (ERROR) starts afresh. A write that finds the disk
// full wraps acs.ErrStorageFull.
func (r *Runtime) Start(ctx context.Context, req acs.StartRequest) (acs.RuntimeStatus, error) {
	if !validID(req.SandboxID) {
		return acs.RuntimeStatus{}, fmt.Errorf("procsandbox: sandbox id %q: %w", req.SandboxID, acs.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.procs[req.SandboxID]; ok {
		if p.failed == "" {
			return r.statusLocked(req.SandboxID), nil
		}
		delete(r.procs, req.SandboxID)
	}
	pool := ""
	if r.cfg.Warm > 0 && r.warm.spec != nil && r.warm.spec.ID == req.Spec.ID {
		pool = "miss"
		if r.claimLocked(req) {
			return r.statusLocked(req.SandboxID), nil
		}
	}
	dir := r.dir(req.SandboxID)
	work := filepath.Join(dir, "workspace")
	for _, d := range []string{work, filepath.Join(dir, "state"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return acs.RuntimeStatus{}, storageErr(fmt.Errorf("procsandbox: create %s: %w", d, err))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err != nil {
		m := meta{ID: req.SandboxID, OwnerID: req.OwnerID, SpecID: req.Spec.ID, WorkingDir: work, CreatedAt: time.Now().UTC()}
		raw, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, metaFile), raw, 0o600); err != nil {
			return acs.RuntimeStatus{}, storageErr(fmt.Errorf("procsandbox: write meta: %w", err))
		}
	}
	if err := r.launchLocked(req.SandboxID, req.SessionKey, mergeEnv(req.Spec.InitialEnv, req.Env)); err != nil {
		return acs.RuntimeStatus{}, storageErr(err)
	}
	r.procs[req.SandboxID].pool = pool
	return r.statusLocked(req.SandboxID), nil
}

// storageErr wraps err with acs.ErrStorageFull when it is a write that
// found the disk or quota full.
func storageErr(err error) error {
	if diskfull.Is(err) {
		return fmt.Errorf("%w: %w", err, acs.ErrStorageFull)
	}
	return err
}

func mergeEnv(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func exited(p *run) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// launchLocked starts the sandbox's agent server with key and env. The
// sandbox's supervision state (its crashes) is kept: callers starting a
// sandbox afresh delete it from r.procs first.
func (r *Runtime) launchLocked(id, key string, env map[string]string) error {
	dir := r.dir(id)
	removeRunFiles(dir)
	logf, err := os.OpenFile(filepath.Join(dir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("procsandbox: open log: %w", err)
	}
	initFlags := initArgs(r.cfg.StopTimeout)
	args := append([]string{"agent-server"}, initFlags...)
	args = append(args, "--pid-file", filepath.Join(dir, pidFile), "--addr", "127.0.0.1:0", "--addr-file", filepath.Join(dir, addrFile))
	vars := map[string]string{}
	for _, k := range r.cfg.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	if vars["PATH"] == "" {
		vars["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	for k, v := range env {
		vars[k] = v
	}
	vars["HOME"] = filepath.Join(dir, "home")
	vars["OH_SESSION_API_KEYS_0"] = key
	vars["OH_CONVERSATIONS_PATH"] = filepath.Join(dir, "state", "conversations")
	vars["ACS_WORKSPACE_DIR"] = filepath.Join(dir, "workspace")
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(r.cfg.Binary, args...)
		cmd.Dir = filepath.Join(dir, "workspace")
		cmd.Env = environ
		cmd.Stdout, cmd.Stderr = logf, logf
		if len(initFlags) > 0 {
			cmd.ExtraFiles = []*os.File{r.lifelineRead}
		}
		return cmd
	}
	cmd, cgroup, err := r.startLocked(id, newCmd)
	if err != nil {
		logf.Close()
		return fmt.Errorf("procsandbox: start agent server: %w", err)
	}
	_ = os.WriteFile(filepath.Join(dir, initPidFile), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	if cgroup != "" {
		_ = os.WriteFile(filepath.Join(dir, cgroupFile), []byte(cgroup), 0o600)
	}
	p := r.procs[id]
	if p == nil {
		p = &proc{id: id}
		r.procs[id] = p
	}
	rn := &run{cmd: cmd, cgroup: cgroup, done: make(chan struct{})}
	p.key, p.env, p.run = key, env, rn
	go r.supervise(p, rn, logf)
	return nil
}

// startLocked starts a command made by newCmd in a new cgroup for
// sandbox id, or without one when there are no cgroups, and returns it
// with the cgroup's path. A kernel that cannot start a process in a cgroup
// turns cgroups off.
func (r *Runtime) startLocked(id string, newCmd func() *exec.Cmd) (*exec.Cmd, string, error) {
	cgroup, fd, err := r.cg.create(id)
	if err != nil {
		slog.Warn("procsandbox: starting a sandbox without a cgroup", "sandbox", id, "error", err)
	}
	cmd := newCmd()
	cmd.SysProcAttr = sysProcAttr(fd)
	err = cmd.Start()
	if fd >= 0 {
		syscall.Close(fd)
	}
	if err == nil || cgroup == "" {
		return cmd, cgroup, err
	}
	os.Remove(cgroup)
	slog.Warn("procsandbox: cannot start a process in a cgroup; cgroups are off", "error", err)
	r.cg = cgroups{}
	cmd = newCmd()
	cmd.SysProcAttr = sysProcAttr(-1)
	return cmd, "", cmd.Start()
}

// supervise waits for a process to end; one that ended on its own is a
// crash (crashedLocked). Whatever is left in its cgroup is killed. The
// sandbox is p's id at the time it ends (a warm member claimed meanwhile is
// the sandbox's).
func (r *Runtime) supervise(p *proc, rn *run, logf *os.File) {
	err := rn.cmd.Wait()
	logf.Close()
	killCgroup(rn.cgroup)
	r.mu.Lock()
	defer r.mu.Unlock()
	rn.exitErr = err
	close(rn.done)
	if p.stopping || r.procs[p.id] != p || p.run != rn {
		return
	}
	r.crashedLocked(p.id, p, err)
}

// crashedLocked handles an agent server that exited on its own: it is
// restarted after the back-off, unless this exit completes a crash loop or
// the workspace is gone, which make the sandbox ERROR. A sandbox whose
// agent server never got as far as listening cannot start: it is ERROR at
// once (restarting it would only delay the error).
func (r *Runtime) crashedLocked(id string, p *proc, err error) {
	now := time.Now()
	p.lastExit = exitText(err)
	recent := p.crashes[:0]
	for _, at := range p.crashes {
		if now.Sub(at) < r.cfg.CrashLoopWindow {
			recent = append(recent, at)
		}
	}
	p.crashes = append(recent, now)
	n := len(p.crashes)
	if _, err := os.Stat(filepath.Join(r.dir(id), addrFile)); err == nil {
		p.wasReady = true
	}
	switch {
	case !p.wasReady:
		p.failed = fmt.Sprintf("the agent server exited (%s) before it was ready; last log lines: %s",
			p.lastExit, tail(filepath.Join(r.dir(id), logFile), 600))
	case !r.hasWorkspace(id):
		p.failed = fmt.Sprintf("the agent server exited (%s) and the sandbox's workspace is gone", p.lastExit)
	case n >= r.cfg.CrashLoopCount:
		p.failed = fmt.Sprintf("crash loop: the agent server exited %d times within %s (last: %s); it is not restarted again until the sandbox is resumed; last log lines: %s",
			n, r.cfg.CrashLoopWindow, p.lastExit, tail(filepath.Join(r.dir(id), logFile), 600))
	}
	if p.failed != "" {
		slog.Warn("procsandbox: agent server exited; the sandbox is ERROR", "sandbox", id, "exit", p.lastExit, "detail", p.failed)
		return
	}
	delay := r.cfg.RestartBackoff
	for i := 1; i < n && delay < r.cfg.RestartBackoffMax; i++ {
		delay *= 2
	}
	delay = min(delay, r.cfg.RestartBackoffMax)
	p.restartAt = now.Add(delay)
	p.restart = time.AfterFunc(delay, func() { r.restartCrashed(id, p) })
	slog.Warn("procsandbox: agent server exited; restarting it", "sandbox", id, "exit", p.lastExit, "in", delay, "crashes", n)
}

// restartCrashed starts a crashed agent server again, with its key and
// environment, unless the sandbox was stopped or deleted meanwhile.
func (r *Runtime) restartCrashed(id string, p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id = p.id // claimed from the pool meanwhile
	if r.procs[id] != p || p.stopping || p.failed != "" || p.live() {
		return
	}
	p.restart = nil
	if !r.hasWorkspace(id) {
		p.failed = fmt.Sprintf("the agent server exited (%s) and the sandbox's workspace is gone", p.lastExit)
		return
	}
	if err := r.launchLocked(id, p.key, p.env); err != nil {
		p.failed = fmt.Sprintf("the agent server exited (%s) and could not be restarted: %v", p.lastExit, err)
		slog.Warn("procsandbox: restart agent server", "sandbox", id, "error", err)
	}
}

func (r *Runtime) hasWorkspace(id string) bool {
	st, err := os.Stat(filepath.Join(r.dir(id), "workspace"))
	return err == nil && st.IsDir()
}

// exitText says how a process ended: "signal: killed", "exit status 2".
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Status reports a sandbox. It never reports an agent server that has
// exited as running: while its init stops what the server left, Status
// waits for the init to exit, at most StopTimeout.
func (r *Runtime) Status(ctx context.Context, id string) (acs.RuntimeStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitExitLocked(ctx, id)
	return r.statusLocked(id), nil
}

// awaitExitLocked waits, with r.mu released, for the run of sandbox id to
// end when its agent server has exited but its init has not yet. It gives
// up after StopTimeout or when ctx ends.
func (r *Runtime) awaitExitLocked(ctx context.Context, id string) {
	p, ok := r.procs[id]
	if !ok || !p.live() || !r.agentExitedLocked(id, p.run) {
		return
	}
	rn := p.run
	r.mu.Unlock()
	t := time.NewTimer(r.cfg.StopTimeout)
	select {
	case <-rn.done:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	r.mu.Lock()
}

// agentExitedLocked reports whether rn's agent server, as its pid file
// names it, is known to have exited and been reaped.
func (r *Runtime) agentExitedLocked(id string, rn *run) bool {
	if rn.agentPid == 0 {
		b, err := os.ReadFile(filepath.Join(r.dir(id), pidFile))
		if err != nil {
			return false
		}
		if rn.agentPid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || rn.agentPid <= 1 {
			rn.agentPid = 0
			return false
		}
	}
	return errors.Is(syscall.Kill(rn.agentPid, 0), syscall.ESRCH)
}

func (r *Runtime) statusLocked(id string) acs.RuntimeStatus {
	st := r.runStatusLocked(id)
	if p, ok := r.procs[id]; ok {
		st.WarmPool = p.pool
	}
	return st
}

func (r *Runtime) runStatusLocked(id string) acs.RuntimeStatus {
	dir := r.dir(id)
	work := filepath.Join(dir, "workspace")
	p, ok := r.procs[id]
	if !ok {
		if !validID(id) {
			return acs.RuntimeStatus{Status: acs.SandboxMissing}
		}
		if _, err := os.Stat(filepath.Join(dir, metaFile)); err == nil {
			if !r.hasWorkspace(id) {
				return acs.RuntimeStatus{Status: acs.SandboxError, WorkingDir: work, Detail: "the sandbox's workspace is gone"}
			}
			return acs.RuntimeStatus{Status: acs.SandboxPaused, WorkingDir: work}
		}
		return acs.RuntimeStatus{Status: acs.SandboxMissing}
	}
	if p.failed != "" {
		return acs.RuntimeStatus{Status: acs.SandboxError, WorkingDir: work, Detail: p.failed}
	}
	if !p.live() {
		return acs.RuntimeStatus{Status: acs.SandboxStarting, WorkingDir: work, SessionKey: p.key,
			Detail: fmt.Sprintf("the agent server exited (%s); restarting it in %s (crash %d within %s; %d make the sandbox ERROR)",
				p.lastExit, max(time.Until(p.restartAt), 0).Round(100*time.Millisecond), len(p.crashes), r.cfg.CrashLoopWindow, r.cfg.CrashLoopCount)}
	}
	addr, err := os.ReadFile(filepath.Join(dir, addrFile))
	if err != nil || len(addr) == 0 {
		st := acs.RuntimeStatus{Status: acs.SandboxStarting, WorkingDir: work, SessionKey: p.key}
		if p.lastExit != "" {
			st.Detail = fmt.Sprintf("the agent server is restarting after it exited (%s)", p.lastExit)
		}
		return st
	}
	return acs.RuntimeStatus{Status: acs.SandboxRunning, AgentURL: "http://" + strings.TrimSpace(string(addr)),
		SessionKey: p.key, WorkingDir: work}
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	if st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

// stopLocked stops a sandbox's process: SIGTERM to its group, SIGKILL after
// StopTimeout. Its init stops the processes below it; its cgroup is killed
// once it has exited. r.mu is released while waiting.
func (r *Runtime) stopLocked(id string) {
	p, ok := r.procs[id]
	if !ok {
		return
	}
	delete(r.procs, id)
	p.stopping = true
	if p.restart != nil {
		p.restart.Stop()
	}
	if !p.live() {
		return
	}
	rn := p.run
	pid := rn.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	r.mu.Unlock()
	select {
	case <-rn.done:
	case <-time.After(r.cfg.StopTimeout):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-rn.done
	}
	r.mu.Lock()
	removeRunFiles(r.dir(id))
}

// Pause stops the process and keeps the sandbox directory.
func (r *Runtime) Pause(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.procs[id]; !ok {
		if st := r.statusLocked(id); st.Status == acs.SandboxMissing {
			return fmt.Errorf("procsandbox: sandbox %s: %w", id, acs.ErrNotFound)
		}
		return nil
	}
	r.stopLocked(id)
	return nil
}

// Resume starts a paused or failed (ERROR) sandbox again with a new session
// key and a clear crash count; one running, starting or restarting after a
// crash is left as it is. Errors wrap acs.ErrNotFound for an unknown
// sandbox, acs.ErrSandboxFailed when its workspace is gone (it stays
// ERROR) and acs.ErrStorageFull when the disk is full.
func (r *Runtime) Resume(_ context.Context, id, key string, env map[string]string) (acs.RuntimeStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.procs[id]; ok {
		if p.failed == "" {
			return r.statusLocked(id), nil
		}
		delete(r.procs, id)
	}
	switch st := r.statusLocked(id); st.Status {
	case acs.SandboxMissing:
		return st, fmt.Errorf("procsandbox: sandbox %s: %w", id, acs.ErrNotFound)
	case acs.SandboxError:
		return st, fmt.Errorf("procsandbox: sandbox %s cannot be resumed: %s: %w", id, st.Detail, acs.ErrSandboxFailed)
	}
	if err := r.launchLocked(id, key, env); err != nil {
		return acs.RuntimeStatus{}, storageErr(err)
	}
	return r.statusLocked(id), nil
}

// Delete stops the sandbox and removes its directory.
func (r *Runtime) Delete(_ context.Context, id string) error {
	if !validID(id) {
		return nil
	}
	r.mu.Lock()
	r.stopLocked(id)
	// Without its meta file the sandbox reads MISSING at once, not ERROR
	// (workspace gone) while the rest is removed.
	err := os.Remove(filepath.Join(r.dir(id), metaFile))
	r.mu.Unlock()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("procsandbox: remove %s: %w", id, err)
	}
	// A sandbox given a warm agent server is a link to that server's
	// directory: both go.
	if target, lerr := os.Readlink(r.dir(id)); lerr == nil {
		if err := os.RemoveAll(filepath.Join(r.cfg.Root, filepath.Base(target))); err != nil {
			return fmt.Errorf("procsandbox: remove %s: %w", id, err)
		}
	}
	if err := os.RemoveAll(r.dir(id)); err != nil {
		return fmt.Errorf("procsandbox: remove %s: %w", id, err)
	}
	return nil
}

// Close stops every sandbox process (their directories stay: they come back
// as PAUSED).
func (r *Runtime) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warm.closed = true
	ids := make([]string, 0, len(r.procs))
	for id := range r.procs {
		ids = append(ids, id)
	}
	for _, id := range ids {
		r.stopLocked(id)
	}
}
