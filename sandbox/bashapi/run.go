package bashapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/procenv"
)

// Tunables of output streaming and process teardown.
const (
	maxChunk     = 1 << 20                // raw output bytes per event
	flushAge     = 100 * time.Millisecond // output older than this is sent
	partialAge   = 500 * time.Millisecond // a partial line older than this is sent
	tickEvery    = 50 * time.Millisecond
	drainGrace   = 250 * time.Millisecond // pipe reading after the shell exits
	termGrace    = time.Second            // SIGTERM -> SIGKILL
	killGiveUp   = time.Second            // wait for the group after SIGKILL
	readBufBytes = 32 << 10
	maxTimeout   = 100 * 365 * 24 * 3600 // seconds; longer timeouts are capped
)

// process is a running command. cmd is the event as stored (its text
// masked); command and cwd are what actually runs.
type process struct {
	cmd     *agentwire.BashCommand
	command string
	cwd     string
	env     []string      // the request's secrets as NAME=value
	done    chan struct{} // closed after the final event is stored
	final   *agentwire.BashOutput
}

// Start validates req, records a BashCommand and runs the command in the
// background; it returns at once. ctx is not used to stop the command. A cwd
// that does not exist or is not a directory yields a stored and published
// BashError, returned as the error (a *BashError). After Close it returns
// ErrClosed.
func (s *Service) Start(ctx context.Context, req agentwire.ExecuteBashRequest) (*agentwire.BashCommand, error) {
	p, err := s.start(req)
	if err != nil {
		return nil, err
	}
	return p.cmd, nil
}

// Execute starts the command like Start and waits for it; it returns the
// final BashOutput (the one with exit_code; -1 on timeout). If ctx ends first
// it returns ctx.Err() and the command carries on in the background.
func (s *Service) Execute(ctx context.Context, req agentwire.ExecuteBashRequest) (*agentwire.BashOutput, error) {
	p, err := s.start(req)
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
		return p.final, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Service) start(req agentwire.ExecuteBashRequest) (*process, error) {
	if req.Timeout <= 0 {
		req.Timeout = agentwire.DefaultBashTimeout
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	cwd := s.workDir
	if req.Cwd != nil && *req.Cwd != "" {
		cwd = *req.Cwd
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(s.workDir, cwd)
		}
		cwd = filepath.Clean(cwd)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		detail := "cwd is not a directory: " + cwd
		if err != nil {
			detail = "cwd does not exist: " + cwd
			if !errors.Is(err, os.ErrNotExist) {
				detail = "cwd is not accessible: " + cwd + ": " + err.Error()
			}
		}
		be := &agentwire.BashError{Code: agentwire.CodeInvalidCwd, Detail: detail}
		_, _ = s.emit(be, nil)
		return nil, be
	}
	// The event's copy of the command and cwd is masked by emit (once the
	// request's own secrets are known to the masker); the command runs with
	// the real text.
	shownCwd := cwd
	cmd := &agentwire.BashCommand{Command: req.Command, Cwd: &shownCwd, Timeout: req.Timeout}
	p := &process{cmd: cmd, command: req.Command, cwd: cwd, done: make(chan struct{})}
	if len(req.Secrets) > 0 {
		values := make([]string, 0, len(req.Secrets))
		for k, v := range req.Secrets {
			p.env = append(p.env, k+"="+v)
			values = append(values, v)
		}
		if s.addSecrets != nil {
			s.addSecrets(values...)
		}
	}
	var startErr error
	_, _ = s.emit(cmd, func() {
		if s.closed {
			startErr = ErrClosed
			return
		}
		s.running[cmd.ID] = p
		s.wg.Add(1)
	})
	if startErr != nil {
		// Closed between the check and the record: finish the command at
		// once so it is not left without a final output.
		code := -1
		msg := "service closed"
		p.final = &agentwire.BashOutput{CommandID: cmd.ID, Order: 0, ExitCode: &code, Stderr: &msg}
		_, _ = s.emit(p.final, nil)
		close(p.done)
		return nil, startErr
	}
	go s.run(p)
	return p, nil
}

// environ returns the sanitised environment of a command.
func (s *Service) environ() []string {
	var env []string
	for _, kv := range procenv.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if secretName(name) {
			continue
		}
		env = append(env, kv)
	}
	if s.env != nil {
		env = append(env, s.env()...)
	}
	return env
}

// secretName reports whether an inherited variable is withheld from commands.
func secretName(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// streamState is the pending output of one pipe.
type streamState struct {
	buf   []byte
	since time.Time // when the oldest pending byte arrived
	eof   bool
}

type pipeData struct {
	stream int // 0 stdout, 1 stderr
	b      []byte
	eof    bool
}

// runner streams one command's output into events.
type runner struct {
	s       *Service
	p       *process
	order   int
	streams [2]streamState
}

func (s *Service) run(p *process) {
	defer s.wg.Done()
	r := &runner{s: s, p: p}
	code := r.exec()
	r.finish(code)
}

// finish emits the remaining output, the last event carrying the exit code,
// and marks the command as done.
func (r *runner) finish(code int) {
	for r.pending() > maxChunk {
		if r.emitChunk(true, nil) == nil {
			break
		}
	}
	final := r.emitChunk(true, &code)
	r.p.final = final
	close(r.p.done)
}

func (r *runner) pending() int { return len(r.streams[0].buf) + len(r.streams[1].buf) }

// exec runs the command and streams its output; it returns the exit code.
func (r *runner) exec() int {
	s, p := r.s, r.p
	fail := func(err error) int {
		msg := "Error executing command: " + err.Error()
		r.streams[1].buf = append(r.streams[1].buf, msg...)
		return -1
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fail(err)
	}
	cmd := exec.Command("/bin/bash", "-c", p.command)
	cmd.Dir = p.cwd
	cmd.Env = append(s.environ(), p.env...)
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fail(err)
	}
	pgid := cmd.Process.Pid

	waitDone := make(chan struct{})
	var state *os.ProcessState
	go func() {
		_ = cmd.Wait()
		state = cmd.ProcessState
		close(waitDone)
	}()
	data := make(chan pipeData, 8)
	go s.readPipe(outR, 0, data)
	go s.readPipe(errR, 1, data)

	timeout := time.NewTimer(time.Duration(min(p.cmd.Timeout, maxTimeout)) * time.Second)
	defer timeout.Stop()
	ticker := time.NewTicker(tickEvery)
	defer ticker.Stop()
	var killDone chan struct{}
	kill := func() {
		if killDone != nil {
			return
		}
		killDone = make(chan struct{})
		go func() {
			defer close(killDone)
			killGroup(pgid)
		}()
	}
	exited := false
	closing, timedOut := s.closing, timeout.C
	for !(exited && r.streams[0].eof && r.streams[1].eof) {
		select {
		case d := <-data:
			st := &r.streams[d.stream]
			if d.eof {
				st.eof = true
				continue
			}
			if len(st.buf) == 0 {
				st.since = time.Now()
			}
			st.buf = append(st.buf, d.b...)
			for r.pending() >= maxChunk {
				if r.emitChunk(true, nil) == nil {
					break
				}
			}
		case <-ticker.C:
			r.flush()
		case <-waitDone:
			// The shell is gone: no more timeout or Close kills; what is
			// left of the group (background jobs) is not signalled.
			exited = true
			waitDone, timedOut, closing = nil, nil, nil
			deadline := time.Now().Add(drainGrace)
			_ = outR.SetReadDeadline(deadline)
			_ = errR.SetReadDeadline(deadline)
		case <-timedOut:
			timedOut = nil
			kill()
		case <-closing:
			closing = nil
			kill()
		}
	}
	if killDone != nil {
		<-killDone
		return -1
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		return -int(ws.Signal())
	case ok && ws.Exited():
		return ws.ExitStatus()
	}
	return state.ExitCode()
}

// readPipe forwards what f yields to data, then an EOF marker. When reading
// stops at the drain deadline (the shell exited but a background process
// holds the pipe), what the pipe holds by then is forwarded too, and the
// rest is read and discarded until EOF or Close.
func (s *Service) readPipe(f *os.File, stream int, data chan<- pipeData) {
	for {
		buf := make([]byte, readBufBytes)
		n, err := f.Read(buf)
		if n > 0 {
			data <- pipeData{stream: stream, b: buf[:n]}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				forwardBuffered(f, stream, data)
				data <- pipeData{stream: stream, eof: true}
				s.discard(f)
				return
			}
			data <- pipeData{stream: stream, eof: true}
			f.Close()
			return
		}
	}
}

// forwardBuffered forwards to data the bytes f's pipe holds now. The
// command wrote them before it exited; a reader that fell behind must not
// lose them. It never waits for more.
func forwardBuffered(f *os.File, stream int, data chan<- pipeData) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	n := 0
	_ = rc.Control(func(fd uintptr) { n = pipeHolds(fd) })
	if n <= 0 {
		return
	}
	_ = f.SetReadDeadline(time.Time{})
	for n > 0 {
		buf := make([]byte, min(n, readBufBytes))
		k, err := io.ReadFull(f, buf)
		if k > 0 {
			data <- pipeData{stream: stream, b: buf[:k]}
		}
		if err != nil {
			return
		}
		n -= k
	}
}

// discard reads f until EOF in the background, so that background processes
// of a finished command can keep writing; Close stops it.
func (s *Service) discard(f *os.File) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		f.Close()
		return
	}
	s.drains[f] = struct{}{}
	s.mu.Unlock()
	_ = f.SetReadDeadline(time.Time{})
	go func() {
		buf := make([]byte, readBufBytes)
		for {
			if _, err := f.Read(buf); err != nil {
				break
			}
		}
		s.mu.Lock()
		delete(s.drains, f)
		s.mu.Unlock()
		f.Close()
	}()
}

// flush emits output that has waited flushAge (complete lines) or partialAge
// (anything).
func (r *runner) flush() {
	now := time.Now()
	ready := false
	for i := range r.streams {
		st := &r.streams[i]
		if len(st.buf) > 0 && now.Sub(st.since) >= flushAge {
			ready = true
		}
	}
	if ready {
		r.emitChunk(false, nil)
	}
}

// emitChunk emits one BashOutput with up to maxChunk bytes of pending output.
// Unless all is set, a stream contributes only output older than flushAge,
// cut after its last line break, or older than partialAge. exitCode, when
// set, makes this the final event. It returns the event (nil when nothing was
// eligible and exitCode is nil).
func (r *runner) emitChunk(all bool, exitCode *int) *agentwire.BashOutput {
	now := time.Now()
	room := maxChunk
	var texts [2]*string
	for i := range r.streams {
		st := &r.streams[i]
		if len(st.buf) == 0 || room == 0 {
			continue
		}
		n := len(st.buf)
		if !all {
			age := now.Sub(st.since)
			if age < flushAge {
				continue
			}
			if age < partialAge {
				n = lastBreak(st.buf) // 0 when no line break
			}
		}
		if n > room {
			n = cut(st.buf, room)
		}
		if exitCode == nil {
			// More output may follow: never end a chunk inside a UTF-8
			// sequence (it would be stored as U+FFFD).
			n = completeUTF8(st.buf[:n])
			if r.s.safeCut != nil {
				// Nor inside (or at the start of) a secret: it is masked
				// whole once the rest arrives.
				n = r.s.safeCut(st.buf, n)
			}
		}
		if n == 0 {
			continue
		}
		t := string(st.buf[:n])
		if r.s.mask != nil {
			t = r.s.mask(t)
		}
		texts[i] = &t
		room -= n
		rest := len(st.buf) - n
		copy(st.buf, st.buf[n:])
		st.buf = st.buf[:rest]
		if rest > 0 {
			st.since = now
		}
	}
	if texts[0] == nil && texts[1] == nil && exitCode == nil {
		return nil
	}
	ev := &agentwire.BashOutput{
		CommandID: r.p.cmd.ID,
		Order:     r.order,
		ExitCode:  exitCode,
		Stdout:    texts[0],
		Stderr:    texts[1],
	}
	r.order++
	var locked func()
	if exitCode != nil {
		locked = func() { delete(r.s.running, r.p.cmd.ID) }
	}
	_, _ = r.s.emit(ev, locked)
	return ev
}

// lastBreak returns the length of b up to and including its last '\n' or
// '\r', or 0.
func lastBreak(b []byte) int {
	return bytes.LastIndexAny(b, "\n\r") + 1
}

// cut returns how many bytes of b (len(b) > limit) to take so that the chunk
// has at most limit bytes, ends after a line break when there is one in the
// second half of the window, and does not split a UTF-8 sequence.
func cut(b []byte, limit int) int {
	if i := lastBreak(b[:limit]); i > limit/2 {
		return i
	}
	n := limit
	for k := 0; k < utf8.UTFMax && n > 0; k++ {
		if utf8.RuneStart(b[n]) {
			return n
		}
		n--
	}
	return limit
}

// completeUTF8 returns len(b) less an incomplete UTF-8 sequence at its end.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// killGroup sends SIGTERM to the process group, waits up to termGrace for it
// to empty, then sends SIGKILL and waits up to killGiveUp more.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, termGrace) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupGone(pgid, killGiveUp)
}

func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether the process group has a member that is not a
// zombie. It reads /proc when it can (zombies that nobody reaps would
// otherwise look alive), else probes with signal 0.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		st, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 3 || f[2] != want {
			continue
		}
		if f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}
