// Package netdrop is test support: an HTTP client whose connections a test
// can drop as a network failure would, holding new dials while the network
// is down.
package netdrop

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Net dials through connections it remembers. The zero value is a network
// that is up. It is safe for concurrent use.
type Net struct {
	mu    sync.Mutex
	conns []net.Conn
	dials int
	gate  chan struct{} // nil: up
}

// Client returns an HTTP client that dials through n: while n is down a
// dial waits until it is up again or its context ends.
func (n *Net) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.mu.Lock()
		gate := n.gate
		n.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			n.mu.Lock()
			n.conns, n.dials = append(n.conns, c), n.dials+1
			n.mu.Unlock()
		}
		return c, err
	}}}
}

// Down closes every connection made so far and holds new dials until the
// returned function is called.
func (n *Net) Down() (up func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	gate := make(chan struct{})
	n.gate = gate
	for _, c := range n.conns {
		c.Close()
	}
	n.conns = nil
	return func() {
		n.mu.Lock()
		n.gate = nil
		n.mu.Unlock()
		close(gate)
	}
}

// Dials counts the successful dials.
func (n *Net) Dials() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dials
}
