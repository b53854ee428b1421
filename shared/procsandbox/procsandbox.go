// Package procsandbox is the local acs.Runtime: each sandbox is a child
// process running `acs agent-server` on its own 127.0.0.1 port, with its own
// workspace, home directory and random session key, under Root/{sandbox id}.
//
// Pausing stops the process and keeps the directory; resuming starts it
// again with a new session key. A sandbox whose directory exists but has no
// process (for example after `acs serve` restarted) is PAUSED. Children get a
// minimal environment (never the control plane's secrets) and die with their
// parent; an orphan left by a crash is killed when the runtime starts.
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
	// StopTimeout is how long a sandbox gets to exit after SIGTERM.
	StopTimeout time.Duration
}

const (
	metaFile = "sandbox.json"
	addrFile = "agent.addr"
	pidFile  = "agent.pid"
	logFile  = "agent-server.log"
)

type meta struct {
	ID         string    `json:"id"`
	OwnerID    string    `json:"owner_id"`
	SpecID     string    `json:"spec_id"`
	WorkingDir string    `json:"working_dir"`
	CreatedAt  time.Time `json:"created_at"`
}

type proc struct {
	cmd      *exec.Cmd
	key      string
	env      map[string]string
	done     chan struct{}
	exitErr  error
	stopping bool
}

// Runtime runs sandboxes as child processes.
type Runtime struct {
	cfg   Config
	mu    sync.Mutex
	procs map[string]*proc
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
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, fmt.Errorf("procsandbox: create root: %w", err)
	}
	r := &Runtime{cfg: cfg, procs: map[string]*proc{}}
	entries, _ := os.ReadDir(cfg.Root)
	for _, e := range entries {
		r.killOrphan(filepath.Join(cfg.Root, e.Name()))
	}
	return r, nil
}

// killOrphan stops an agent server left running by a crashed parent.
func (r *Runtime) killOrphan(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && strings.Contains(string(cmdline), "agent-server") && strings.Contains(string(cmdline), dir) {
		slog.Warn("procsandbox: stopping orphaned agent server", "pid", pid, "dir", dir)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	os.Remove(filepath.Join(dir, pidFile))
	os.Remove(filepath.Join(dir, addrFile))
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

// Start creates the sandbox directory and starts its agent server.
func (r *Runtime) Start(ctx context.Context, req acs.StartRequest) (acs.RuntimeStatus, error) {
	if !validID(req.SandboxID) {
		return acs.RuntimeStatus{}, fmt.Errorf("procsandbox: sandbox id %q: %w", req.SandboxID, acs.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.procs[req.SandboxID]; ok && !exited(p) {
		return r.statusLocked(req.SandboxID), nil
	}
	dir := r.dir(req.SandboxID)
	work := filepath.Join(dir, "workspace")
	for _, d := range []string{work, filepath.Join(dir, "state"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return acs.RuntimeStatus{}, fmt.Errorf("procsandbox: create %s: %w", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err != nil {
		m := meta{ID: req.SandboxID, OwnerID: req.OwnerID, SpecID: req.Spec.ID, WorkingDir: work, CreatedAt: time.Now().UTC()}
		raw, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, metaFile), raw, 0o600); err != nil {
			return acs.RuntimeStatus{}, fmt.Errorf("procsandbox: write meta: %w", err)
		}
	}
	if err := r.launchLocked(req.SandboxID, req.SessionKey, mergeEnv(req.Spec.InitialEnv, req.Env)); err != nil {
		return acs.RuntimeStatus{}, err
	}
	return r.statusLocked(req.SandboxID), nil
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

func exited(p *proc) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (r *Runtime) launchLocked(id, key string, env map[string]string) error {
	dir := r.dir(id)
	os.Remove(filepath.Join(dir, addrFile))
	logf, err := os.OpenFile(filepath.Join(dir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("procsandbox: open log: %w", err)
	}
	cmd := exec.Command(r.cfg.Binary, "agent-server", "--addr", "127.0.0.1:0", "--addr-file", filepath.Join(dir, addrFile))
	cmd.Dir = filepath.Join(dir, "workspace")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
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
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("procsandbox: start agent server: %w", err)
	}
	_ = os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	p := &proc{cmd: cmd, key: key, env: env, done: make(chan struct{})}
	r.procs[id] = p
	go func() {
		err := cmd.Wait()
		logf.Close()
		r.mu.Lock()
		p.exitErr = err
		close(p.done)
		stopping := p.stopping
		r.mu.Unlock()
		if !stopping {
			slog.Warn("procsandbox: agent server exited", "sandbox", id, "error", err)
		}
	}()
	return nil
}

// Status reports a sandbox.
func (r *Runtime) Status(_ context.Context, id string) (acs.RuntimeStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked(id), nil
}

func (r *Runtime) statusLocked(id string) acs.RuntimeStatus {
	dir := r.dir(id)
	work := filepath.Join(dir, "workspace")
	p, ok := r.procs[id]
	if !ok {
		if !validID(id) {
			return acs.RuntimeStatus{Status: acs.SandboxMissing}
		}
		if _, err := os.Stat(filepath.Join(dir, metaFile)); err == nil {
			return acs.RuntimeStatus{Status: acs.SandboxPaused, WorkingDir: work}
		}
		return acs.RuntimeStatus{Status: acs.SandboxMissing}
	}
	if exited(p) {
		return acs.RuntimeStatus{Status: acs.SandboxError, WorkingDir: work,
			Detail: fmt.Sprintf("agent server exited (%v); last log lines: %s", p.exitErr, tail(filepath.Join(dir, logFile), 600))}
	}
	addr, err := os.ReadFile(filepath.Join(dir, addrFile))
	if err != nil || len(addr) == 0 {
		return acs.RuntimeStatus{Status: acs.SandboxStarting, WorkingDir: work, SessionKey: p.key}
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
// StopTimeout. r.mu is released while waiting.
func (r *Runtime) stopLocked(id string) {
	p, ok := r.procs[id]
	if !ok {
		return
	}
	delete(r.procs, id)
	if exited(p) {
		return
	}
	p.stopping = true
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	r.mu.Unlock()
	select {
	case <-p.done:
	case <-time.After(r.cfg.StopTimeout):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-p.done
	}
	r.mu.Lock()
	os.Remove(filepath.Join(r.dir(id), pidFile))
	os.Remove(filepath.Join(r.dir(id), addrFile))
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

// Resume starts a paused (or failed) sandbox again with a new session key.
func (r *Runtime) Resume(_ context.Context, id, key string, env map[string]string) (acs.RuntimeStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.procs[id]; ok {
		if !exited(p) {
			return r.statusLocked(id), nil
		}
		delete(r.procs, id)
	}
	if st := r.statusLocked(id); st.Status == acs.SandboxMissing {
		return st, fmt.Errorf("procsandbox: sandbox %s: %w", id, acs.ErrNotFound)
	}
	if err := r.launchLocked(id, key, env); err != nil {
		return acs.RuntimeStatus{}, err
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
	r.mu.Unlock()
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
	ids := make([]string, 0, len(r.procs))
	for id := range r.procs {
		ids = append(ids, id)
	}
	for _, id := range ids {
		r.stopLocked(id)
	}
}
