package agent

import (
	"log/slog"
	"sync"
)

// subscriberBuffer is how many frames a subscriber may fall behind before
// it loses frames.
const subscriberBuffer = 256

// fanout delivers transient frames to subscribers. Each subscriber gets
// the frames in the order they were sent. Sending never blocks: a
// subscriber whose buffer is full loses the frame, and the others still
// get it. The zero fanout logs losses to slog.Default.
type fanout struct {
	lg *slog.Logger

	mu   sync.Mutex
	subs map[chan Transient]struct{}
}

// subscribe returns a channel of the frames sent from now on and the
// function that ends the subscription. Ending it twice is harmless; the
// channel is never closed.
func (f *fanout) subscribe() (<-chan Transient, func()) {
	ch := make(chan Transient, subscriberBuffer)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[chan Transient]struct{}{}
	}
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

// send gives t to every subscriber whose buffer has room.
func (f *fanout) send(t Transient) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- t:
		default:
			f.logger().Warn("dropping transient frame for a slow subscriber")
		}
	}
}

func (f *fanout) logger() *slog.Logger {
	if f.lg == nil {
		return slog.Default()
	}
	return f.lg
}
