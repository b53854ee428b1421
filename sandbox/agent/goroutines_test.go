package agent

import (
	"sync/atomic"
	"testing"
)

// A group's Wait waits for the goroutines running, and Go refuses new
// ones once Wait was called.
func TestGroupWaitsThenRefuses(t *testing.T) {
	var g group
	release, ended := make(chan struct{}), make(chan struct{})
	if !g.Go(func() { <-release; close(ended) }) {
		t.Fatal("Go refused before Wait")
	}
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	close(release)
	<-waited
	select {
	case <-ended:
	default:
		t.Fatal("Wait returned before the goroutine ended")
	}
	if g.Go(func() { t.Error("ran after Wait") }) {
		t.Fatal("Go accepted after Wait")
	}
}

// A notifier makes one call at a time; changes during a call make one
// more call, however many there are, and that call begins after the last
// of them.
func TestNotifierCoalesces(t *testing.T) {
	var g group
	var calls, inFlight, most atomic.Int32
	var seen atomic.Int32 // the change count the last call began after
	var changes atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	n := notifier{start: g.Go, call: func() {
		k := inFlight.Add(1)
		defer inFlight.Add(-1)
		if k > most.Load() {
			most.Store(k)
		}
		calls.Add(1)
		seen.Store(changes.Load())
		started <- struct{}{}
		<-release
	}}
	changes.Add(1)
	n.notify()
	<-started
	for range 100 {
		changes.Add(1)
		n.notify()
	}
	release <- struct{}{}
	<-started // the one call the burst asked for
	release <- struct{}{}
	g.Wait()
	if c := calls.Load(); c != 2 {
		t.Errorf("%d calls for a change and a burst during its call, want 2", c)
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d calls at once, want 1", m)
	}
	if s := seen.Load(); s != 101 {
		t.Errorf("the last call began after change %d, want 101", s)
	}
	n.notify() // refused: dropped
	if c := calls.Load(); c != 2 {
		t.Errorf("%d calls after a change the group refused, want 2", c)
	}
}
