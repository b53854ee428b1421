package httpserve

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// body is a request body whose reads are bounded by the minimum-rate rule:
// no read waits more than timeout, and the total time spent waiting may not
// exceed timeout plus len/rate seconds, len being the bytes read so far.
// Only the time spent blocked in Read counts, so a handler that is slow to
// consume an upload is not blamed on the client.
type body struct {
	src     io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	rate    int64
	length  int64 // the declared Content-Length, or -1

	n      int64         // bytes read
	waited time.Duration // time spent in src.Read
	done   atomic.Bool   // src returned io.EOF
}

// Read reads from the body with a read deadline set by the rule. A read cut
// by the deadline fails with a *SlowBodyError.
func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		return b.src.Read(p)
	}
	budget := b.timeout + time.Duration(float64(b.n)/float64(b.rate)*float64(time.Second)) - b.waited
	wait := max(min(b.timeout, budget), 0)
	start := time.Now()
	_ = b.rc.SetReadDeadline(start.Add(wait))
	n, err := b.src.Read(p)
	b.waited += time.Since(start)
	b.n += int64(n)
	if errors.Is(err, io.EOF) || (b.length > 0 && b.n >= b.length) {
		b.done.Store(true)
		// The whole body is in (a handler reading exactly its declared
		// length may never see io.EOF): net/http's own background read
		// (which notices a client going away) must not inherit the
		// deadline, or its failure would cancel the context of every
		// later request on the connection.
		_ = b.rc.SetReadDeadline(time.Time{})
		return n, err
	}
	var ne interface{ Timeout() bool }
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return n, &SlowBodyError{Read: b.n, err: err}
	}
	return n, err
}

// Close closes the underlying body.
func (b *body) Close() error { return b.src.Close() }

// SlowBodyError is the error of a body read cut by the minimum-rate rule. It
// wraps the connection's timeout error, so errors.Is(err,
// os.ErrDeadlineExceeded) holds.
type SlowBodyError struct {
	// Read is the number of body bytes received before the cut.
	Read int64
	err  error
}

func (e *SlowBodyError) Error() string {
	return "the request body arrived too slowly: " + e.err.Error()
}

// Unwrap returns the connection's timeout error.
func (e *SlowBodyError) Unwrap() error { return e.err }

// Timeout reports true (net.Error style).
func (e *SlowBodyError) Timeout() bool { return true }
