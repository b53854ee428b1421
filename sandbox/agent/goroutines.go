package agent

import "sync"

// group runs the goroutines of one conversation, so Close can wait for
// all of them. The zero group is ready to use.
type group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f in a new goroutine and reports true. Once Wait has been
// called it runs nothing and reports false.
func (g *group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Go(f)
	return true
}

// Wait refuses new goroutines, then waits for those running to end.
func (g *group) Wait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// notifier calls a callback after changes, one call at a time, in a
// goroutine started with start. A change during a call asks for one more
// call after it, however many arrive: a burst costs at most two calls,
// and the last call begins after the last change. A change that start
// refuses is dropped.
type notifier struct {
	call  func()
	start func(func()) bool

	mu      sync.Mutex
	busy    bool // a goroutine is calling, or about to
	pending bool // a change arrived during the call
}

// notify asks for a call. It never blocks on the callback.
func (n *notifier) notify() {
	if n.call == nil {
		return
	}
	n.mu.Lock()
	if n.busy {
		n.pending = true
		n.mu.Unlock()
		return
	}
	n.busy = true
	n.mu.Unlock()
	if !n.start(n.run) {
		n.mu.Lock()
		n.busy, n.pending = false, false
		n.mu.Unlock()
	}
}

// run calls the callback until no change is pending.
func (n *notifier) run() {
	for {
		n.call()
		n.mu.Lock()
		if !n.pending {
			n.busy = false
			n.mu.Unlock()
			return
		}
		n.pending = false
		n.mu.Unlock()
	}
}
