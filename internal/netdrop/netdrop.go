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
	downs int           // Down calls so far
}

// Client returns an HTTP client that dials through n: while n is down a
// dial waits until it is up again or its context ends.
func (n *Net) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		for {
			n.mu.Lock()
			gate, downs := n.gate, n.downs
			n.mu.Unlock()
			if gate != nil {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				continue
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			n.mu.Lock()
			if n.downs != downs {
				// The network went down while this dial was under way:
				// the connection is cut with the others.
				n.mu.Unlock()
				c.Close()
				continue
			}
			n.conns, n.dials = append(n.conns, c), n.dials+1
			n.mu.Unlock()
			return c, nil
		}
	}}}
}

// Down closes every connection made so far and holds new dials until the
// returned function is called.
func (n *Net) Down() (up func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	gate := make(chan struct{})
	n.gate, n.downs = gate, n.downs+1
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
