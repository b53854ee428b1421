package httpserve

import (
	"bytes"
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
	logEvery     = 10 * time.Second
)

// listener admits at most lim.MaxConnections connections at once.
type listener struct {
	net.Listener
	lim     Limits
	refusal []byte // the 503 answer

	mu   sync.Mutex
	open int
	idle map[*guardConn]time.Time // keep-alive connections between requests

	refusing chan struct{} // semaphore of refusals in progress
	refused  atomic.Int64  // refused since the last log line
	lastLog  atomic.Int64  // unix nanos
}

func newListener(ln net.Listener, lim Limits) *listener {
	detail, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{fmt.Sprintf("Too many connections (this server accepts %d at once); retry shortly", lim.MaxConnections)})
	refusal := fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(detail), detail)
	return &listener{Listener: ln, lim: lim, refusal: refusal, idle: map[*guardConn]time.Time{},
		refusing: make(chan struct{}, lim.MaxRefusing)}
}

// Accept returns the next connection within the cap. A connection over the
// cap replaces the longest-idle keep-alive connection, or is refused (503)
// in the background.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit() {
			return &guardConn{Conn: c, l: l}, nil
		}
		l.refuse(c)
	}
}

// admit counts a new connection if there is room, making room by closing the
// longest-idle keep-alive connection when needed.
func (l *listener) admit() bool {
	l.mu.Lock()
	if l.open < l.lim.MaxConnections {
		l.open++
		l.mu.Unlock()
		return true
	}
	var victim *guardConn
	var since time.Time
	for c, t := range l.idle {
		if victim == nil || t.Before(since) {
			victim, since = c, t
		}
	}
	if victim != nil {
		delete(l.idle, victim)
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	// Closing an idle keep-alive connection is what IdleTimeout does too;
	// clients open a new one.
	victim.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open < l.lim.MaxConnections {
		l.open++
		return true
	}
	return false
}

// closed uncounts c.
func (l *listener) closed(c *guardConn) {
	l.mu.Lock()
	l.open--
	delete(l.idle, c)
	l.mu.Unlock()
}

// stateChanged follows net/http's view of c.
func (l *listener) stateChanged(c *guardConn, st http.ConnState) {
	switch st {
	case http.StateIdle:
		// The response is sent; the next request starts afresh.
		c.served.Store(false)
		c.linger.Store(false)
		c.rewrote.Store(false)
		l.mu.Lock()
		if !c.isClosed.Load() {
			l.idle[c] = time.Now()
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
	delete(l.idle, c)
	l.mu.Unlock()
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
	l *listener

	served     atomic.Bool // a handler has run for the current request
	hijacked   atomic.Bool
	linger     atomic.Bool // the handler left part of the body unread
	rewrote    atomic.Bool // an early error answer was rewritten
	halfClosed atomic.Bool // net/http shut the write side itself
	isClosed   atomic.Bool

	closeOnce sync.Once
	closeErr  error
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
		c.isClosed.Store(true)
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
