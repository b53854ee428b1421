package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/acs-project/acs/internal/testwait"
)

func frame(i int) Transient { return Transient{Frame: []byte(fmt.Sprint(i)), AfterLog: i} }

// received takes what ch holds without waiting.
func received(ch <-chan Transient) []int {
	var out []int
	for {
		select {
		case t := <-ch:
			out = append(out, t.AfterLog)
		default:
			return out
		}
	}
}

func upTo(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func sameInts(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// Every subscriber gets every frame, in the order sent; frames from
// concurrent senders keep each sender's order.
func TestFanoutDeliversInOrder(t *testing.T) {
	var f fanout
	subs := make([]<-chan Transient, 3)
	for i := range subs {
		subs[i], _ = f.subscribe()
	}
	const senders, each = 4, 50 // 200 frames: within every buffer
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				f.send(frame(s*1000 + i))
			}
		})
	}
	wg.Wait()
	for n, ch := range subs {
		got := received(ch)
		if len(got) != senders*each {
			t.Fatalf("subscriber %d got %d frames, want %d", n, len(got), senders*each)
		}
		next := map[int]int{}
		for _, v := range got {
			s, i := v/1000, v%1000
			if i != next[s] {
				t.Fatalf("subscriber %d got frame %d of sender %d after frame %d", n, i, s, next[s]-1)
			}
			next[s]++
		}
	}
}

// A subscriber whose buffer is full loses frames, with a warning each;
// a subscriber that keeps up still gets all of them, and sending never
// blocks.
func TestFanoutSlowSubscriberLosesFramesAlone(t *testing.T) {
	var logged testwait.Buffer
	f := fanout{lg: slog.New(slog.NewTextHandler(&logged, nil))}
	slow, _ := f.subscribe()
	fast, _ := f.subscribe()
	const extra = 50
	var got []int
	for i := range subscriberBuffer + extra {
		f.send(frame(i))
		got = append(got, received(fast)...)
	}
	if want := upTo(0, subscriberBuffer+extra); !sameInts(got, want) {
		t.Errorf("the subscriber that kept up got %v, want %v", got, want)
	}
	if got, want := received(slow), upTo(0, subscriberBuffer); !sameInts(got, want) {
		t.Errorf("the slow subscriber got %v, want the first %d frames", got, subscriberBuffer)
	}
	if n := strings.Count(logged.String(), "dropping transient frame for a slow subscriber"); n != extra {
		t.Errorf("%d warnings for %d lost frames:\n%s", n, extra, logged.String())
	}
}

// An ended subscription gets no more frames and its channel stays open;
// ending it twice is harmless, and the other subscribers go on.
func TestFanoutUnsubscribe(t *testing.T) {
	var f fanout
	gone, unsubscribe := f.subscribe()
	kept, _ := f.subscribe()
	f.send(frame(1))
	unsubscribe()
	unsubscribe()
	f.send(frame(2))
	if got := received(gone); !sameInts(got, []int{1}) {
		t.Errorf("the ended subscription got %v, want [1]", got)
	}
	select {
	case _, ok := <-gone:
		t.Errorf("the ended subscription's channel gave a value (open: %v)", ok)
	default:
	}
	if got := received(kept); !sameInts(got, []int{1, 2}) {
		t.Errorf("the other subscriber got %v, want [1 2]", got)
	}
}
