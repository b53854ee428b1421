package lambdatest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/acs-project/acs/internal/testwait"
)

// memQueue is an in-memory queue: a received message is in flight (not
// received again) until it is deleted; nothing ever becomes visible again.
type memQueue struct {
	mu       sync.Mutex
	visible  []events.SQSMessage
	inflight map[string]events.SQSMessage // by receipt handle
	deleted  []string                     // message ids
}

func newMemQueue(bodies ...string) *memQueue {
	q := &memQueue{inflight: map[string]events.SQSMessage{}}
	for i, b := range bodies {
		q.visible = append(q.visible, events.SQSMessage{
			MessageId:     fmt.Sprintf("m%d", i+1),
			ReceiptHandle: fmt.Sprintf("rh-%d", i+1),
			Body:          b,
		})
	}
	return q
}

func (q *memQueue) receive(ctx context.Context) ([]events.SQSMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.visible), 10)
	out := q.visible[:n:n]
	q.visible = q.visible[n:]
	for _, m := range out {
		q.inflight[m.ReceiptHandle] = m
	}
	return out, nil
}

func (q *memQueue) delete(ctx context.Context, receiptHandle string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.inflight[receiptHandle]
	if !ok {
		return fmt.Errorf("unknown receipt handle %q", receiptHandle)
	}
	delete(q.inflight, receiptHandle)
	q.deleted = append(q.deleted, m.MessageId)
	return nil
}

func (q *memQueue) deletedIDs() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Sorted(slices.Values(q.deleted))
}

func TestSQSPartialBatchFailure(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{Name: "worker"})
	q := newMemQueue("ok-1", "fail-2", "ok-3", "fail-4", "ok-5")
	src := PollSQS(t.Context(), t, SQSOptions{Function: f, Receive: q.receive, Delete: q.delete, BatchSize: 3})
	testwait.For(t, 10*time.Second, "two batches", func() bool { s := src.Stats(); return s.Invocations == 2 && s.Deleted+s.Failed == 5 })
	src.Stop()
	if got, want := q.deletedIDs(), []string{"m1", "m3", "m5"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	if s := src.Stats(); s.Deleted != 3 || s.Failed != 2 || s.FunctionErrors != 0 {
		t.Errorf("stats = %+v", s)
	}
}

func TestSQSFunctionCrashDeletesNothing(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{Name: "crashy"})
	q := newMemQueue("ok-1", "crash")
	src := PollSQS(t.Context(), t, SQSOptions{Function: f, Receive: q.receive, Delete: q.delete})
	testwait.For(t, 10*time.Second, "the failed batch", func() bool { return src.Stats().FunctionErrors == 1 })
	src.Stop()
	if got := q.deletedIDs(); len(got) != 0 {
		t.Errorf("deleted %v after a crash, want nothing", got)
	}
	if f.Restarts() != 1 {
		t.Errorf("Restarts() = %d, want 1", f.Restarts())
	}
}

func TestBatchItemFailures(t *testing.T) {
	t.Parallel()
	records := []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}}
	for _, tc := range []struct {
		resp    string
		failed  []string
		invalid bool
	}{
		{``, nil, false},
		{`null`, nil, false},
		{`{}`, nil, false},
		{`{"batchItemFailures":null}`, nil, false},
		{`{"batchItemFailures":[]}`, nil, false},
		{`{"batchItemFailures":[{"itemIdentifier":"b"}]}`, []string{"b"}, false},
		{`{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, true},
		{`{"batchItemFailures":[{"itemIdentifier":null}]}`, nil, true},
		{`{"batchItemFailures":[{"id":"a"}]}`, nil, true},
		{`{"batchItemFailures":[{"itemIdentifier":"zzz"}]}`, nil, true},
		{`"not an object"`, nil, true},
	} {
		failed, err := batchItemFailures([]byte(tc.resp), records)
		if (err != nil) != tc.invalid {
			t.Errorf("%s: err = %v, want invalid=%v", tc.resp, err, tc.invalid)
			continue
		}
		var got []string
		for id := range failed {
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.failed) {
			t.Errorf("%s: failed = %v, want %v", tc.resp, got, tc.failed)
		}
	}
}
