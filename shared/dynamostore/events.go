package dynamostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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
	sText     = "X#" // + timeKey(Timestamp) + "#" + id: the text index entry of an event with text
	sTextEnd  = "X$" // after every text index entry
	// sTextMarker marks a partition whose every event with text has its
	// text index entry: PutEvents writes it before the first events of a
	// partition. A partition that held events before it was first seen
	// (stored by a version without the index) has none, and body filters
	// read its event items instead.
	sTextMarker = "X"
)

// DefaultBodyScanItems is how many items a body search examines per page
// unless Options.BodyScanItems says otherwise; a page also stops after
// maxBodyScanCalls Queries (each reads at most 1 MB).
const (
	DefaultBodyScanItems = 1000
	maxBodyScanCalls     = 2
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

// PutEvents implements acs.Store. Each event is two items, or three when it
// has text: the event, in timestamp order, its id lookup and its text index
// entry, all written with the condition that they are new, in
// TransactWriteItems of at most 100 items and 3 MB. A transaction cancelled
// because some ids exist is retried without them. Calls of more than one
// batch may store their first batches and then fail: storing again is
// idempotent. The first call on a partition without events writes its text
// index marker first (see sTextMarker).
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
	if len(evs) > 0 {
		if err := s.markTextIndexed(ctx, pk); err != nil {
			return 0, err
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
		if text != "" {
			size += len(text) + len(pk) + len(ev.ID) + 100 // the text index entry
		}
		todo = append(todo, pending{it, size})
	}
	added := 0
	for len(todo) > 0 {
		n, size, items := 0, 0, 0
		for n < len(todo) && items+len(eventItems(todo[n].it)) <= 100 && (n == 0 || size+todo[n].size <= transactLimit) {
			size += todo[n].size
			items += len(eventItems(todo[n].it))
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

// eventItems are the items that store an event item: its id lookup, the
// event and, when it has text, its text index entry (kind, source, text).
func eventItems(ev item) []item {
	out := []item{eventIDItem(ev), ev}
	if text := str(ev, aText); text != "" {
		it := key(str(ev, aPK), sText+strings.TrimPrefix(str(ev, aSK), sEvent))
		it[aID] = ev[aID]
		setS(it, aKind, str(ev, aKind))
		setS(it, aSource, str(ev, aSource))
		it[aText] = ev[aText]
		out = append(out, it)
	}
	return out
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
		items := make([]types.TransactWriteItem, 0, 3*len(batch))
		first := make([]int, len(batch)+1) // batch[i]'s items are items[first[i]:first[i+1]]
		for i, it := range batch {
			first[i] = len(items)
			for _, w := range eventItems(it) {
				e := newExpr()
				items = append(items, condPut(w, notExists(e), e))
			}
		}
		first[len(batch)] = len(items)
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
				if !slices.Contains(reasons[first[i]:first[i+1]], "ConditionalCheckFailed") {
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
// event items of its partition ("T#" sort keys), by timestamp and id, or
// with text set the entries of its text index ("X#" sort keys, the same
// order).
func eventQuery(convID string, f *acs.EventFilter, desc, text bool) *rangeQuery {
	e := newExpr()
	begin, end := sEvent, sEventEnd
	if text {
		begin, end = sText, sTextEnd
	}
	q := &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pEvents + convID, desc: desc, e: e, consistent: true,
		lo: begin, hi: end}
	if f.TimestampGTE != nil {
		q.lo = begin + timeKey(*f.TimestampGTE)
	}
	if f.TimestampLT != nil {
		q.hi = begin + timeKey(*f.TimestampLT) // events at TimestampLT sort after it ("#id")
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
// expression. A body filter reads the text index instead (searchBody).
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
	if q.Body != "" {
		return s.searchBody(ctx, convID, q, tag, last, limit)
	}
	rq := eventQuery(convID, &q.EventFilter, q.Desc, false)
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

// searchBody is a search with a body filter. It reads the conversation's
// text index (or, in a partition without its marker, the event items) with
// the filters in the filter expression, and examines at most
// Options.BodyScanItems items in at most maxBodyScanCalls Queries: a page
// ends there, with the items found so far, fewer than limit or none, and a
// token after the last item examined. Page tokens name event sort keys
// ("T#…") either way. The events found are read with BatchGetItem.
func (s *Store) searchBody(ctx context.Context, convID string, q acs.EventQuery, tag byte, last string, limit int) (acs.Page[[]byte], error) {
	var page acs.Page[[]byte]
	pk := pEvents + convID
	indexed, err := s.textIndexed(ctx, pk)
	if err != nil {
		return page, err
	}
	rq := eventQuery(convID, &q.EventFilter, q.Desc, indexed)
	if indexed {
		rq.projection = []string{aPK, aSK}
		if last != "" {
			last = sText + strings.TrimPrefix(last, sEvent)
		}
	}
	rq.lo, rq.hi = after(rq.lo, rq.hi, last, q.Desc)
	in, ok := rq.input()
	if !ok {
		return page, nil
	}
	// eventKey is the event sort key of an item read: the token's form.
	eventKey := func(sk string) string {
		if indexed {
			return sEvent + strings.TrimPrefix(sk, sText)
		}
		return sk
	}
	var hits []item
	budget := s.bodyScan
scan:
	for calls := 1; ; calls++ {
		in.Limit = aws.Int32(int32(budget))
		res, err := s.query(ctx, in)
		if err != nil {
			return page, err
		}
		budget -= int(res.ScannedCount)
		for _, it := range res.Items {
			if last != "" && str(it, aSK) == last {
				continue
			}
			hits = append(hits, it)
			if len(hits) > limit {
				hits = hits[:limit]
				page.Next = encodeToken(tag, convID, eventKey(str(hits[limit-1], aSK)))
				break scan
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		if budget <= 0 || calls == maxBodyScanCalls {
			page.Next = encodeToken(tag, convID, eventKey(str(res.LastEvaluatedKey, aSK)))
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if indexed && len(hits) > 0 {
		keys := make([]item, len(hits))
		for i, it := range hits {
			keys[i] = key(pk, eventKey(str(it, aSK)))
		}
		got, err := s.batchGet(ctx, keys)
		if err != nil {
			return page, err
		}
		hits = hits[:0]
		for _, k := range keys {
			if it := got[pk+"\x00"+str(k, aSK)]; it != nil { // an entry outlives its event only mid-delete
				hits = append(hits, it)
			}
		}
	}
	page.Items, err = s.eventJSON(ctx, hits)
	return page, err
}

// textIndexed reports whether the partition's text index is complete (its
// marker exists). A partition once seen indexed stays so for this Store:
// its entries are written with every event, and a partition emptied by
// DeleteEvents and filled again gets them for all its events.
func (s *Store) textIndexed(ctx context.Context, pk string) (bool, error) {
	if v, ok := s.indexed.Load(pk); ok && v.(bool) {
		return true, nil
	}
	it, err := s.getItem(ctx, key(pk, sTextMarker))
	if err != nil || it == nil {
		return false, err
	}
	s.remember(pk, true)
	return true, nil
}

// markTextIndexed writes the partition's text index marker when it holds no
// event yet; a partition that already holds events and has no marker (they
// were stored by a version without the index) is remembered as such.
func (s *Store) markTextIndexed(ctx context.Context, pk string) error {
	if _, ok := s.indexed.Load(pk); ok {
		return nil
	}
	if it, err := s.getItem(ctx, key(pk, sTextMarker)); err != nil || it != nil {
		if it != nil {
			s.remember(pk, true)
		}
		return err
	}
	rq := &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pk, lo: sEvent, hi: sEventEnd, consistent: true, projection: []string{aPK, aSK}}
	in, ok := rq.input()
	if !ok {
		return nil
	}
	in.Limit = aws.Int32(1)
	res, err := s.query(ctx, in)
	if err != nil {
		return err
	}
	if len(res.Items) > 0 {
		s.remember(pk, false)
		return nil
	}
	if err := s.putItem(ctx, &dynamodb.PutItemInput{Item: key(pk, sTextMarker)}); err != nil {
		return err
	}
	s.remember(pk, true)
	return nil
}

// remember caches whether a partition's text index is complete, forgetting
// everything past 100,000 partitions.
func (s *Store) remember(pk string, indexed bool) {
	if s.indexedN.Add(1) > 100_000 {
		s.indexed.Clear()
		s.indexedN.Store(1)
	}
	s.indexed.Store(pk, indexed)
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

// CountEvents implements acs.Store: a Select COUNT Query, of the text
// index for a body filter (its cost grows with the messages, not the log).
func (s *Store) CountEvents(ctx context.Context, convID string, f acs.EventFilter) (int, error) {
	indexed := false
	if f.Body != "" {
		var err error
		if indexed, err = s.textIndexed(ctx, pEvents+convID); err != nil {
			return 0, err
		}
	}
	return s.count(ctx, eventQuery(convID, &f, false, indexed))
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
	s.indexed.Delete(pEvents + convID)
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
