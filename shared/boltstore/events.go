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

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
)

// ---- events

type storedEvent struct {
	Kind   string          `json:"k"`
	Source string          `json:"s"`
	Text   string          `json:"t,omitempty"`
	JSON   json.RawMessage `json:"j"`
}

// appendJSON appends e as encoding/json encodes it without HTML escaping,
// byte for byte, without reflection. It fails on invalid e.JSON.
func (e *storedEvent) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"k":`...)
	b = strictjson.AppendString(b, e.Kind)
	b = append(b, `,"s":`...)
	b = strictjson.AppendString(b, e.Source)
	if e.Text != "" {
		b = append(b, `,"t":`...)
		b = strictjson.AppendString(b, e.Text)
	}
	b = append(b, `,"j":`...)
	if e.JSON == nil {
		return append(b, "null}"...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, e.JSON); err != nil {
		return nil, fmt.Errorf("event json: %w", err)
	}
	return append(buf.Bytes(), '}'), nil
}

func eventKey(ts time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(ts.UnixMicro())+1<<63)
	return append(k, id...)
}

// The text index: each conversation's events that have searchable text (its
// messages) also have an entry in bEventText, under the event's key, holding
// that text. A body filter walks these entries instead of the events, and a
// search page examines at most bodyScanEvents of them or, once it has read
// bodyScanBytes of text, none more. A page can thus end short of its limit
// (even empty) with a token to go on: its cost does not grow with the log.
var (
	bodyScanEvents = 2000
	bodyScanBytes  = 1 << 20
)

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
		var tb *bolt.Bucket
		for _, ev := range evs {
			if ev.ID == "" {
				return fmt.Errorf("event without id: %w", acs.ErrInvalid)
			}
			if ib.Get([]byte(ev.ID)) != nil {
				continue
			}
			se := storedEvent{Kind: ev.Kind, Source: ev.Source, Text: ev.Text, JSON: ev.JSON}
			// A value put must stay valid until the commit: one buffer each.
			raw, err := se.appendJSON(make([]byte, 0, 32+len(ev.Kind)+len(ev.Text)+len(ev.JSON)))
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
			if ev.Text != "" {
				if tb == nil {
					if tb, err = tx.Bucket(bEventText).CreateBucketIfNotExists([]byte(convID)); err != nil {
						return err
					}
				}
				if err := tb.Put(k, []byte(ev.Text)); err != nil {
					return err
				}
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

// eventRange is the key range [lo, hi) of f's time filters (nil: open).
func eventRange(f *acs.EventFilter) (lo, hi []byte) {
	if f.TimestampGTE != nil {
		lo = eventKey(*f.TimestampGTE, "")
	}
	if f.TimestampLT != nil {
		hi = eventKey(*f.TimestampLT, "")
	}
	return lo, hi
}

// SearchEvents implements acs.Store. With a body filter it walks the text
// index and ends a page early when the scan budget is spent (see
// bodyScanEvents): such a page may hold fewer than the limit, or no events,
// and still have a token.
func (s *Store) SearchEvents(_ context.Context, convID string, q acs.EventQuery) (acs.Page[[]byte], error) {
	var page acs.Page[[]byte]
	body := strings.ToLower(q.Body)
	needle := []byte(body) // converted once: per entry, a query over 32 bytes would allocate
	limit := clamp(q.Limit)
	var start []byte
	if q.PageToken != "" {
		var err error
		start, err = decodeToken(q.PageToken, tagEvents, nil)
		if err != nil || len(start) < 8 {
			return page, fmt.Errorf("page token: %w", acs.ErrInvalid)
		}
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		if eb == nil {
			if q.PageToken != "" {
				return fmt.Errorf("page token: %w", acs.ErrInvalid)
			}
			return nil
		}
		scan := eb // the bucket walked: the events, or the text index
		if body != "" {
			if scan = tx.Bucket(bEventText).Bucket([]byte(convID)); scan == nil {
				return nil // no messages
			}
		}
		c := scan.Cursor()
		lo, hi := eventRange(&q.EventFilter)
		var k, v []byte
		if start != nil {
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
		scanned, read := 0, 0
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
			if body != "" {
				if scanned == bodyScanEvents || read >= bodyScanBytes {
					page.Next = encodeToken(tagEvents, k)
					break
				}
				scanned++
				read += len(v)
				if !bytes.Contains(v, needle) {
					continue
				}
				if v = eb.Get(k); v == nil {
					return fmt.Errorf("text index entry without its event in conversation %s", convID)
				}
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

// CountEvents implements acs.Store. With a body filter it reads the text
// index, so its cost grows with the conversation's messages, not its log;
// events are decoded only when a kind or source filter needs them.
func (s *Store) CountEvents(_ context.Context, convID string, f acs.EventFilter) (int, error) {
	n := 0
	body := strings.ToLower(f.Body)
	needle := []byte(body)
	lo, hi := eventRange(&f)
	decode := f.Kind != "" || f.Source != ""
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		if eb == nil {
			return nil
		}
		scan := eb
		if body != "" {
			if scan = tx.Bucket(bEventText).Bucket([]byte(convID)); scan == nil {
				return nil
			}
		}
		c := scan.Cursor()
		k, v := c.First()
		if lo != nil {
			k, v = c.Seek(lo)
		}
		for ; k != nil && (hi == nil || bytes.Compare(k, hi) < 0); k, v = c.Next() {
			if body != "" {
				if !bytes.Contains(v, needle) {
					continue
				}
				if decode {
					v = eb.Get(k)
				}
			}
			if decode {
				var e storedEvent
				if err := json.Unmarshal(v, &e); err != nil {
					return err
				}
				if !matchEvent(&f, "", &e) {
					continue
				}
			}
			n++
		}
		return nil
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
		for _, b := range [][]byte{bEvents, bEventIDs, bEventText} {
			if err := tx.Bucket(b).DeleteBucket([]byte(convID)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	})
}
