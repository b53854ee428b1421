package lambdatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// SQSOptions configures [PollSQS].
type SQSOptions struct {
	// Function receives the batches.
	Function *Function
	// Receive returns the next messages (possibly none). It should wait a
	// little (long polling) when the queue is empty; PollSQS also pauses
	// IdleDelay after an empty receive.
	Receive func(ctx context.Context) ([]events.SQSMessage, error)
	// Delete deletes one message by receipt handle.
	Delete func(ctx context.Context, receiptHandle string) error
	// BatchSize is the most records per invocation; larger receives are
	// split. Default 10.
	BatchSize int
	// QueueARN fills eventSourceARN on records that have none. Default
	// arn:aws:sqs:us-east-1:000000000000:queue.
	QueueARN string
	// IdleDelay is the pause after an empty or failed receive. Default 50ms.
	IdleDelay time.Duration
}

// SQSStats counts what an SQSSource did.
type SQSStats struct {
	// Invocations counts batches sent to the function.
	Invocations int
	// Deleted counts messages deleted after successful processing.
	Deleted int
	// Failed counts messages left on the queue: reported in
	// batchItemFailures, or part of a batch that failed as a whole.
	Failed int
	// FunctionErrors counts invocations that failed (function error, crash,
	// timeout), which leave the whole batch on the queue.
	FunctionErrors int
	// ReceiveErrors and DeleteErrors count failed Receive and Delete calls.
	ReceiveErrors int
	DeleteErrors  int
}

// SQSSource is a running SQS event-source mapping, started by [PollSQS].
type SQSSource struct {
	opts   SQSOptions
	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	stats SQSStats
}

// PollSQS starts an event-source-mapping loop in the background: it
// receives messages, invokes opts.Function with an events.SQSEvent of at
// most BatchSize records, and deletes the messages the function processed.
// The function's response is read as an events.SQSEventResponse
// (ReportBatchItemFailures): messages listed in batchItemFailures stay on
// the queue; an empty or null response means every message succeeded. A
// function error, crash or timeout, an invalid response, or a failure entry
// with an empty or unknown itemIdentifier fails the whole batch (nothing is
// deleted), as Lambda does.
//
// The loop runs until ctx ends or Stop is called; t.Cleanup stops it.
func PollSQS(ctx context.Context, t testing.TB, opts SQSOptions) *SQSSource {
	t.Helper()
	if opts.Function == nil || opts.Receive == nil || opts.Delete == nil {
		t.Fatalf("lambdatest.PollSQS: Function, Receive and Delete are required")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 10
	}
	if opts.QueueARN == "" {
		opts.QueueARN = fmt.Sprintf("arn:aws:sqs:%s:%s:queue", Region, AccountID)
	}
	if opts.IdleDelay <= 0 {
		opts.IdleDelay = 50 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &SQSSource{opts: opts, t: t, cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	t.Cleanup(s.Stop)
	return s
}

// Stop ends the loop and returns once it has exited. An invocation in
// progress is abandoned (its batch is not deleted).
func (s *SQSSource) Stop() {
	s.cancel()
	<-s.done
}

// Wait returns once the loop has exited (after ctx ended or Stop).
func (s *SQSSource) Wait() { <-s.done }

// Stats returns a snapshot of the counters.
func (s *SQSSource) Stats() SQSStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *SQSSource) count(fn func(*SQSStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.stats)
}

func (s *SQSSource) run(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		msgs, err := s.opts.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.count(func(st *SQSStats) { st.ReceiveErrors++ })
			s.t.Logf("lambdatest sqs: receive: %v", err)
		}
		if len(msgs) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.opts.IdleDelay):
			}
			continue
		}
		for len(msgs) > 0 && ctx.Err() == nil {
			n := min(len(msgs), s.opts.BatchSize)
			s.process(ctx, msgs[:n])
			msgs = msgs[n:]
		}
	}
}

// process invokes the function with one batch and deletes what succeeded.
func (s *SQSSource) process(ctx context.Context, batch []events.SQSMessage) {
	records := make([]events.SQSMessage, len(batch))
	for i, m := range batch {
		if m.EventSource == "" {
			m.EventSource = "aws:sqs"
		}
		if m.EventSourceARN == "" {
			m.EventSourceARN = s.opts.QueueARN
		}
		if m.AWSRegion == "" {
			m.AWSRegion = Region
		}
		records[i] = m
	}
	s.count(func(st *SQSStats) { st.Invocations++ })
	var resp []byte
	payload, err := json.Marshal(events.SQSEvent{Records: records})
	if err == nil {
		resp, err = s.opts.Function.Invoke(ctx, payload)
	}
	if err != nil {
		s.count(func(st *SQSStats) { st.FunctionErrors++; st.Failed += len(batch) })
		if ctx.Err() == nil {
			s.t.Logf("lambdatest sqs: batch of %d failed, nothing deleted: %v", len(batch), err)
		}
		return
	}
	failed, err := batchItemFailures(resp, records)
	if err != nil {
		s.count(func(st *SQSStats) { st.Failed += len(batch) })
		s.t.Logf("lambdatest sqs: batch of %d treated as failed, nothing deleted: %v", len(batch), err)
		return
	}
	for _, m := range records {
		if failed[m.MessageId] {
			s.count(func(st *SQSStats) { st.Failed++ })
			continue
		}
		if err := s.opts.Delete(ctx, m.ReceiptHandle); err != nil {
			s.count(func(st *SQSStats) { st.DeleteErrors++ })
			if ctx.Err() != nil {
				return
			}
			s.t.Logf("lambdatest sqs: delete message %s: %v", m.MessageId, err)
			continue
		}
		s.count(func(st *SQSStats) { st.Deleted++ })
	}
}

// batchItemFailures reads an events.SQSEventResponse and returns the failed
// message ids. It returns an error when Lambda would treat the whole batch
// as failed.
func batchItemFailures(resp []byte, records []events.SQSMessage) (map[string]bool, error) {
	resp = bytes.TrimSpace(resp)
	if len(resp) == 0 || string(resp) == "null" {
		return nil, nil
	}
	var r struct {
		BatchItemFailures []map[string]*string `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil, fmt.Errorf("invalid SQSEventResponse %q: %w", truncate(resp, 200), err)
	}
	ids := make(map[string]bool, len(records))
	for _, m := range records {
		ids[m.MessageId] = true
	}
	failed := map[string]bool{}
	for _, f := range r.BatchItemFailures {
		id := f["itemIdentifier"]
		switch {
		case id == nil || *id == "":
			return nil, errors.New("batchItemFailures entry without itemIdentifier")
		case !ids[*id]:
			return nil, fmt.Errorf("batchItemFailures names unknown message %q", *id)
		}
		failed[*id] = true
	}
	return failed, nil
}
