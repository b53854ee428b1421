// Package httpservetest attacks an HTTP server the way the connection cap
// of httpserve must withstand, for tests.
package httpservetest

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Slowloris runs workers goroutines that each open a connection to addr,
// send an unfinished request line, and open the next one as soon as the
// server closes it. It stops when the test ends, after a minute, or after
// maxConns connections. It returns a counter of the connections opened so
// far.
func Slowloris(t testing.TB, addr string, workers int, maxConns int64) *atomic.Int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var opened atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var d net.Dialer
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && opened.Load() < maxConns {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					// Out of ports or file descriptors: wait a little.
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
					continue
				}
				opened.Add(1)
				stop := context.AfterFunc(ctx, func() { c.Close() })
				if _, err := io.WriteString(c, "GET / HT"); err == nil {
					io.Copy(io.Discard, c)
				}
				stop()
				c.Close()
			}
		}()
	}
	return &opened
}
