package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
)

// ---- events

type storedEvent struct {
	Kind   string          `json:"k"`
	Source string          `json:"s"`
	Text   string          `json:"t,omitempty"`
	JSON   json.RawMessage `json:"j"`
}

func eventKey(ts time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(ts.UnixMicro())+1<<63)
	return append(k, id...)
}

// PutEvents implements acs.Store.
func (s *Store) PutEvents(_ context.Context, convID string, evs []acs.StoredEvent) (int, error) {
	added := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		added = 0
		eb, err := tx.Bucket(bEvents).CreateBucketIfNotExists([]byte(convID))
		if err != nil {
			return err
		}
		ib, err := tx.Bucket(bEventIDs).CreateBucketIfNotExists([]byte(convID))
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.ID == "" {
				return fmt.Errorf("event without id: %w", acs.ErrInvalid)
			}
			if ib.Get([]byte(ev.ID)) != nil {
				continue
			}
			raw, err := marshalNoEscape(storedEvent{Kind: ev.Kind, Source: ev.Source, Text: ev.Text, JSON: ev.JSON})
			if err != nil {
				return err
			}
			k := eventKey(ev.Timestamp, ev.ID)
			if err := eb.Put(k, raw); err != nil {
				return err
			}
			if err := ib.Put([]byte(ev.ID), k); err != nil {
				return err
			}
			added++
		}
		return nil
	})
	return added, err
}

func matchEvent(f *acs.EventFilter, body string, e *storedEvent) bool {
	return (f.Kind == "" || e.Kind == f.Kind) && (f.Source == "" || e.Source == f.Source) &&
		(body == "" || strings.Contains(e.Text, body))
}

// SearchEvents implements acs.Store.
func (s *Store) SearchEvents(_ context.Context, convID string, q acs.EventQuery) (acs.Page[[]byte], error) {
	var page acs.Page[[]byte]
	body := strings.ToLower(q.Body)
	limit := clamp(q.Limit)
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		if eb == nil {
			if q.PageToken != "" {
				return fmt.Errorf("page token: %w", acs.ErrInvalid)
			}
			return nil
		}
		c := eb.Cursor()
		var lo, hi []byte
		if q.TimestampGTE != nil {
			lo = eventKey(*q.TimestampGTE, "")
		}
		if q.TimestampLT != nil {
			hi = eventKey(*q.TimestampLT, "")
		}
		var k, v []byte
		if q.PageToken != "" {
			start, err := decodeToken(q.PageToken, tagEvents, nil)
			if err != nil || len(start) < 8 {
				return fmt.Errorf("page token: %w", acs.ErrInvalid)
			}
			k, v = c.Seek(start)
			if q.Desc && (k == nil || !bytes.Equal(k, start)) {
				if k == nil {
					k, v = c.Last()
				} else {
					k, v = c.Prev()
				}
			}
		} else if q.Desc {
			if hi != nil {
				k, v = c.Seek(hi)
				if k == nil {
					k, v = c.Last()
				} else {
					k, v = c.Prev()
				}
			} else {
				k, v = c.Last()
			}
		} else if lo != nil {
			k, v = c.Seek(lo)
		} else {
			k, v = c.First()
		}
		step := c.Next
		if q.Desc {
			step = c.Prev
		}
		for ; k != nil; k, v = step() {
			if lo != nil && bytes.Compare(k, lo) < 0 {
				if q.Desc {
					break
				}
				continue
			}
			if hi != nil && bytes.Compare(k, hi) >= 0 {
				if !q.Desc {
					break
				}
				continue
			}
			var e storedEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if !matchEvent(&q.EventFilter, body, &e) {
				continue
			}
			if len(page.Items) == limit {
				page.Next = encodeToken(tagEvents, k)
				break
			}
			page.Items = append(page.Items, append([]byte(nil), e.JSON...))
		}
		return nil
	})
	return page, err
}

// CountEvents implements acs.Store.
func (s *Store) CountEvents(_ context.Context, convID string, f acs.EventFilter) (int, error) {
	n := 0
	body := strings.ToLower(f.Body)
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		if eb == nil {
			return nil
		}
		return eb.ForEach(func(k, v []byte) error {
			ts := time.UnixMicro(int64(binary.BigEndian.Uint64(k[:8]) - 1<<63))
			if !inRange(ts, f.TimestampGTE, f.TimestampLT) {
				return nil
			}
			var e storedEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if matchEvent(&f, body, &e) {
				n++
			}
			return nil
		})
	})
	return n, err
}

// GetEvents implements acs.Store.
func (s *Store) GetEvents(_ context.Context, convID string, ids []string) ([][]byte, error) {
	out := make([][]byte, len(ids))
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		ib := tx.Bucket(bEventIDs).Bucket([]byte(convID))
		if eb == nil || ib == nil {
			return nil
		}
		for i, id := range ids {
			k := ib.Get([]byte(id))
			if k == nil {
				continue
			}
			var e storedEvent
			if err := json.Unmarshal(eb.Get(k), &e); err != nil {
				return err
			}
			out[i] = append([]byte(nil), e.JSON...)
		}
		return nil
	})
	return out, err
}

// DeleteEvents implements acs.Store.
func (s *Store) DeleteEvents(_ context.Context, convID string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bEvents, bEventIDs} {
			if err := tx.Bucket(b).DeleteBucket([]byte(convID)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	})
}

func inRange(t time.Time, gte, lt *time.Time) bool {
	return (gte == nil || !t.Before(*gte)) && (lt == nil || t.Before(*lt))
}
