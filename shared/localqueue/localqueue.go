// Package localqueue is the embedded acs.Queue: messages persist in their own
// bbolt file, so queued start steps survive a restart of `acs serve`.
// Semantics follow SQS standard queues: at-least-once delivery, visibility
// timeouts, per-message receive counts and receipts that change on every
// delivery.
package localqueue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

	takeMu  sync.Mutex
	waiters []*waiter // receivers waiting, longest first (under mu)

	ackMu    sync.Mutex
	acks     map[string]string // message id → receipt: deleted, not yet written (see Delete)
	ackTimer *time.Timer       // writes acks when no other write does (nil: none due)
	closed   bool
}

// AckWriteDelay bounds how long an acknowledgement (Delete) waits for
// another write to carry it before it is written on its own.
const AckWriteDelay = 250 * time.Millisecond

var _ acs.Queue = (*Queue)(nil)

// Open opens (creating) the queue file at path.
func Open(path string) (*Queue, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
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
	return &Queue{db: boltDB{db}, now: time.Now, changed: make(chan struct{}), acks: map[string]string{}}, nil
}

// Close writes the acknowledgements not yet written and closes the file.
func (q *Queue) Close() error {
	q.ackMu.Lock()
	q.closed = true
	if q.ackTimer != nil {
		q.ackTimer.Stop()
		q.ackTimer = nil
	}
	pending := len(q.acks) > 0
	q.ackMu.Unlock()
	var err error
	if pending {
		err = q.write(func(*bolt.Tx) error { return nil })
	}
	return errors.Join(err, q.db.Close())
}

// write runs fn in a write transaction that first applies the
// acknowledgements not yet written (each deletes its message if its
// receipt is still the message's latest). They are written with it, or,
// when the transaction fails, stay for the next write.
func (q *Queue) write(fn func(*bolt.Tx) error) error {
	q.ackMu.Lock()
	acks := make(map[string]string, len(q.acks))
	for id, r := range q.acks {
		acks[id] = r
	}
	q.ackMu.Unlock()
	err := q.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMessages)
		for id, receipt := range acks {
			if raw := b.Get([]byte(id)); raw != nil {
				var r record
				if err := json.Unmarshal(raw, &r); err != nil {
					return err
				}
				if r.Receipt == receipt {
					if err := b.Delete([]byte(id)); err != nil {
						return err
					}
				}
			}
		}
		return fn(tx)
	})
	if err == nil && len(acks) > 0 {
		q.ackMu.Lock()
		for id, r := range acks {
			if q.acks[id] == r {
				delete(q.acks, id)
			}
		}
		q.ackMu.Unlock()
	}
	return err
}

// acked reports whether the delivery of message id with this receipt was
// deleted (its deletion not written yet).
func (q *Queue) acked(id, receipt string) bool {
	q.ackMu.Lock()
	defer q.ackMu.Unlock()
	r, ok := q.acks[id]
	return ok && r == receipt
}

// writeAcks writes the acknowledgements no other write carried (the
// timer Delete sets); a failed write is tried again later.
func (q *Queue) writeAcks() {
	q.ackMu.Lock()
	q.ackTimer = nil
	due := len(q.acks) > 0 && !q.closed
	q.ackMu.Unlock()
	if !due {
		return
	}
	if err := q.write(func(*bolt.Tx) error { return nil }); err != nil {
		slog.Warn("localqueue: write acknowledgements; retrying", "error", err)
		q.ackMu.Lock()
		if q.ackTimer == nil && !q.closed {
			q.ackTimer = time.AfterFunc(AckWriteDelay, q.writeAcks)
		}
		q.ackMu.Unlock()
	}
}

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

// Send enqueues m, visible after delay. A message due now, sent while a
// receiver waits with nothing to receive, is handed to that receiver:
// stored already received by it (receive count 1, invisible for its
// visibility timeout), in the same write, so the hand-off costs no second
// durable write.
func (q *Queue) Send(_ context.Context, m acs.Message, delay time.Duration) error {
	now := q.now()
	id := acs.NewID()
	rec := record{Message: message(m), VisibleAt: now.Add(delay).UnixNano(), SentAt: now.UnixNano()}
	var w *waiter
	if delay <= 0 {
		w = q.popWaiter()
	}
	if w != nil {
		rec.ReceiveCount, rec.VisibleAt, rec.Receipt = 1, now.Add(w.visibility).UnixNano(), id+":1"
	}
	err := q.write(func(tx *bolt.Tx) error {
		raw, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tx.Bucket(bMessages).Put([]byte(id), raw)
	})
	if w != nil {
		if err != nil {
			w.got <- nil // the receiver goes on waiting
		} else {
			w.got <- &acs.Delivery{Message: m, Receipt: rec.Receipt, ReceiveCount: 1}
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("send message: %w", err)
	}
	q.notify()
	return nil
}

// waiter is a receiver waiting with nothing to receive; a send may hand
// it a message (got receives it, or nil when the hand-off failed).
type waiter struct {
	visibility time.Duration
	got        chan *acs.Delivery
}

// popWaiter takes the longest-waiting receiver, or nil.
func (q *Queue) popWaiter() *waiter {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 {
		return nil
	}
	w := q.waiters[0]
	q.waiters = q.waiters[1:]
	return w
}

// addWaiter registers w; removeWaiter unregisters it, reporting false when
// a send took it first (it then receives on w.got).
func (q *Queue) addWaiter(w *waiter) {
	q.mu.Lock()
	q.waiters = append(q.waiters, w)
	q.mu.Unlock()
}

func (q *Queue) removeWaiter(w *waiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiters, w)
	if i < 0 {
		return false
	}
	q.waiters = slices.Delete(q.waiters, i, i+1)
	return true
}

// Receive returns up to max visible messages, oldest first, waiting up to
// wait for the first. While it waits, a message sent is handed to it (see
// Send).
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
		w := &waiter{visibility: visibility, got: make(chan *acs.Delivery, 1)}
		q.addWaiter(w)
		t := time.NewTimer(remaining)
		var handed *acs.Delivery
		answered := false
		select {
		case <-ctx.Done():
		case <-sig:
		case <-t.C:
		case handed = <-w.got:
			answered = true
		}
		t.Stop()
		if !answered && !q.removeWaiter(w) {
			// A send took this receiver meanwhile: its message is stored
			// as received by it.
			handed = <-w.got
		}
		if handed != nil {
			return []acs.Delivery{*handed}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
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
// A look that finds nothing visible is a read: only a claim writes (and
// waits for the disk), so receivers woken by a send that another one
// claims cost no durable write.
func (q *Queue) take(max int, visibility time.Duration) ([]acs.Delivery, int64, error) {
	// One receiver looks and claims at a time: those woken with it find
	// the message claimed by a read, not by a write that rolls back.
	q.takeMu.Lock()
	defer q.takeMu.Unlock()
	now := q.now()
	var visible bool
	var nextVisible int64
	err := q.db.View(func(tx *bolt.Tx) error {
		cands, next, err := candidates(tx.Bucket(bMessages), now)
		for _, c := range cands {
			visible = visible || !q.acked(c.id, c.rec.Receipt)
		}
		nextVisible = next
		return err
	})
	if err != nil || !visible {
		if err != nil {
			err = fmt.Errorf("receive messages: %w", err)
		}
		return nil, nextVisible, err
	}
	var out []acs.Delivery
	err = q.write(func(tx *bolt.Tx) error {
		out = nil
		b := tx.Bucket(bMessages)
		cands, next, err := candidates(b, now)
		if err != nil {
			return err
		}
		nextVisible = next
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
		if len(out) == 0 {
			// Another receiver claimed them first: roll back, unwritten.
			return errClaimedElsewhere
		}
		return nil
	})
	if errors.Is(err, errClaimedElsewhere) {
		return nil, nextVisible, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("receive messages: %w", err)
	}
	return out, nextVisible, nil
}

// errClaimedElsewhere rolls back a claim that found nothing left to claim.
var errClaimedElsewhere = errors.New("claimed by another receiver")

// candidate is a stored message visible now.
type candidate struct {
	id  string
	rec record
}

// candidates returns the messages visible at now, oldest first, and the
// earliest visibility after now (unix nanos, 0 when none).
func candidates(b *bolt.Bucket, now time.Time) ([]candidate, int64, error) {
	var cands []candidate
	var nextVisible int64
	err := b.ForEach(func(k, v []byte) error {
		var r record
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if r.VisibleAt <= now.UnixNano() {
			cands = append(cands, candidate{string(k), r})
		} else if nextVisible == 0 || r.VisibleAt < nextVisible {
			nextVisible = r.VisibleAt
		}
		return nil
	})
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(a.rec.SentAt, b.rec.SentAt) })
	return cands, nextVisible, err
}

// update applies fn to the message a receipt names, if the receipt is the
// message's latest (a stale receipt is ignored, as SQS does).
func (q *Queue) update(receipt string, fn func(b *bolt.Bucket, id string, r *record) error) error {
	id, _, ok := strings.Cut(receipt, ":")
	if !ok {
		return fmt.Errorf("receipt %q: %w", receipt, acs.ErrInvalid)
	}
	return q.write(func(tx *bolt.Tx) error {
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

// Delete acknowledges a delivery. The message is gone at once for every
// receiver; its deletion is written with the queue's next write (a send,
// a claim, a delay), or on its own after AckWriteDelay when none comes, or
// by Close: an acknowledgement costs no durable write of its own. A crash
// before it is written delivers the message again once its visibility
// timeout ends, which at-least-once delivery allows (a start's worker
// finds its task finished and deletes it again).
func (q *Queue) Delete(_ context.Context, receipt string) error {
	id, _, ok := strings.Cut(receipt, ":")
	if !ok {
		return fmt.Errorf("delete message: receipt %q: %w", receipt, acs.ErrInvalid)
	}
	q.ackMu.Lock()
	defer q.ackMu.Unlock()
	if q.closed {
		return fmt.Errorf("delete message: %w", bolt.ErrDatabaseNotOpen)
	}
	q.acks[id] = receipt
	if q.ackTimer == nil {
		q.ackTimer = time.AfterFunc(AckWriteDelay, q.writeAcks)
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

// Len returns how many messages are queued (visible or not; deleted ones
// are not, written or not).
func (q *Queue) Len() int {
	n := 0
	_ = q.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMessages)
		n = b.Stats().KeyN
		q.ackMu.Lock()
		defer q.ackMu.Unlock()
		for id, receipt := range q.acks {
			var r record
			if raw := b.Get([]byte(id)); raw != nil && json.Unmarshal(raw, &r) == nil && r.Receipt == receipt {
				n--
			}
		}
		return nil
	})
	return n
}
