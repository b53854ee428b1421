// Package httpserve is the HTTP server of `acs serve`, `acs agent-server` and
// `acs runtime-api`: net/http with the limits a server facing untrusted
// clients needs, so that slow or abandoned connections cannot pile up.
//
// The rules (Limits holds the numbers):
//
//   - A request's line and headers must arrive within ReadTimeout and fit in
//     MaxHeaderBytes (else 431).
//   - A request body must keep arriving: no read of it waits more than
//     ReadTimeout for data, and the time spent waiting for the whole body may
//     not exceed ReadTimeout plus one second per MinBodyRate bytes received.
//     A large upload on a slow but honest link passes; a body dribbled a byte
//     at a time is cut after about ReadTimeout. The handler's read then fails
//     with an error that wraps os.ErrDeadlineExceeded.
//   - A handler that answers without reading the whole body (an
//     unauthenticated request, a validation error, a route that ignores its
//     body) is answered at once, with Connection: close, and the connection
//     is closed: the server never waits for the rest of a body nobody wants,
//     and never keeps a connection whose unread body it cut. A body read to
//     its declared Content-Length counts as read.
//   - A response write must make progress: each 64 KiB has to be accepted by
//     the client within WriteTimeout. There is no bound on a response's total
//     time, so long downloads, streamed responses and WebSockets (hijacked
//     connections are left alone) are not cut.
//   - A keep-alive connection is closed after IdleTimeout without a request.
//   - At most MaxConnections connections are open at once. A connection
//     waits for a request head from when it opens until its head has
//     arrived, and again after each answer on a keep-alive connection. At
//     the cap, a new connection takes the place of a waiting one: one of a
//     crowded address (holding at least MaxConnectionsPerIP connections) if
//     there is one, else any. Among those, a stalled one, that has sent
//     something (part of a request head, or earlier requests) and is read
//     for more, goes before one that has not, and the longest-waiting first.
//     Its client has no request in flight, so it loses no answer. When no
//     waiting connection is stalled, the new one waits up to 50ms for the
//     server to read what the others sent. If no connection waits, the new one is
//     answered 503 {"detail": …} with Retry-After and closed (at most
//     MaxRefusing such answers are in progress at once; beyond that a
//     connection is closed without an answer). So clients that open
//     connections and never finish a request cannot keep out one that sends
//     whole requests: its request is read long before the cap comes round to
//     its connection.
//   - The server is busy when at least 3/4 of MaxConnections are open. While
//     it is busy, a connection that waits for a request head is closed after
//     BusyHeaderTimeout instead of ReadTimeout or IdleTimeout, and a new
//     connection from an address holding MaxConnectionsPerIP connections
//     takes the place of one of that address's own waiting connections, in
//     the order above. An address is an IPv4 address or an IPv6 /64 network.
//     The per-address limit never refuses a connection: it only decides whose
//     waiting connections make room. So many keep-alive connections from one
//     address, a local user or tests on 127.0.0.1 or a reverse proxy, are
//     never refused for their number; at worst their own idle ones make room.
//   - Every error answer has a JSON {"detail": …} body like the handlers'
//     own: those net/http writes itself before any handler runs (400 for a
//     malformed request, 431, 501, 505, 417) and the plain-text ones written
//     by http.Error, http.ServeMux (404, 405) or a WebSocket library (426).
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limits are the server's bounds. A zero field takes its default (see
// DefaultLimits).
type Limits struct {
	// MaxConnections caps the connections open at once (ACS_MAX_CONNECTIONS).
	MaxConnections int
	// MaxConnectionsPerIP is how many connections one remote address may
	// hold before, when the server is busy, its new connections replace its
	// own waiting ones (ACS_MAX_CONNECTIONS_PER_IP). A value of at least
	// MaxConnections turns the rule off.
	MaxConnectionsPerIP int
	// ReadTimeout bounds the wait for a request's headers and for each part
	// of its body (ACS_HTTP_READ_TIMEOUT).
	ReadTimeout time.Duration
	// MinBodyRate is the slowest average rate, in bytes per second, at which
	// a body may arrive once ReadTimeout of slack is used up.
	MinBodyRate int64
	// WriteTimeout bounds the wait for the client to accept each 64 KiB of a
	// response.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection without a request for this
	// long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers.
	MaxHeaderBytes int
	// BusyHeaderTimeout bounds the wait for a request head while the server
	// is busy. ReadTimeout bounds it too.
	BusyHeaderTimeout time.Duration
	// MaxRefusing bounds the 503 answers to connections over the cap that are
	// in progress at once.
	MaxRefusing int
	// ShutdownTimeout is how long Serve waits for requests in flight when
	// its context ends.
	ShutdownTimeout time.Duration
}

// The defaults.
const (
	DefaultMaxConnections      = 4096
	DefaultMaxConnectionsPerIP = 256
	DefaultReadTimeout         = 30 * time.Second
	DefaultMinBodyRate         = 4 << 10
	DefaultWriteTimeout        = 60 * time.Second
	DefaultIdleTimeout         = 120 * time.Second
	DefaultMaxHeaderBytes      = 64 << 10
	DefaultBusyHeaderTimeout   = 2 * time.Second
	DefaultMaxRefusing         = 64
	DefaultShutdownTimeout     = 10 * time.Second
)

// writeChunk is the unit of write progress: each chunk of a write gets its
// own WriteTimeout.
const writeChunk = 64 << 10

// DefaultLimits returns the defaults. MaxConnections is DefaultMaxConnections,
// but at most half of the process's open-file limit (RLIMIT_NOFILE, whose
// soft value the Go runtime raises to the hard one at start), so the store,
// sandboxes and outgoing connections keep the other half.
func DefaultLimits() Limits {
	maxConns := DefaultMaxConnections
	if n := openFileLimit(); n > 0 && n/2 < uint64(maxConns) {
		maxConns = max(int(n/2), 16)
	}
	return Limits{MaxConnections: maxConns, MaxConnectionsPerIP: DefaultMaxConnectionsPerIP, ReadTimeout: DefaultReadTimeout,
		MinBodyRate: DefaultMinBodyRate, WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout,
		MaxHeaderBytes: DefaultMaxHeaderBytes, BusyHeaderTimeout: DefaultBusyHeaderTimeout, MaxRefusing: DefaultMaxRefusing,
		ShutdownTimeout: DefaultShutdownTimeout}
}

// LimitsFromEnv returns DefaultLimits with ACS_MAX_CONNECTIONS and
// ACS_MAX_CONNECTIONS_PER_IP (integers from 1 to 1048576) and
// ACS_HTTP_READ_TIMEOUT (a positive duration) applied. It returns an error
// naming each variable that is set to an invalid value.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	l := DefaultLimits()
	var problems []string
	for _, v := range []struct {
		name string
		dst  *int
	}{{"ACS_MAX_CONNECTIONS", &l.MaxConnections}, {"ACS_MAX_CONNECTIONS_PER_IP", &l.MaxConnectionsPerIP}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1<<20 {
			problems = append(problems, v.name+" must be an integer from 1 to 1048576")
		} else {
			*v.dst = n
		}
	}
	if v := strings.TrimSpace(getenv("ACS_HTTP_READ_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problems = append(problems, "ACS_HTTP_READ_TIMEOUT must be a positive duration such as 30s")
		} else {
			l.ReadTimeout = d
		}
	}
	if len(problems) > 0 {
		return l, errors.New("configuration: " + strings.Join(problems, "; "))
	}
	return l, nil
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	if l.MaxConnectionsPerIP <= 0 {
		l.MaxConnectionsPerIP = d.MaxConnectionsPerIP
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.MinBodyRate <= 0 {
		l.MinBodyRate = d.MinBodyRate
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.BusyHeaderTimeout <= 0 {
		l.BusyHeaderTimeout = d.BusyHeaderTimeout
	}
	if l.MaxRefusing <= 0 {
		l.MaxRefusing = d.MaxRefusing
	}
	if l.ShutdownTimeout <= 0 {
		l.ShutdownTimeout = d.ShutdownTimeout
	}
	return l
}

// Server is an http.Server with Limits.
type Server struct {
	lim Limits
	srv *http.Server
}

// New returns a server of h with lim (zero fields take their defaults).
func New(h http.Handler, lim Limits) *Server {
	lim = lim.withDefaults()
	s := &Server{lim: lim}
	s.srv = &http.Server{
		Handler:           s.guard(h),
		ReadHeaderTimeout: lim.ReadTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		// guard answers "OPTIONS *" itself, under the body rules (net/http's
		// own handler for it reads a body without any deadline).
		DisableGeneralOptionsHandler: true,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if gc, ok := c.(*guardConn); ok {
				return context.WithValue(ctx, connKey{}, gc)
			}
			return ctx
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if gc, ok := c.(*guardConn); ok {
				gc.l.stateChanged(gc, st)
			}
		},
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	return s
}

// Limits returns the limits in force (defaults filled in).
func (s *Server) Limits() Limits { return s.lim }

// Serve serves on ln until ctx ends, then shuts down gracefully, waiting up to
// ShutdownTimeout for requests in flight. It returns the error that stopped
// serving, or nil after a shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	gl := newListener(ln, s.lim)
	go gl.reap()
	// net/http closes gl when Serve returns, which stops the reaper.
	defer func() { <-gl.reaped }()
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(gl) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.lim.ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down the HTTP server: %w", err)
	}
	return nil
}

type connKey struct{}

// guard runs h with the body rules: it marks the connection as serving a
// request, bounds the reads of the body, gives plain-text error answers a
// JSON body (jsonErrors), and after h returns makes sure the server does not
// wait for the unread rest of a body. It answers "OPTIONS *" (200, empty)
// itself, as net/http would.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gc, _ := r.Context().Value(connKey{}).(*guardConn)
		if gc != nil {
			gc.served.Store(true)
		}
		var b *body
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// A baseline deadline until the handler reads: it also bounds a
			// read of the body by net/http itself (when a handler flushes a
			// response before reading its body).
			if err := rc.SetReadDeadline(time.Now().Add(s.lim.ReadTimeout)); err == nil {
				b = &body{src: r.Body, rc: rc, timeout: s.lim.ReadTimeout, rate: s.lim.MinBodyRate, length: r.ContentLength}
				r.Body = b
			}
		}
		if r.Method == http.MethodOptions && r.RequestURI == "*" {
			// What net/http's general OPTIONS handler answers, without
			// reading the body.
			w.Header().Set("Content-Length", "0")
		} else {
			// An answer sent before the whole body was read closes the
			// connection (Connection: close), so that net/http neither
			// waits for the rest of the body nor keeps the connection with
			// the read deadline that cuts it below.
			unread := func() bool { return b != nil && !b.done.Load() }
			closeIfUnread := func(h http.Header) {
				if unread() {
					h.Set("Connection", "close")
				}
			}
			jw := &jsonErrors{ResponseWriter: w, head: r.Method == http.MethodHead, beforeHeader: closeIfUnread}
			h.ServeHTTP(jw, r)
			jw.finish()
			if !jw.decided && !(gc != nil && gc.hijacked.Load()) {
				closeIfUnread(w.Header()) // net/http writes the 200 itself
			}
		}
		if b == nil || b.done.Load() || (gc != nil && gc.hijacked.Load()) {
			return
		}
		// The handler answered without the whole body. net/http would read
		// up to 256 KiB of it before sending the answer, for as long as the
		// client takes: let it discard only what has already arrived, then
		// close the connection.
		_ = rc.SetReadDeadline(time.Now())
		if gc != nil {
			gc.linger.Store(true)
		}
	})
}
