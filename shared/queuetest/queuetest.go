// Package queuetest is the conformance suite every acs.Queue adapter passes.
package queuetest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Run runs the suite. newQueue returns an empty queue for each subtest.
// Timing tolerances are generous: adapters backed by real servers may be slow.
func Run(t *testing.T, newQueue func(t *testing.T) acs.Queue) {
	ctx := context.Background()
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	receive := func(t *testing.T, q acs.Queue, max int, wait, vis time.Duration) []acs.Delivery {
		t.Helper()
		d, err := q.Receive(ctx, max, wait, vis)
		must(t, err)
		return d
	}

	t.Run("SendReceiveDelete", func(t *testing.T) {
		q := newQueue(t)
		must(t, q.Send(ctx, acs.Message{TaskID: "t1", Step: acs.TaskWaitingForSandbox}, 0))
		d := receive(t, q, 10, 2*time.Second, 30*time.Second)
		if len(d) != 1 || d[0].TaskID != "t1" || d[0].Step != acs.TaskWaitingForSandbox || d[0].ReceiveCount != 1 || d[0].Receipt == "" {
			t.Fatalf("deliveries %+v", d)
		}
		must(t, q.Delete(ctx, d[0].Receipt))
		must(t, q.Delete(ctx, d[0].Receipt)) // twice is fine
		if d := receive(t, q, 10, 300*time.Millisecond, time.Second); len(d) != 0 {
			t.Fatalf("deleted message delivered again: %+v", d)
		}
	})

	t.Run("InvisibleWhileReceivedThenRedelivered", func(t *testing.T) {
		q := newQueue(t)
		must(t, q.Send(ctx, acs.Message{TaskID: "t1"}, 0))
		first := receive(t, q, 1, 2*time.Second, time.Second)
		if len(first) != 1 {
			t.Fatal("no delivery")
		}
		if d := receive(t, q, 1, 200*time.Millisecond, time.Second); len(d) != 0 {
			t.Fatal("message visible during its visibility timeout")
		}
		again := receive(t, q, 1, 5*time.Second, 30*time.Second)
		if len(again) != 1 || again[0].TaskID != "t1" || again[0].ReceiveCount != 2 {
			t.Fatalf("redelivery %+v", again)
		}
		if again[0].Receipt == first[0].Receipt {
			t.Fatal("receipt must change on redelivery")
		}
		must(t, q.Delete(ctx, again[0].Receipt))
	})

	t.Run("SendDelay", func(t *testing.T) {
		q := newQueue(t)
		start := time.Now()
		must(t, q.Send(ctx, acs.Message{TaskID: "later"}, time.Second))
		if d := receive(t, q, 1, 300*time.Millisecond, time.Second); len(d) != 0 {
			t.Fatal("delayed message delivered early")
		}
		d := receive(t, q, 1, 5*time.Second, 30*time.Second)
		if len(d) != 1 || time.Since(start) < 900*time.Millisecond {
			t.Fatalf("delayed delivery %+v after %v", d, time.Since(start))
		}
	})

	t.Run("DelayRedelivers", func(t *testing.T) {
		q := newQueue(t)
		must(t, q.Send(ctx, acs.Message{TaskID: "poll"}, 0))
		d := receive(t, q, 1, 2*time.Second, 30*time.Second)
		must(t, q.Delay(ctx, d[0].Receipt, time.Second))
		if again := receive(t, q, 1, 300*time.Millisecond, 30*time.Second); len(again) != 0 {
			t.Fatal("delayed message visible too soon")
		}
		again := receive(t, q, 1, 5*time.Second, 30*time.Second)
		if len(again) != 1 || again[0].ReceiveCount != 2 {
			t.Fatalf("after delay %+v", again)
		}
	})

	t.Run("LongPollWakesOnSend", func(t *testing.T) {
		q := newQueue(t)
		go func() {
			time.Sleep(300 * time.Millisecond)
			q.Send(ctx, acs.Message{TaskID: "wake"}, 0)
		}()
		start := time.Now()
		d := receive(t, q, 1, 10*time.Second, 30*time.Second)
		if len(d) != 1 {
			t.Fatal("long poll returned nothing")
		}
		if time.Since(start) > 8*time.Second {
			t.Fatalf("long poll did not wake on send (%v)", time.Since(start))
		}
	})

	t.Run("MaxAndNoDoubleDelivery", func(t *testing.T) {
		q := newQueue(t)
		for i := 0; i < 15; i++ {
			must(t, q.Send(ctx, acs.Message{TaskID: fmt.Sprint("t", i)}, 0))
		}
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					d, err := q.Receive(ctx, 4, 500*time.Millisecond, 60*time.Second)
					if err != nil {
						t.Error(err)
						return
					}
					if len(d) == 0 {
						return
					}
					if len(d) > 4 {
						t.Errorf("received %d > max 4", len(d))
					}
					mu.Lock()
					for _, x := range d {
						got[x.TaskID]++
					}
					mu.Unlock()
					for _, x := range d {
						q.Delete(ctx, x.Receipt)
					}
				}
			}()
		}
		wg.Wait()
		var ids []string
		for id, n := range got {
			if n != 1 {
				t.Errorf("%s delivered %d times within its visibility timeout", id, n)
			}
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if len(ids) != 15 {
			t.Fatalf("received %d distinct of 15: %v", len(ids), ids)
		}
	})

	t.Run("ReceiveHonoursContext", func(t *testing.T) {
		q := newQueue(t)
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		d, err := q.Receive(cctx, 1, 20*time.Second, time.Second)
		if len(d) != 0 {
			t.Fatal("unexpected delivery")
		}
		if err == nil && time.Since(start) > 10*time.Second {
			t.Fatal("receive ignored its context")
		}
	})
}
