// Package localqueue is the embedded acs.Queue: messages persist in their own
// bbolt file, so queued start steps survive a restart of `acs serve`.
// Semantics follow SQS standard queues: at-least-once delivery, visibility
// timeouts, per-message receive counts and receipts that change on every
// delivery.
package localqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/shared/acs"
)

var bMessages = []byte("messages")

// record is a stored message; its JSON names are the queue file's format,
// apart from acs.Message's tags.
type record struct {
	Message      message `json:"m"`
	VisibleAt    int64   `json:"v"` // unix nanos
	ReceiveCount int     `json:"c"`
	Receipt      string  `json:"r,omitempty"`
	SentAt       int64   `json:"s"`
}

// message is the stored acs.Message (a field added to acs.Message fails to
// compile until it is added here).
type message struct {
	TaskID string              `json:"task_id"`
	Step   acs.StartTaskStatus `json:"step,omitempty"`
}

// Queue is an acs.Queue on a bbolt file.
type Queue struct {
	db  boltDB
	now func() time.Time

	mu      sync.Mutex
	changed chan struct{}
}

var _ acs.Queue = (*Queue)(nil)

// Open opens (creating) the queue file at path.
func Open(path string) (*Queue, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bMessages)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init queue: %w", err)
	}
	return &Queue{db: boltDB{db}, now: time.Now, changed: make(chan struct{})}, nil
}

// Close closes the file.
func (q *Queue) Close() error { return q.db.Close() }

// boltDB is the queue's bbolt file. Its Update reports a write that found
// the disk or quota full as acs.ErrStorageFull: nothing is stored, and the
// same write works once space is freed.
type boltDB struct{ *bolt.DB }

func (d boltDB) Update(fn func(*bolt.Tx) error) error {
	err := d.DB.Update(fn)
	if diskfull.Is(err) {
		return fmt.Errorf("queue %s: %w: %w", d.Path(), err, acs.ErrStorageFull)
	}
	return err
}

func (q *Queue) notify() {
	q.mu.Lock()
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

func (q *Queue) signal() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changed
}

// Send enqueues m, visible after delay.
func (q *Queue) Send(_ context.Context, m acs.Message, delay time.Duration) error {
	now := q.now()
	id := acs.NewID()
	err := q.db.Update(func(tx *bolt.Tx) error {
		raw, err := json.Marshal(record{Message: message(m), VisibleAt: now.Add(delay).UnixNano(), SentAt: now.UnixNano()})
		if err != nil {
			return err
		}
		return tx.Bucket(bMessages).Put([]byte(id), raw)
	})
	if err != nil {
		return fmt.Errorf("send message: %w", err)
	}
	q.notify()
	return nil
}

// Receive returns up to max visible messages, oldest first, waiting up to
// wait for the first.
func (q *Queue) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]acs.Delivery, error) {
	if max <= 0 {
		max = 1
	}
	deadline := q.now().Add(wait)
	for {
		sig := q.signal()
		out, nextVisible, err := q.take(max, visibility)
		if err != nil || len(out) > 0 {
			return out, err
		}
		remaining := deadline.Sub(q.now())
		if remaining <= 0 {
			return nil, nil
		}
		if nextVisible > 0 {
			if d := time.Until(time.Unix(0, nextVisible)); d < remaining {
				remaining = max64(d, time.Millisecond)
			}
		}
		t := time.NewTimer(remaining)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-sig:
		case <-t.C:
		}
		t.Stop()
	}
}

func max64(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// take claims visible messages; it also reports the earliest future
// visibility (unix nanos, 0 when none) so Receive can sleep until then.
func (q *Queue) take(max int, visibility time.Duration) ([]acs.Delivery, int64, error) {
	var out []acs.Delivery
	var nextVisible int64
	now := q.now()
	err := q.db.Update(func(tx *bolt.Tx) error {
		out, nextVisible = nil, 0
		b := tx.Bucket(bMessages)
		type cand struct {
			id  string
			rec record
		}
		var cands []cand
		err := b.ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if r.VisibleAt <= now.UnixNano() {
				cands = append(cands, cand{string(k), r})
			} else if nextVisible == 0 || r.VisibleAt < nextVisible {
				nextVisible = r.VisibleAt
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Oldest first.
		for i := 1; i < len(cands); i++ {
			for j := i; j > 0 && cands[j].rec.SentAt < cands[j-1].rec.SentAt; j-- {
				cands[j], cands[j-1] = cands[j-1], cands[j]
			}
		}
		for _, c := range cands {
			if len(out) == max {
				break
			}
			c.rec.ReceiveCount++
			c.rec.VisibleAt = now.Add(visibility).UnixNano()
			c.rec.Receipt = c.id + ":" + strconv.Itoa(c.rec.ReceiveCount)
			raw, err := json.Marshal(c.rec)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(c.id), raw); err != nil {
				return err
			}
			out = append(out, acs.Delivery{Message: acs.Message(c.rec.Message), Receipt: c.rec.Receipt, ReceiveCount: c.rec.ReceiveCount})
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("receive messages: %w", err)
	}
	return out, nextVisible, nil
}

// update applies fn to the message a receipt names, if the receipt is the
// message's latest (a stale receipt is ignored, as SQS does).
func (q *Queue) update(receipt string, fn func(b *bolt.Bucket, id string, r *record) error) error {
	id, _, ok := strings.Cut(receipt, ":")
	if !ok {
		return fmt.Errorf("receipt %q: %w", receipt, acs.ErrInvalid)
	}
	return q.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMessages)
		raw := b.Get([]byte(id))
		if raw == nil {
			return nil
		}
		var r record
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.Receipt != receipt {
			return nil
		}
		return fn(b, id, &r)
	})
}

// Delete acknowledges a delivery.
func (q *Queue) Delete(_ context.Context, receipt string) error {
	err := q.update(receipt, func(b *bolt.Bucket, id string, _ *record) error { return b.Delete([]byte(id)) })
	if err != nil {
		return fmt.Errorf("delete message: %w", err)
	}
	return nil
}

// Delay makes a delivered message visible again after d.
func (q *Queue) Delay(_ context.Context, receipt string, d time.Duration) error {
	err := q.update(receipt, func(b *bolt.Bucket, id string, r *record) error {
		r.VisibleAt = q.now().Add(d).UnixNano()
		raw, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), raw)
	})
	if err != nil {
		return fmt.Errorf("delay message: %w", err)
	}
	q.notify()
	return nil
}

// Len returns how many messages are queued (visible or not).
func (q *Queue) Len() int {
	n := 0
	_ = q.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bMessages).Stats().KeyN
		return nil
	})
	return n
}
