package httpserve_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/httpserve"
	"github.com/acs-project/acs/internal/httpserve/httpservetest"
	"github.com/acs-project/acs/internal/testwait"
)

// TestReconnectingSlowlorisCannotHoldTheCap: connections that never finish
// their request head, reopened as soon as the server closes them, do not
// keep a client with whole requests out. At the cap a new connection takes
// the place of the one that has waited longest for its request head among
// those that have sent part of one. (Only idle keep-alive connections were
// replaced before: the attackers held all places, and every request of the
// client was answered 503 or reset.)
func TestReconnectingSlowlorisCannotHoldTheCap(t *testing.T) {
	lim := testLimits()
	lim.MaxConnections = 64
	// No timeout frees a place during the test: only the cap's rule does.
	lim.ReadTimeout = time.Minute
	lim.IdleTimeout = time.Minute
	addr := serve(t, newHandler(lim), lim)

	opened := httpservetest.Slowloris(t, addr, 96, 200_000)
	// The attack holds every place and is reconnecting.
	testwait.For(t, bound, "the attack to open twice the cap", func() bool { return opened.Load() >= 2*int64(lim.MaxConnections) })

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: bound}
	const requests = 20
	served := 0
	var failures []string
	before := opened.Load()
	start := time.Now()
	for range requests {
		res, err := client.Get("http://" + addr + "/ctx")
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			served++
		} else {
			failures = append(failures, res.Status)
		}
	}
	took := time.Since(start)
	during := opened.Load() - before
	if served < requests-1 {
		t.Fatalf("%d of %d requests served in %v during the attack (%d attack connections meanwhile); failures: %q",
			served, requests, took, during, failures)
	}
	if during < int64(lim.MaxConnections) {
		t.Fatalf("only %d attack connections were opened during the %d requests: the test proves nothing", during, requests)
	}
	t.Logf("%d of %d requests served in %v; %d attack connections meanwhile; failures: %q", served, requests, took, during, failures)
}

// dialFrom opens a raw connection to addr from the loopback address from,
// which fails reads after bound. It skips the test where the system has no
// such address.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("no loopback address %s to connect from: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(bound))
	return c
}

// busyLimits are limits with a cap of 8 (the server is busy from 6 open
// connections) and no timeout that acts within a test.
func busyLimits() httpserve.Limits {
	lim := testLimits()
	lim.MaxConnections = 8
	lim.ReadTimeout = time.Minute
	lim.IdleTimeout = time.Minute
	lim.BusyHeaderTimeout = time.Minute
	return lim
}

// hold sends n requests to /hold on new connections and waits until the
// handler has them all.
func hold(t *testing.T, h *testHandler, addr string, n int) []*bufio.Reader {
	t.Helper()
	held := make([]*bufio.Reader, n)
	for i := range held {
		c := dial(t, addr)
		io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
		held[i] = bufio.NewReader(c)
		select {
		case <-h.entered:
		case <-time.After(bound):
			t.Fatalf("held request %d was not served", i)
		}
	}
	return held
}

// TestOneAddressCannotCrowdOutAnother: connections from one address (here
// 127.0.0.2) that never finish a request head make room for their own kind
// once the server is busy and the address holds MaxConnectionsPerIP of
// them, and they are the first to go at the cap. A slow client of another
// address that opened its connection before all of them keeps it, and a
// whole request of that address is served.
func TestOneAddressCannotCrowdOutAnother(t *testing.T) {
	lim := busyLimits()
	lim.MaxConnectionsPerIP = 4
	h := newHandler(lim)
	addr := serve(t, h, lim)

	slow := dial(t, addr)
	io.WriteString(slow, "GET /ctx HTTP/1.1\r\nHost: x\r\n")
	for range 20 {
		io.WriteString(dialFrom(t, "127.0.0.2", addr), "GET / HT")
	}
	// 127.0.0.2 holds 5 connections now (4, and one more before the server
	// was busy); two held requests fill the cap.
	held := hold(t, h, addr, 2)

	// At the cap, a new connection of 127.0.0.1 takes the place of one of
	// 127.0.0.2's, not of the slow connection, which has waited longer.
	res, err := http.Get("http://" + addr + "/ctx")
	if err != nil {
		t.Fatalf("a whole request at the cap: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("a whole request at the cap: HTTP %d, want 200", res.StatusCode)
	}
	io.WriteString(slow, "\r\n")
	if a := readAnswer(t, bufio.NewReader(slow)); a.status != 200 {
		t.Fatalf("the slow connection: HTTP %d %s, want 200", a.status, a.body)
	}
	close(h.release)
	for i, br := range held {
		if a := readAnswer(t, br); a.status != 200 {
			t.Fatalf("held request %d: HTTP %d %s", i, a.status, a.body)
		}
	}
}

// TestManyKeepAliveConnectionsFromOneAddress: the per-address limit never
// refuses a connection by itself. A client on 127.0.0.1 that keeps many
// keep-alive connections open, more than MaxConnectionsPerIP and more than
// the cap, gets every request served: its new connections replace its own
// idle ones.
func TestManyKeepAliveConnectionsFromOneAddress(t *testing.T) {
	lim := busyLimits()
	lim.MaxConnectionsPerIP = 2
	addr := serve(t, newHandler(lim), lim)
	for i := range 3 * lim.MaxConnections {
		c := dial(t, addr)
		io.WriteString(c, "GET /ctx HTTP/1.1\r\nHost: x\r\n\r\n")
		if a := readAnswer(t, bufio.NewReader(c)); a.status != 200 || a.close {
			t.Fatalf("request %d: HTTP %d %s (Connection: close %v), want 200 kept alive", i, a.status, a.body, a.close)
		}
	}
}

// TestBusyServerShortensTheHeaderWait: once at least 3/4 of MaxConnections
// are open, a connection that waits for a request head, new or idle between
// two requests, is closed after BusyHeaderTimeout instead of ReadTimeout or
// IdleTimeout. Below that, it may wait as long as ReadTimeout.
// (Such a connection waited for ReadTimeout, or IdleTimeout, at any load.)
func TestBusyServerShortensTheHeaderWait(t *testing.T) {
	lim := busyLimits()
	lim.BusyHeaderTimeout = 200 * time.Millisecond

	t.Run("not busy", func(t *testing.T) {
		addr := serve(t, newHandler(lim), lim)
		c := dial(t, addr)
		io.WriteString(c, "GET /ctx HTTP/1.1\r\nHost: x\r\n")
		c.SetReadDeadline(time.Now().Add(5 * lim.BusyHeaderTimeout))
		if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read %d bytes, %v; want the connection still open, waiting", n, err)
		}
		c.SetReadDeadline(time.Now().Add(bound))
		io.WriteString(c, "\r\n")
		if a := readAnswer(t, bufio.NewReader(c)); a.status != 200 {
			t.Fatalf("HTTP %d %s, want 200", a.status, a.body)
		}
	})
	t.Run("busy", func(t *testing.T) {
		h := newHandler(lim)
		addr := serve(t, h, lim)
		held := hold(t, h, addr, 5)
		// A connection idle after an answer, and one that has not finished
		// its request head: 7 open, still busy once one of them is closed.
		idle := dial(t, addr)
		io.WriteString(idle, "GET /ctx HTTP/1.1\r\nHost: x\r\n\r\n")
		idleReader := bufio.NewReader(idle)
		if a := readAnswer(t, idleReader); a.status != 200 {
			t.Fatalf("HTTP %d %s, want 200", a.status, a.body)
		}
		start := time.Now()
		partial := dial(t, addr)
		io.WriteString(partial, "GET /ctx HTTP/1.1\r\nHost: x\r\n")
		wantClosed(t, partial, bufio.NewReader(partial))
		wantClosed(t, idle, idleReader)
		if took := time.Since(start); took >= lim.ReadTimeout/2 {
			t.Fatalf("closed after %v, not much sooner than ReadTimeout (%v)", took, lim.ReadTimeout)
		}
		close(h.release)
		for i, br := range held {
			if a := readAnswer(t, br); a.status != 200 {
				t.Fatalf("held request %d: HTTP %d %s", i, a.status, a.body)
			}
		}
	})
}
