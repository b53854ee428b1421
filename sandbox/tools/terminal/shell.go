package terminal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"
)

const (
	markerBegin = "###PS1JSON###"
	markerEnd   = "###PS1END###"

	// maxBuffered bounds the output kept in memory per shell; beyond it the
	// oldest bytes are dropped (the observation then says so).
	maxBuffered = 32 << 20
	keepOnDrop  = 24 << 20

	ptyRows = 200
	ptyCols = 256
)

// promptInfo is the metadata block printed by PROMPT_COMMAND after every
// command.
type promptInfo struct {
	PID        int
	ExitCode   int
	Username   string
	Hostname   string
	WorkingDir string
	PyPath     string
}

// marker locates one metadata block in the output stream (absolute offsets).
type marker struct {
	start, end int64
	info       promptInfo
}

// shell is one bash process on a PTY. Output is read continuously into buf by
// readLoop, which also detects metadata blocks, so that nothing the shell
// writes ever blocks on us.
type shell struct {
	cmd    *exec.Cmd
	pty    *os.File
	pid    int
	nonce  string
	exited chan struct{} // closed once bash has been reaped
	status int           // bash's exit status; valid after exited is closed

	readerDone chan struct{}
	termOnce   sync.Once

	mu            sync.Mutex
	buf           []byte
	base          int64 // absolute stream offset of buf[0]
	changed       chan struct{}
	markers       []marker
	scanPos       int64 // absolute offset from which to look for markerEnd
	lastMarkerEnd int64
}

// startShell starts bash on a new PTY in its own session.
func startShell(shellPath, initFile, workDir string, env []string, nonce string) (*shell, error) {
	cmd := exec.Command(shellPath, "--noprofile", "--rcfile", initFile, "--noediting", "-i")
	cmd.Dir = workDir
	cmd.Env = env

	master, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("terminal: open pty: %w", err)
	}
	closeBoth := func() { _ = master.Close(); _ = tty.Close() }
	if err := pty.Setsize(master, &pty.Winsize{Rows: ptyRows, Cols: ptyCols}); err != nil {
		closeBoth()
		return nil, fmt.Errorf("terminal: set pty size: %w", err)
	}
	if err := configureTermios(tty.Fd()); err != nil {
		closeBoth()
		return nil, fmt.Errorf("terminal: configure pty: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		closeBoth()
		return nil, fmt.Errorf("terminal: start %s: %w", shellPath, err)
	}
	_ = tty.Close()

	// pty.Open leaves the master in blocking mode (it calls Fd), so a Read
	// could not be interrupted by Close. Re-wrap a non-blocking duplicate so
	// that reads and writes go through the runtime poller.
	nf, err := pollableDup(master)
	_ = master.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("terminal: prepare pty: %w", err)
	}

	sh := &shell{
		cmd:        cmd,
		pty:        nf,
		pid:        cmd.Process.Pid,
		nonce:      nonce,
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		changed:    make(chan struct{}),
	}
	go func() {
		err := cmd.Wait()
		sh.status = exitStatus(cmd, err)
		close(sh.exited)
	}()
	go sh.readLoop()
	return sh, nil
}

func exitStatus(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

func pollableDup(f *os.File) (*os.File, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		_ = syscall.Close(int(fd))
		return nil, err
	}
	return os.NewFile(fd, "/dev/ptmx"), nil
}

func ioctlTermios(fd uintptr, req uintptr, t *syscall.Termios) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(t)))
	if errno != 0 {
		return errno
	}
	return nil
}

// saneTermios applies the line discipline settings the session relies on:
// canonical input with signals, no echo (so output holds only what programs
// print), no XON/XOFF flow control and CR-to-NL input translation. It reports
// whether anything had to change.
func saneTermios(t *syscall.Termios) bool {
	old := *t
	t.Lflag |= syscall.ICANON | syscall.ISIG | syscall.IEXTEN
	t.Lflag &^= syscall.ECHO | syscall.ECHOE | syscall.ECHOK | syscall.ECHONL
	t.Iflag |= syscall.ICRNL
	t.Iflag &^= syscall.IXON | syscall.IXOFF | syscall.INLCR | syscall.IGNCR
	t.Oflag |= syscall.OPOST | syscall.ONLCR
	return *t != old
}

func configureTermios(fd uintptr) error {
	var t syscall.Termios
	if err := ioctlTermios(fd, syscall.TCGETS, &t); err != nil {
		return err
	}
	t.Iflag |= 0x4000 // IUTF8
	saneTermios(&t)
	return ioctlTermios(fd, syscall.TCSETS, &t)
}

// resetTermios restores the settings of saneTermios if a previous program
// changed them (for example turned echo back on). On Linux, termios ioctls on
// the master act on the slave side.
func (sh *shell) resetTermios() {
	rc, err := sh.pty.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		var t syscall.Termios
		if ioctlTermios(fd, syscall.TCGETS, &t) != nil {
			return
		}
		if saneTermios(&t) {
			_ = ioctlTermios(fd, syscall.TCSETS, &t)
		}
	})
}

// echoOn reports whether the terminal currently echoes input (a program
// such as `stty echo` turned it on).
func (sh *shell) echoOn() bool {
	rc, err := sh.pty.SyscallConn()
	if err != nil {
		return false
	}
	on := false
	_ = rc.Control(func(fd uintptr) {
		var t syscall.Termios
		if ioctlTermios(fd, syscall.TCGETS, &t) == nil {
			on = t.Lflag&syscall.ECHO != 0
		}
	})
	return on
}

func (sh *shell) readLoop() {
	defer close(sh.readerDone)
	b := make([]byte, 64<<10)
	for {
		n, err := sh.pty.Read(b)
		if n > 0 {
			sh.mu.Lock()
			sh.buf = append(sh.buf, b[:n]...)
			if len(sh.buf) > maxBuffered {
				drop := len(sh.buf) - keepOnDrop
				sh.buf = append(sh.buf[:0:0], sh.buf[drop:]...)
				sh.base += int64(drop)
			}
			sh.scanMarkersLocked()
			close(sh.changed)
			sh.changed = make(chan struct{})
			sh.mu.Unlock()
		}
		if err != nil {
			// EIO once every holder of the slave side is gone, or
			// ErrClosed after terminate.
			sh.mu.Lock()
			close(sh.changed)
			sh.changed = make(chan struct{})
			sh.mu.Unlock()
			return
		}
	}
}

// scanMarkersLocked finds complete metadata blocks that arrived since the
// last scan. A block only counts if its JSON parses and carries this shell's
// nonce, so command output that merely contains the marker text is ignored.
func (sh *shell) scanMarkersLocked() {
	endTok := []byte(markerEnd)
	beginTok := []byte(markerBegin)
	for {
		rel := int(max(sh.scanPos-sh.base, 0))
		if rel > len(sh.buf) {
			return
		}
		i := bytes.Index(sh.buf[rel:], endTok)
		if i < 0 {
			next := sh.base + int64(len(sh.buf)-len(endTok)+1)
			sh.scanPos = max(sh.scanPos, next)
			return
		}
		e := rel + i
		sh.scanPos = sh.base + int64(e+len(endTok))
		lo := int(max(sh.lastMarkerEnd-sh.base, 0))
		if lo > e {
			continue
		}
		b := bytes.LastIndex(sh.buf[lo:e], beginTok)
		if b < 0 {
			continue
		}
		b += lo
		info, ok := parsePromptInfo(sh.buf[b+len(beginTok):e], sh.nonce)
		if !ok {
			continue
		}
		start := b
		if start > 0 && sh.buf[start-1] == '\n' {
			start--
			if start > 0 && sh.buf[start-1] == '\r' {
				start--
			}
		}
		end := e + len(endTok)
		for _, nl := range []string{"\r\n", "\n"} {
			if bytes.HasPrefix(sh.buf[end:], []byte(nl)) {
				end += len(nl)
				break
			}
		}
		m := marker{start: sh.base + int64(start), end: sh.base + int64(end), info: info}
		sh.markers = append(sh.markers, m)
		sh.lastMarkerEnd = m.end
		sh.scanPos = max(sh.scanPos, m.end)
	}
}

func parsePromptInfo(payload []byte, nonce string) (promptInfo, bool) {
	var raw map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(payload), &raw); err != nil {
		return promptInfo{}, false
	}
	if n, _ := raw["nonce"].(string); n != nonce {
		return promptInfo{}, false
	}
	str := func(k string) string {
		switch v := raw[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return ""
	}
	num := func(k string) int {
		n, err := strconv.Atoi(strings.TrimSpace(str(k)))
		if err != nil {
			return -1
		}
		return n
	}
	return promptInfo{
		PID:        num("pid"),
		ExitCode:   num("exit_code"),
		Username:   str("username"),
		Hostname:   str("hostname"),
		WorkingDir: str("working_dir"),
		PyPath:     str("py_interpreter_path"),
	}, true
}

// snapshot returns the current end of the stream, the channel closed on the
// next change, and the first pending marker, if any.
func (sh *shell) snapshot() (total int64, changed <-chan struct{}, m *marker) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	total = sh.base + int64(len(sh.buf))
	if len(sh.markers) > 0 {
		mm := sh.markers[0]
		m = &mm
	}
	return total, sh.changed, m
}

// popMarker removes the first pending marker (returned by snapshot).
func (sh *shell) popMarker() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.markers) > 0 {
		sh.markers = sh.markers[1:]
	}
}

// dropMarkers discards all pending markers and returns the end of the last
// one (or -1 if there were none).
func (sh *shell) dropMarkers() int64 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.markers) == 0 {
		return -1
	}
	end := sh.markers[len(sh.markers)-1].end
	sh.markers = nil
	return end
}

// slice returns the output in [from, to) and whether part of it (at the
// front) has already been dropped from memory. It also releases memory before
// `from`, which is never needed again.
func (sh *shell) slice(from, to int64) ([]byte, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	dropped := from < sh.base
	from = max(from, sh.base)
	end := sh.base + int64(len(sh.buf))
	to = min(to, end)
	if to <= from {
		return nil, dropped
	}
	out := bytes.Clone(sh.buf[from-sh.base : to-sh.base])
	return out, dropped
}

// discardBefore frees buffered output before off.
func (sh *shell) discardBefore(off int64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := off - sh.base
	if n <= 0 {
		return
	}
	n = min(n, int64(len(sh.buf)))
	sh.buf = append(sh.buf[:0:0], sh.buf[n:]...)
	sh.base += n
}

func (sh *shell) isExited() bool {
	select {
	case <-sh.exited:
		return true
	default:
		return false
	}
}

// write sends p to the PTY, giving up after timeout.
func (sh *shell) write(p []byte, timeout time.Duration) error {
	if err := sh.pty.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := sh.pty.Write(p)
	return err
}

// terminate kills every process in the shell's session, closes the PTY and
// waits (bounded) for the helper goroutines to finish. It is idempotent.
func (sh *shell) terminate() {
	sh.termOnce.Do(func() {
		killSession(sh.pid, !sh.isExited())
		_ = sh.pty.Close()
		giveUp := make(chan struct{})
		t := time.AfterFunc(5*time.Second, func() { close(giveUp) })
		defer t.Stop()
		select {
		case <-sh.exited:
		case <-giveUp:
		}
		select {
		case <-sh.readerDone:
		case <-giveUp:
		}
	})
}

// killSession sends SIGKILL to the session led by sid: its process group and
// every process group and process that /proc lists as a member (job control
// gives each job its own process group). leaderAlive says the leader has not
// been reaped yet, so sid cannot have been reused.
func killSession(sid int, leaderAlive bool) {
	if sid <= 0 {
		return
	}
	if leaderAlive {
		_ = syscall.Kill(-sid, syscall.SIGKILL)
		_ = syscall.Kill(sid, syscall.SIGKILL)
	}
	for range 20 {
		members := sessionMembers(sid)
		if len(members) == 0 {
			return
		}
		for _, p := range members {
			if p.pgid > 1 {
				_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type procEntry struct{ pid, pgid int }

// sessionMembers lists the live (non-zombie) processes whose session is sid.
func sessionMembers(sid int) []procEntry {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procEntry
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.state == "Z" || st.session != sid {
			continue
		}
		out = append(out, procEntry{pid: pid, pgid: st.pgrp})
	}
	return out
}

type procStat struct {
	state         string
	pgrp, session int
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 4 {
		return procStat{}, errors.New("malformed stat")
	}
	pgrp, err1 := strconv.Atoi(f[2])
	sess, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return procStat{}, errors.New("malformed stat")
	}
	return procStat{state: f[0], pgrp: pgrp, session: sess}, nil
}
