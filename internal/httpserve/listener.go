package httpserve

import (
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A connection refused at the cap, and one closed while its client may still
// be sending a body, are closed gracefully: the answer is sent, the write
// side shut, and what the client still sends is read and dropped for at most
// lingerTime (lingerBytes) so that closing does not reset the connection
// before the client has read the answer.
const (
	lingerTime   = 500 * time.Millisecond
	lingerBytes  = 256 << 10
	refuseWait   = time.Second // for the request head of a refused connection
	refuseHeadMx = 16 << 10
	catchUpWait  = 50 * time.Millisecond // see admit
	logEvery     = 10 * time.Second
)

// listener admits at most lim.MaxConnections connections at once. It keeps
// the connections that wait for a request head in the order they began to
// wait, overall and per remote address (peer), so that the one to close
// first is found near the front.
type listener struct {
	net.Listener
	lim      Limits
	refusal  []byte        // the 503 answer
	busyAt   int           // the server is busy from this many open connections
	busyWait time.Duration // the longest wait for a request head while busy

	mu        sync.Mutex
	open      int
	waiting   list.List // of *guardConn, longest-waiting first
	peers     map[string]*peer
	crowded   map[*peer]struct{} // peers holding at least MaxConnectionsPerIP connections
	reapArmed bool               // the reaper knows when the next wait ends

	wake       chan struct{} // tells the reaper to look again
	progress   chan struct{} // tells admit a connection may have stalled or closed
	catchingUp atomic.Bool   // admit waits on progress
	done       chan struct{} // closed by Close
	reaped     chan struct{} // closed when the reaper has stopped
	closeOnce  sync.Once

	refusing chan struct{} // semaphore of refusals in progress
	refused  atomic.Int64  // refused since the last log line
	lastLog  atomic.Int64  // unix nanos
	replaced atomic.Int64  // waiting connections closed since the last log line
	lastBusy atomic.Int64  // unix nanos
}

// peer is the connections of one remote address.
type peer struct {
	key     string
	n       int       // connections open
	waiting list.List // of *guardConn, longest-waiting first
}

func newListener(ln net.Listener, lim Limits) *listener {
	detail, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{fmt.Sprintf("Too many connections (this server accepts %d at once); retry shortly", lim.MaxConnections)})
	refusal := fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(detail), detail)
	return &listener{Listener: ln, lim: lim, refusal: refusal,
		busyAt: max(lim.MaxConnections*3/4, 1), busyWait: min(lim.BusyHeaderTimeout, lim.ReadTimeout),
		peers: map[string]*peer{}, crowded: map[*peer]struct{}{},
		wake: make(chan struct{}, 1), progress: make(chan struct{}, 1), done: make(chan struct{}), reaped: make(chan struct{}),
		refusing: make(chan struct{}, lim.MaxRefusing)}
}

// Accept returns the next connection the rules admit; a connection they do
// not is refused (503) in the background.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.admit(c); gc != nil {
			return gc, nil
		}
		l.refuse(c)
	}
}

// Close stops the reaper and closes the listener.
func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// admit counts c and returns it as a guardConn, or returns nil when there is
// no room for it. While the server is busy, a peer holding
// MaxConnectionsPerIP connections makes room by closing one of its own
// waiting connections. At the cap, a waiting connection of a crowded peer,
// else of any peer, is closed to make room (victimIn says which). When the
// one to close is not stalled, admit first waits up to catchUpWait for the
// goroutines that read to catch up: accepting faster than the server reads
// would close connections whose whole request is unread.
func (l *listener) admit(c net.Conn) *guardConn {
	key := peerKey(c.RemoteAddr())
	deadline := time.Now().Add(catchUpWait)
	l.mu.Lock()
	victim, ok := l.victimLocked(key)
	for ok && victim != nil && !victim.stalled() && time.Now().Before(deadline) {
		l.catchingUp.Store(true)
		l.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-l.progress:
		case <-t.C:
		case <-l.done:
			deadline = time.Time{}
		}
		t.Stop()
		l.mu.Lock()
		l.catchingUp.Store(false)
		victim, ok = l.victimLocked(key)
	}
	if !ok {
		l.mu.Unlock()
		return nil
	}
	if victim != nil {
		l.uncountLocked(victim)
	}
	p := l.peers[key]
	if p == nil {
		p = &peer{key: key}
		l.peers[key] = p
	}
	gc := &guardConn{Conn: c, l: l, peer: p, counted: true}
	l.open++
	if p.n++; p.n >= l.lim.MaxConnectionsPerIP {
		l.crowded[p] = struct{}{}
	}
	l.waitLocked(gc)
	l.mu.Unlock()
	if victim != nil {
		// The client never finished a request head, or is between two
		// requests: it loses no answer. A keep-alive client opens a new
		// connection, as after IdleTimeout.
		l.noteReplaced(1)
		victim.Close()
	}
	return gc
}

// victimLocked returns the connection to close to admit one from the peer
// key, or nil when there is room for it; ok is false when there is no room
// and no connection to close.
func (l *listener) victimLocked(key string) (victim *guardConn, ok bool) {
	if p := l.peers[key]; p != nil && p.n >= l.lim.MaxConnectionsPerIP && l.open >= l.busyAt {
		victim = victimIn(&p.waiting)
	}
	if victim == nil && l.open >= l.lim.MaxConnections {
		if victim = l.longestWaitingLocked(); victim == nil {
			return nil, false
		}
	}
	return victim, true
}

// noteProgress wakes an admit waiting for the goroutines that read to catch
// up, if there is one.
func (l *listener) noteProgress() {
	if l.catchingUp.Load() {
		select {
		case l.progress <- struct{}{}:
		default:
		}
	}
}

// longestWaitingLocked returns the waiting connection that makes room first
// (victimIn) among the crowded peers', else among all, or nil.
func (l *listener) longestWaitingLocked() *guardConn {
	var victim *guardConn
	for p := range l.crowded {
		if c := victimIn(&p.waiting); c != nil && (victim == nil || c.before(victim)) {
			victim = c
		}
	}
	if victim == nil {
		victim = victimIn(&l.waiting)
	}
	return victim
}

// victimIn returns the connection of waiting that makes room first, or nil:
// the longest-waiting of the stalled ones (see stalled), else the
// longest-waiting. A connection that is not stalled goes last: its client
// may be about to send a whole request, or may have sent one that net/http
// has not parsed yet (the accept loop can outrun the goroutines that read).
func victimIn(waiting *list.List) *guardConn {
	for e := waiting.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*guardConn); c.stalled() {
			return c
		}
	}
	return front(waiting)
}

// before reports whether c makes room before d (see victimIn).
func (c *guardConn) before(d *guardConn) bool {
	if cs, ds := c.stalled(), d.stalled(); cs != ds {
		return cs
	}
	return c.since.Before(d.since)
}

// stalled reports whether c has sent something, part of a request head or
// earlier requests, and net/http now waits to read more of it.
func (c *guardConn) stalled() bool { return c.sent.Load() && c.reading.Load() }

// front returns the first connection of waiting, or nil.
func front(waiting *list.List) *guardConn {
	if e := waiting.Front(); e != nil {
		return e.Value.(*guardConn)
	}
	return nil
}

// waitLocked records that c waits for a request head from now on.
func (l *listener) waitLocked(c *guardConn) {
	l.stopWaitingLocked(c)
	c.since = time.Now()
	c.inWaiting = l.waiting.PushBack(c)
	c.inPeer = c.peer.waiting.PushBack(c)
	if !l.reapArmed && l.open >= l.busyAt {
		l.reapArmed = true
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// stopWaitingLocked records that c no longer waits for a request head.
func (l *listener) stopWaitingLocked(c *guardConn) {
	if c.inWaiting != nil {
		l.waiting.Remove(c.inWaiting)
		c.peer.waiting.Remove(c.inPeer)
		c.inWaiting, c.inPeer = nil, nil
	}
}

// uncountLocked frees c's place; c is about to be closed.
func (l *listener) uncountLocked(c *guardConn) {
	if !c.counted {
		return
	}
	c.counted = false
	l.stopWaitingLocked(c)
	l.open--
	p := c.peer
	if p.n--; p.n < l.lim.MaxConnectionsPerIP {
		delete(l.crowded, p)
	}
	if p.n == 0 {
		delete(l.peers, p.key)
	}
}

// closed uncounts c.
func (l *listener) closed(c *guardConn) {
	l.mu.Lock()
	l.uncountLocked(c)
	l.mu.Unlock()
	l.noteProgress()
}

// stateChanged follows net/http's view of c.
func (l *listener) stateChanged(c *guardConn, st http.ConnState) {
	switch st {
	case http.StateNew:
		// Waiting since admit.
		return
	case http.StateIdle:
		// The response is sent; the next request starts afresh.
		c.served.Store(false)
		c.linger.Store(false)
		c.rewrote.Store(false)
		l.mu.Lock()
		if c.counted {
			l.waitLocked(c)
		}
		l.mu.Unlock()
		return
	case http.StateHijacked:
		// A WebSocket (or other hijacker) owns the connection and its
		// deadlines now.
		c.hijacked.Store(true)
		_ = c.Conn.SetWriteDeadline(time.Time{})
	}
	l.mu.Lock()
	l.stopWaitingLocked(c)
	l.mu.Unlock()
	l.noteProgress()
}

// reap closes, while the server is busy, the connections that have waited
// busyWait for a request head. It runs until Close.
func (l *listener) reap() {
	defer close(l.reaped)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		case <-t.C:
		}
		late, next := l.late(time.Now())
		for _, c := range late {
			c.Close()
		}
		l.noteReplaced(len(late))
		if next > 0 {
			t.Reset(next)
		}
	}
}

// late uncounts and returns the connections that have waited busyWait for a
// request head by now, longest-waiting first and only while the server is
// still busy. It also returns how long until the next one will have waited
// that long (0: the reaper waits for a wake).
func (l *listener) late(now time.Time) ([]*guardConn, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var late []*guardConn
	var next time.Duration
	for l.open >= l.busyAt {
		c := front(&l.waiting)
		if c == nil {
			break
		}
		if waited := now.Sub(c.since); waited < l.busyWait {
			next = l.busyWait - waited
			break
		}
		l.uncountLocked(c)
		late = append(late, c)
	}
	l.reapArmed = next > 0
	return late, next
}

// noteReplaced counts n waiting connections closed to make room, and logs the
// count at most every logEvery.
func (l *listener) noteReplaced(n int) {
	if n == 0 {
		return
	}
	total := l.replaced.Add(int64(n))
	if last := l.lastBusy.Load(); time.Since(time.Unix(0, last)) >= logEvery && l.lastBusy.CompareAndSwap(last, time.Now().UnixNano()) {
		l.replaced.Add(-total)
		slog.Warn("http: server busy; closing connections that wait for a request head",
			"max_connections", l.lim.MaxConnections, "closed", total, "addr", l.Addr().String())
	}
}

// peerKey is the remote address a per-address limit counts: the IP of a TCP
// connection (an IPv6 address's /64 network), else the address as a whole.
func peerKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		if a == nil {
			return ""
		}
		return a.String()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// refuse answers c 503 and closes it, in the background; when MaxRefusing
// answers are already in progress it closes c at once.
func (l *listener) refuse(c net.Conn) {
	n := l.refused.Add(1)
	if last := l.lastLog.Load(); time.Since(time.Unix(0, last)) >= logEvery && l.lastLog.CompareAndSwap(last, time.Now().UnixNano()) {
		l.refused.Add(-n)
		slog.Warn("http: connection limit reached; refusing new connections with 503",
			"max_connections", l.lim.MaxConnections, "refused", n, "addr", l.Addr().String())
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		// Read the request head first: a client that is still sending it
		// when the answer arrives may not read the answer.
		_ = c.SetDeadline(time.Now().Add(refuseWait))
		readHead(c, refuseHeadMx)
		if _, err := c.Write(l.refusal); err != nil {
			return
		}
		linger(c)
	}()
}

// readHead reads from c until the end of a request head ("\r\n\r\n"), max
// bytes, an error or c's deadline.
func readHead(c net.Conn, max int) {
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for len(buf) < max {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if bytes.Contains(buf, []byte("\r\n\r\n")) || err != nil {
			return
		}
	}
}

// linger shuts c's write side and drops what the client still sends, for at
// most lingerTime and lingerBytes.
func linger(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, c, lingerBytes)
}

// guardConn is an admitted connection: it bounds each write's progress,
// gives the server's own early error answers a JSON body, and closes
// gracefully when the client may still be sending.
type guardConn struct {
	net.Conn
	l    *listener
	peer *peer

	// Guarded by l.mu.
	counted   bool          // c holds a place
	since     time.Time     // when c began to wait for a request head
	inWaiting *list.Element // c in l.waiting, nil when c does not wait
	inPeer    *list.Element // c in peer.waiting

	sent       atomic.Bool // c has received a byte
	reading    atomic.Bool // a Read of c is in progress
	served     atomic.Bool // a handler has run for the current request
	hijacked   atomic.Bool
	linger     atomic.Bool // the handler left part of the body unread
	rewrote    atomic.Bool // an early error answer was rewritten
	halfClosed atomic.Bool // net/http shut the write side itself

	closeOnce sync.Once
	closeErr  error
}

// Read reads from the connection.
func (c *guardConn) Read(p []byte) (int, error) {
	c.reading.Store(true)
	if c.sent.Load() {
		c.l.noteProgress()
	}
	n, err := c.Conn.Read(p)
	c.reading.Store(false)
	if n > 0 && !c.sent.Load() {
		c.sent.Store(true)
	}
	return n, err
}

// Write writes p, each 64 KiB within WriteTimeout. Before a handler runs for
// the current request, the only writes are net/http's own error answers
// (malformed request, headers too large, …), which are rewritten with a JSON
// {"detail": …} body.
func (c *guardConn) Write(p []byte) (int, error) {
	if c.hijacked.Load() {
		return c.Conn.Write(p)
	}
	if !c.served.Load() {
		if c.rewrote.Load() {
			// The rest of an answer already rewritten.
			return len(p), nil
		}
		if out, ok := rewriteEarlyError(p, c.l.lim.MaxHeaderBytes); ok {
			c.rewrote.Store(true)
			if _, err := c.write(out); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.write(p)
}

func (c *guardConn) write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), writeChunk)
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.l.lim.WriteTimeout))
		m, err := c.Conn.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// CloseWrite shuts the write side (net/http calls it before closing after
// some errors).
func (c *guardConn) CloseWrite() error {
	c.halfClosed.Store(true)
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection once, lingering first when the client may
// still be sending a body nobody read.
func (c *guardConn) Close() error {
	c.closeOnce.Do(func() {
		if c.linger.Load() && !c.halfClosed.Load() && !c.hijacked.Load() {
			linger(c.Conn)
		}
		c.closeErr = c.Conn.Close()
		c.l.closed(c)
	})
	return c.closeErr
}

// rewriteEarlyError returns the answer p (written by net/http itself, with a
// text/plain or empty body) with a JSON {"detail": …} body instead, and
// whether p was such an answer (an HTTP/1.x status line with a 4xx or 5xx
// status, and the end of the header block).
func rewriteEarlyError(p []byte, maxHeaderBytes int) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.")) {
		return nil, false
	}
	head, body, ok := bytes.Cut(p, []byte("\r\n\r\n"))
	if !ok {
		return nil, false
	}
	statusLine, _, _ := bytes.Cut(head, []byte("\r\n"))
	proto, rest, _ := strings.Cut(string(statusLine), " ")
	codeText, reason, _ := strings.Cut(rest, " ")
	code, err := strconv.Atoi(codeText)
	if err != nil || len(codeText) != 3 || code < 400 || code > 599 {
		return nil, false
	}
	if reason == "" {
		reason = http.StatusText(code)
	}
	detail := strings.TrimPrefix(strings.TrimSpace(string(body)), codeText+" ")
	if detail == "" {
		detail = reason
	}
	if code == http.StatusRequestHeaderFieldsTooLarge {
		detail = fmt.Sprintf("Request Header Fields Too Large: the request line and headers must fit in %d bytes", maxHeaderBytes)
	}
	js, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{detail})
	return fmt.Appendf(nil, "%s %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		proto, code, reason, len(js), js), true
}
