package dynamostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
)

// Event attributes.
const (
	aKind   = "kind"
	aSource = "source"
	aText   = "text" // StoredEvent.Text (lower-cased by the caller)
	aBlob   = "blob" // the Blobs key of a large event's JSON
	aAt     = "at"   // an id lookup's event sort key

	sEvent    = "T#" // + timeKey(Timestamp) + "#" + id: an event
	sEventEnd = "T$" // after every event
	sEventID  = "I#" // + id: an event's id lookup
)

const (
	// InlineEventLimit is the most JSON plus text an event item holds; an
	// event over it keeps its JSON in Blobs (items are limited to 400 KB).
	InlineEventLimit = 350 << 10
	// maxEventID bounds event ids (sort keys are at most 1 KB).
	maxEventID = 512
	// transactLimit bounds the bytes of one TransactWriteItems (4 MB).
	transactLimit = 3 << 20
)

// EventBlobKey is where a large event's JSON is kept in Blobs.
func EventBlobKey(conversationID, eventID string) string {
	return "events/" + url.PathEscape(conversationID) + "/" + url.PathEscape(eventID) + ".json"
}

func eventBlobPrefix(conversationID string) string {
	return "events/" + url.PathEscape(conversationID) + "/"
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// eventText is the text an event item keeps (valid UTF-8, as DynamoDB
// strings must be).
func eventText(ev acs.StoredEvent) string { return strings.ToValidUTF8(ev.Text, "\uFFFD") }

// PutEvents implements acs.Store. Each event is two items: the event, in
// timestamp order, and its id lookup, both written with the condition that
// they are new, in TransactWriteItems of at most 50 events (100 items) and
// 3 MB. A transaction cancelled because some ids exist is retried without
// them. Calls of more than one batch may store their first batches and then
// fail: storing again is idempotent.
func (s *Store) PutEvents(ctx context.Context, convID string, evs []acs.StoredEvent) (int, error) {
	if convID == "" {
		return 0, fmt.Errorf("events without a conversation: %w", acs.ErrInvalid)
	}
	pk := pEvents + convID
	seen := map[string]bool{}
	type pending struct {
		it   item
		size int
	}
	for _, ev := range evs {
		if ev.ID == "" || len(ev.ID) > maxEventID || !utf8.ValidString(ev.ID) {
			return 0, fmt.Errorf("event id %q: %w", truncateUTF8(ev.ID, 64), acs.ErrInvalid)
		}
		if n := len(ev.JSON) + len(eventText(ev)); s.blobs == nil && n > InlineEventLimit {
			return 0, fmt.Errorf("event %s: %d bytes of JSON and text, over the %d an item holds, and no blob store: %w",
				ev.ID, n, InlineEventLimit, acs.ErrInvalid)
		}
	}
	var todo []pending
	for _, ev := range evs {
		if seen[ev.ID] {
			continue
		}
		seen[ev.ID] = true
		it := key(pk, sEvent+timeIDKey(ev.Timestamp, ev.ID))
		it[aID] = sv(ev.ID)
		setS(it, aKind, strings.ToValidUTF8(ev.Kind, "\uFFFD"))
		setS(it, aSource, strings.ToValidUTF8(ev.Source, "\uFFFD"))
		text := eventText(ev)
		if len(ev.JSON)+len(text) <= InlineEventLimit {
			it[aData] = bv(ev.JSON)
		} else {
			// Stored already? Then it is not new, and its blob stays.
			cur, err := s.getItem(ctx, key(pk, sEventID+ev.ID))
			if err != nil {
				return 0, err
			}
			if cur != nil {
				continue
			}
			bk := EventBlobKey(convID, ev.ID)
			if err := s.blobs.Put(ctx, bk, bytes.NewReader(ev.JSON)); err != nil {
				return 0, fmt.Errorf("event %s: store its JSON: %w", ev.ID, err)
			}
			it[aBlob] = sv(bk)
			text = truncateUTF8(text, InlineEventLimit)
		}
		setS(it, aText, text)
		size := len(ev.ID) + len(text) + len(ev.Kind) + len(ev.Source) + len(bin(it, aData)) + len(pk) + 200
		todo = append(todo, pending{it, size})
	}
	added := 0
	for len(todo) > 0 {
		n, size := 0, 0
		for n < len(todo) && n < 50 && (n == 0 || size+todo[n].size <= transactLimit) {
			size += todo[n].size
			n++
		}
		batch := make([]item, n)
		for i := range batch {
			batch[i] = todo[i].it
		}
		todo = todo[n:]
		k, err := s.putEventBatch(ctx, batch)
		added += k
		if err != nil {
			return added, err
		}
	}
	return added, nil
}

// eventIDItem is the id lookup of an event item: the event's sort key.
func eventIDItem(ev item) item {
	it := key(str(ev, aPK), sEventID+str(ev, aID))
	it[aAt] = ev[aSK]
	return it
}

// putEventBatch writes new events (their items and id lookups) in one
// transaction, dropping those whose id exists; it returns how many it
// stored.
func (s *Store) putEventBatch(ctx context.Context, batch []item) (int, error) {
	stored := 0
	err := s.retry(ctx, "put events", func() error {
		if len(batch) == 0 {
			return nil
		}
		items := make([]types.TransactWriteItem, 0, 2*len(batch))
		for _, it := range batch {
			e1, e2 := newExpr(), newExpr()
			items = append(items, condPut(eventIDItem(it), notExists(e1), e1), condPut(it, notExists(e2), e2))
		}
		err := s.transact(ctx, items)
		if err == nil {
			stored = len(batch)
			return nil
		}
		reasons := cancelReasons(err)
		if len(reasons) == 0 {
			return err
		}
		var keep []item
		if len(reasons) == len(items) {
			for i, it := range batch {
				if reasons[2*i] != "ConditionalCheckFailed" && reasons[2*i+1] != "ConditionalCheckFailed" {
					keep = append(keep, it)
				}
			}
		} else { // reasons unknown: read which ids exist
			ids := make([]item, len(batch))
			for i, it := range batch {
				ids[i] = eventIDItem(it)
			}
			got, gerr := s.batchGet(ctx, ids, aAt)
			if gerr != nil {
				return gerr
			}
			for i, it := range batch {
				if got[str(ids[i], aPK)+"\x00"+str(ids[i], aSK)] == nil {
					keep = append(keep, it)
				}
			}
		}
		if len(keep) == len(batch) && !contended(err) {
			return err
		}
		batch = keep
		return errRetry
	})
	return stored, err
}

// eventQuery is the query of a conversation's events matching f: the
// event items of its partition ("T#" sort keys), by timestamp and id.
func eventQuery(convID string, f *acs.EventFilter, desc bool) *rangeQuery {
	e := newExpr()
	q := &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pEvents + convID, desc: desc, e: e, consistent: true,
		lo: sEvent, hi: sEventEnd}
	if f.TimestampGTE != nil {
		q.lo = sEvent + timeKey(*f.TimestampGTE)
	}
	if f.TimestampLT != nil {
		q.hi = sEvent + timeKey(*f.TimestampLT) // events at TimestampLT sort after it ("#id")
	}
	if f.Kind != "" {
		q.filter = append(q.filter, fmt.Sprintf("%s = %s", e.n(aKind), e.v(sv(strings.ToValidUTF8(f.Kind, "\uFFFD")))))
	}
	if f.Source != "" {
		q.filter = append(q.filter, fmt.Sprintf("%s = %s", e.n(aSource), e.v(sv(strings.ToValidUTF8(f.Source, "\uFFFD")))))
	}
	if f.Body != "" {
		q.filter = append(q.filter, fmt.Sprintf("contains(%s, %s)", e.n(aText),
			e.v(sv(strings.ToValidUTF8(strings.ToLower(f.Body), "\uFFFD")))))
	}
	return q
}

func validEventKey(k string) bool {
	return strings.HasPrefix(k, sEvent) && validTimeIDKey(k[len(sEvent):])
}

// SearchEvents implements acs.Store: a strongly consistent Query of the
// conversation's partition in either direction, filters in the filter
// expression.
func (s *Store) SearchEvents(ctx context.Context, convID string, q acs.EventQuery) (acs.Page[[]byte], error) {
	var page acs.Page[[]byte]
	tag := byte(tagEvents)
	if q.Desc {
		tag = tagEventsDesc
	}
	last, err := decodeToken(q.PageToken, tag, convID, validEventKey)
	if err != nil {
		return page, err
	}
	limit := clamp(q.Limit)
	rq := eventQuery(convID, &q.EventFilter, q.Desc)
	rq.lo, rq.hi = after(rq.lo, rq.hi, last, q.Desc)
	items, err := s.collect(ctx, rq, limit, last)
	if err != nil {
		return page, err
	}
	if len(items) > limit {
		items = items[:limit]
		page.Next = encodeToken(tag, convID, str(items[limit-1], aSK))
	}
	page.Items, err = s.eventJSON(ctx, items)
	return page, err
}

// eventJSON returns the JSON of event items, reading large ones from Blobs.
func (s *Store) eventJSON(ctx context.Context, items []item) ([][]byte, error) {
	out := make([][]byte, len(items))
	var wg sync.WaitGroup
	errs := make([]error, len(items))
	sem := make(chan struct{}, 8)
	for i, it := range items {
		if it == nil {
			continue
		}
		bk := str(it, aBlob)
		if bk == "" {
			out[i] = bin(it, aData)
			if out[i] == nil {
				out[i] = []byte{}
			}
			continue
		}
		if s.blobs == nil {
			errs[i] = fmt.Errorf("event %s is in blob %s, and the store has no blob store", str(it, aSK), bk)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := s.blobs.Get(ctx, bk)
			if err != nil {
				errs[i] = fmt.Errorf("event %s: read blob %s: %w", str(it, aSK), bk, err)
				return
			}
			defer r.Close()
			if out[i], err = io.ReadAll(r); err != nil {
				errs[i] = fmt.Errorf("event %s: read blob %s: %w", str(it, aSK), bk, err)
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// CountEvents implements acs.Store: a Select COUNT Query.
func (s *Store) CountEvents(ctx context.Context, convID string, f acs.EventFilter) (int, error) {
	return s.count(ctx, eventQuery(convID, &f, false))
}

// GetEvents implements acs.Store: BatchGetItem of the id lookups, then of
// the events (strongly consistent).
func (s *Store) GetEvents(ctx context.Context, convID string, ids []string) ([][]byte, error) {
	pk := pEvents + convID
	var keys []item
	for _, id := range ids {
		if id != "" && len(id) <= maxEventID && utf8.ValidString(id) {
			keys = append(keys, key(pk, sEventID+id))
		}
	}
	lookups, err := s.batchGet(ctx, keys, aAt)
	if err != nil {
		return nil, err
	}
	keys = keys[:0]
	for _, it := range lookups {
		keys = append(keys, key(pk, str(it, aAt)))
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	items := make([]item, len(ids))
	for i, id := range ids {
		if l := lookups[pk+"\x00"+sEventID+id]; l != nil {
			items[i] = got[pk+"\x00"+str(l, aAt)]
		}
	}
	return s.eventJSON(ctx, items)
}

// DeleteEvents implements acs.Store: the items, events and lookups (Query,
// BatchWriteItem),
// then the blobs of large ones.
func (s *Store) DeleteEvents(ctx context.Context, convID string) error {
	keys, err := s.collect(ctx, &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pEvents + convID,
		projection: []string{aPK, aSK}, consistent: true}, -1, "")
	if err != nil {
		return err
	}
	if err := s.batchDelete(ctx, keys); err != nil {
		return err
	}
	if s.blobs == nil {
		return nil
	}
	blobs, err := s.blobs.List(ctx, eventBlobPrefix(convID))
	if err != nil {
		return fmt.Errorf("list event blobs of %s: %w", convID, err)
	}
	for _, k := range blobs {
		if err := s.blobs.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete event blob %s: %w", k, err)
		}
	}
	return nil
}
