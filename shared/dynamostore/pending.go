package dynamostore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// PendingRetention is how long a queued message is kept (its expires_at):
// messages wait for a conversation that is starting, minutes at most.
const PendingRetention = 7 * 24 * time.Hour

const (
	aSeq       = "seq"
	sMessage   = "M#" // + 16 hex digits of the message's sequence number
	sQueueHead = "#"  // the queue's counter: version and last sequence number
)

func seqKey(n int64) string { return sMessage + fmt.Sprintf("%016x", uint64(n)) }

// queue is a pending-message partition as read: its counter (nil when
// absent), its messages in queue order and the highest sequence number of
// any item (expired ones included).
type queue struct {
	head   item
	msgs   []item
	maxSeq int64
}

func (s *Store) readQueue(ctx context.Context, k string) (queue, error) {
	var q queue
	items, err := s.collect(ctx, &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pPending + k, consistent: true}, -1, "")
	if err != nil {
		return q, err
	}
	for _, it := range items {
		sk := str(it, aSK)
		switch {
		case sk == sQueueHead:
			q.head = it
			q.maxSeq = max(q.maxSeq, num(it, aSeq))
		case strings.HasPrefix(sk, sMessage):
			q.msgs = append(q.msgs, it)
			q.maxSeq = max(q.maxSeq, num(it, aSeq))
		}
	}
	return q, nil
}

// live returns the messages not expired.
func (s *Store) live(q queue) []item {
	var out []item
	for _, it := range q.msgs {
		if !s.expired(it) {
			out = append(out, it)
		}
	}
	return out
}

// AddPendingMessage implements acs.Store. The queue is read (one Query of
// its partition), then the message is written with the queue's counter in
// one transaction on the condition that the counter's version did not
// change: concurrent adds serialise, so they never exceed max and each
// position is exact.
func (s *Store) AddPendingMessage(ctx context.Context, m acs.PendingMessage, max int) (int, error) {
	if m.Key == "" {
		return 0, fmt.Errorf("pending message without a key: %w", acs.ErrInvalid)
	}
	if m.ID == "" {
		return 0, fmt.Errorf("pending message without an id: %w", acs.ErrInvalid)
	}
	raw, err := storerecord.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("encode message %s: %w", m.ID, err)
	}
	pos := 0
	err = s.retry(ctx, "queue message for "+m.Key, func() error {
		q, err := s.readQueue(ctx, m.Key)
		if err != nil {
			return err
		}
		live := s.live(q)
		for i, it := range live {
			if str(it, aID) == m.ID {
				pos = i + 1
				return nil
			}
		}
		if max > 0 && len(live) >= max {
			return fmt.Errorf("%d messages already queued for %s: %w", len(live), m.Key, acs.ErrCapacity)
		}
		seq := q.maxSeq + 1
		exp := s.now().Add(PendingRetention)
		msg := key(pPending+m.Key, seqKey(seq))
		msg[aData], msg[aID], msg[aSeq], msg[aExpires] = bv(raw), sv(m.ID), nv(seq), nv(exp.Unix())
		e1 := newExpr()
		var cond string
		v := int64(0)
		if q.head == nil {
			cond = notExists(e1)
		} else {
			v = num(q.head, aVersion)
			cond = versionIs(e1, v)
		}
		head := condUpdate(key(pPending+m.Key, sQueueHead), fmt.Sprintf("SET %s = %s, %s = %s, %s = %s",
			e1.n(aVersion), e1.v(nv(v+1)), e1.n(aSeq), e1.v(nv(seq)), e1.n(aExpires), e1.v(nv(exp.Add(24*time.Hour).Unix()))), cond, e1)
		e2 := newExpr()
		err = s.transact(ctx, []types.TransactWriteItem{head, condPut(msg, notExists(e2), e2)})
		if lostRace(err) {
			return errRetry
		}
		if err == nil {
			pos = len(live) + 1
		}
		return err
	})
	return pos, err
}

// ListPendingMessages implements acs.Store: one Query of the partition.
func (s *Store) ListPendingMessages(ctx context.Context, k string) ([]acs.PendingMessage, error) {
	if k == "" {
		return nil, nil
	}
	q, err := s.readQueue(ctx, k)
	if err != nil {
		return nil, err
	}
	var out []acs.PendingMessage
	for _, it := range s.live(q) {
		var m acs.PendingMessage
		if err := decode(it, &m, "pending message for", k); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// DeletePendingMessage implements acs.Store: the message and a new counter
// version in one transaction.
func (s *Store) DeletePendingMessage(ctx context.Context, k, id string) error {
	if k == "" {
		return nil
	}
	return s.retry(ctx, "delete pending message "+id, func() error {
		q, err := s.readQueue(ctx, k)
		if err != nil {
			return err
		}
		var msg item
		for _, it := range q.msgs {
			if str(it, aID) == id {
				msg = it
				break
			}
		}
		if msg == nil {
			return nil
		}
		mk := key(pPending+k, str(msg, aSK))
		if q.head == nil {
			_, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: mk})
			return err
		}
		e1, e2 := newExpr(), newExpr()
		err = s.transact(ctx, []types.TransactWriteItem{
			condDelete(mk, fmt.Sprintf("attribute_exists(%s)", e1.n(aPK)), e1),
			condUpdate(key(pPending+k, sQueueHead), fmt.Sprintf("ADD %s %s", e2.n(aVersion), e2.v(nv(1))),
				fmt.Sprintf("attribute_exists(%s)", e2.n(aPK)), e2)})
		if lostRace(err) {
			return errRetry
		}
		return err
	})
}
