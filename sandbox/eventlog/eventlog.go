// Package eventlog is the agent server's durable, append-only event log of one
// conversation.
//
// Each event is stored as one framed record (length, CRC-32C, canonical JSON)
// in a single file. An event is fsynced before it becomes visible to readers,
// searches or subscribers, so anything a client has seen survives a crash.
// Concurrent appends share one fsync (group commit). Timestamps are strictly
// increasing in log order, which makes time-range filters binary searches.
// The in-memory index is checkpointed beside the log (see CheckpointName), so
// reopening a long log scans only what was appended since the checkpoint.
package eventlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/atomicfile"
)

// FileName is the name of the log file inside a conversation's directory.
const FileName = "events.log"

const headerSize = 8

// maxRecord bounds one record so a corrupt length cannot allocate gigabytes.
const maxRecord = 64 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by the log.
var (
	ErrNotFound  = errors.New("event not found")
	ErrBadPageID = errors.New("unknown page_id")
	ErrClosed    = errors.New("event log closed")
	ErrCorrupt   = errors.New("event log corrupt")
)

type entry struct {
	off    int64
	n      uint32
	ts     int64 // unix microseconds
	kind   string
	source events.Source
	id     string
	text   string // lower-cased searchable text (message events only)
}

// Log is one conversation's event log. It is safe for concurrent use.
type Log struct {
	path string

	mu       sync.RWMutex
	f        *os.File
	entries  []entry // published (fsynced) events
	texts    []int   // positions in entries of the events with searchable text, ascending
	byID     map[string]int
	size     int64 // bytes written, synced or not
	lastTS   int64 // last timestamp assigned, including unpublished
	pending  []entry
	ids      map[string]bool // ids written but not yet published
	writeSeq uint64
	notify   chan struct{}
	failed   error
	closed   bool

	syncMu    sync.Mutex
	syncedSeq uint64

	ckPath    string
	ckMu      sync.Mutex // one checkpoint write at a time
	ckEvents  int        // events covered by the last checkpoint (mu)
	ckSize    int64      // bytes covered by the last checkpoint (mu)
	ckRunning bool       // a background checkpoint is being written (mu)
	ckWG      sync.WaitGroup
}

// Create creates an empty log in dir (which must exist and hold no log),
// without syncing anything: the new file's entry is durable only once the
// caller syncs dir and dir's own entry in its parent (Open, creating a
// log, does both). It is for a caller that creates other files beside the
// log and syncs them all at once; Open then opens the log. An empty log
// file already in dir, made ahead of need (see Prepare), is used as the
// new log. Errors: a log with records in dir (fs.ErrExist), or creating
// the file.
func Create(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create event log: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() > 0 {
		err = fmt.Errorf("create event log in %s: %w", dir, fs.ErrExist)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	removeCheckpoint(dir) // a leftover describes another log
	return nil
}

// Prepare makes in dir, ahead of need, the empty file Create would make
// (a new file costs a millisecond of kernel time on some file systems):
// Create then uses it. Nothing is synced.
func Prepare(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("prepare event log: %w", err)
	}
	return f.Close()
}

// Open opens (creating if needed) the log in dir. A torn record at the end of
// the file, left by a crash during a write, is truncated away; corruption
// before the end is ErrCorrupt, so acknowledged events are never dropped.
// With a valid checkpoint (see CheckpointName) only the records after it are
// read: corruption among the records it covers is then ErrCorrupt when such
// a record is read (every read verifies the record's checksum).
func Open(dir string) (*Log, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create event log dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0o600)
	} else if err == nil {
		removeCheckpoint(dir) // a leftover describes another log
		// A new file's directory entry is not made durable by fsyncing the
		// file: without fsyncing the directory, a power loss could drop the
		// whole log although its events were fsynced. The directory is
		// usually new too (one per conversation), so its own entry in the
		// parent is synced as well. Only when the log is created, so appends
		// are unaffected. (Not testable without a power cut.)
		if err = atomicfile.SyncDirAndParent(dir); err != nil {
			f.Close()
			os.Remove(path) // so the next Open creates it again and retries
			return nil, fmt.Errorf("sync event log dir: %w", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l := &Log{path: path, f: f, byID: map[string]int{}, ids: map[string]bool{}, notify: make(chan struct{}),
		ckPath: filepath.Join(dir, CheckpointName)}
	if err := l.load(); err != nil {
		f.Close()
		return nil, err
	}
	removeCheckpointTemps(dir)
	l.mu.Lock()
	l.maybeCheckpoint() // so the next open does not scan this tail again
	l.mu.Unlock()
	return l, nil
}

func (l *Log) load() error {
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("stat event log: %w", err)
	}
	size := st.Size()
	var off int64
	if ck, ok := l.readCheckpoint(size); ok {
		l.entries = ck.entries
		l.byID = make(map[string]int, len(ck.entries))
		ntext := 0
		for i := range ck.entries {
			if ck.entries[i].text != "" {
				ntext++
			}
		}
		l.texts = make([]int, 0, ntext)
		for i := range ck.entries {
			e := &ck.entries[i]
			l.byID[e.id] = i
			if e.text != "" {
				l.texts = append(l.texts, i)
			}
		}
		l.lastTS = ck.entries[len(ck.entries)-1].ts
		l.ckEvents, l.ckSize = len(ck.entries), ck.size
		off = ck.size
	}
	hdr := make([]byte, headerSize)
	for off < size {
		if size-off < headerSize {
			return l.truncateTail(off, size, "short header")
		}
		if _, err := l.f.ReadAt(hdr, off); err != nil {
			return fmt.Errorf("read event log: %w", err)
		}
		n := binary.LittleEndian.Uint32(hdr[0:4])
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		if n > maxRecord || off+headerSize+int64(n) > size {
			return l.truncateTail(off, size, "short record")
		}
		payload := make([]byte, n)
		if _, err := l.f.ReadAt(payload, off+headerSize); err != nil {
			return fmt.Errorf("read event log: %w", err)
		}
		if crc32.Checksum(payload, crcTable) != sum {
			if off+headerSize+int64(n) == size {
				return l.truncateTail(off, size, "checksum mismatch in last record")
			}
			return fmt.Errorf("%w: checksum mismatch at offset %d of %s", ErrCorrupt, off, l.path)
		}
		e, err := indexEntry(payload)
		if err != nil {
			return fmt.Errorf("%w: record at offset %d: %v", ErrCorrupt, off, err)
		}
		e.off, e.n = off+headerSize, n
		l.publish(e)
		l.lastTS = max(l.lastTS, e.ts)
		off += headerSize + int64(n)
	}
	l.size = off
	return nil
}

func (l *Log) truncateTail(off, size int64, why string) error {
	slog.Warn("event log: dropping torn tail", "path", l.path, "offset", off, "bytes", size-off, "reason", why)
	if err := l.f.Truncate(off); err != nil {
		return fmt.Errorf("truncate torn event log tail: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync event log: %w", err)
	}
	l.size = off
	return nil
}

// indexEntry extracts what searches need from a stored event.
func indexEntry(payload []byte) (entry, error) {
	v, err := strictjson.Parse(payload)
	if err != nil {
		return entry{}, err
	}
	var e entry
	for _, m := range v.Members {
		switch m.Key {
		case "id":
			e.id = m.Value.Str
		case "kind":
			e.kind = m.Value.Str
		case "source":
			e.source = events.Source(m.Value.Str)
		case "timestamp":
			t, err := events.ParseTime(m.Value.Str)
			if err != nil {
				return entry{}, err
			}
			e.ts = t.UnixMicro()
		}
	}
	if e.id == "" || e.kind == "" {
		return entry{}, errors.New("record lacks id or kind")
	}
	if e.kind == "MessageEvent" {
		ev, err := events.DecodeValue(v)
		if err != nil {
			return entry{}, err
		}
		e.text = events.SearchText(ev)
	}
	return e, nil
}

// Append stores evs durably, in order, and returns once they are fsynced and
// visible. Each event gets an id and timestamp when unset (see events.Stamp);
// timestamps are raised where needed so they strictly increase in log order.
// An event whose id is already in the log is an error and nothing is written.
func (l *Log) Append(ctx context.Context, evs ...events.Event) error {
	seq, err := l.write(ctx, evs)
	if err != nil || seq == 0 {
		return err
	}
	return l.sync(seq)
}

// AppendNoWait is Append without waiting for the fsync: the events are
// written, in order with every other append, and the fsync runs in the
// background; they become visible once it is done, as with Append. The
// returned function waits for it and returns its error. A later Append
// returns only once these events are durable too (one fsync covers every
// write before it), and fails if their fsync failed (the log is then
// unusable). Its own errors are Append's, before anything is written.
func (l *Log) AppendNoWait(ctx context.Context, evs ...events.Event) (wait func() error, err error) {
	seq, err := l.write(ctx, evs)
	if err != nil || seq == 0 {
		return func() error { return nil }, err
	}
	synced := make(chan error, 1)
	go func() { synced <- l.sync(seq) }()
	return sync.OnceValue(func() error { return <-synced }), nil
}

// write writes evs to the file (not synced) as pending events and returns
// the write's sequence number for sync (0 when evs is empty).
func (l *Log) write(ctx context.Context, evs []events.Event) (uint64, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.failed != nil {
		l.mu.Unlock()
		return 0, l.failed
	}
	var buf bytes.Buffer
	batch := make([]entry, 0, len(evs))
	lastTS := l.lastTS
	seen := map[string]bool{}
	for _, ev := range evs {
		events.Stamp(ev)
		b := ev.EventBase()
		if _, dup := l.byID[b.ID]; dup || l.ids[b.ID] || seen[b.ID] {
			l.mu.Unlock()
			return 0, fmt.Errorf("append event %s: id already in the log", b.ID)
		}
		seen[b.ID] = true
		ts := b.Timestamp.UnixMicro()
		if ts <= lastTS {
			ts = lastTS + 1
			b.Timestamp = events.At(time.UnixMicro(ts))
		}
		lastTS = ts
		payload, err := events.Encode(ev)
		if err != nil {
			l.mu.Unlock()
			return 0, fmt.Errorf("encode %s event: %w", ev.Kind(), err)
		}
		var hdr [headerSize]byte
		binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(payload)))
		binary.LittleEndian.PutUint32(hdr[4:8], crc32.Checksum(payload, crcTable))
		e := entry{off: l.size + int64(buf.Len()) + headerSize, n: uint32(len(payload)), ts: ts,
			kind: ev.Kind(), source: b.Source, id: b.ID, text: events.SearchText(ev)}
		buf.Write(hdr[:])
		buf.Write(payload)
		batch = append(batch, e)
	}
	if _, err := l.f.WriteAt(buf.Bytes(), l.size); err != nil {
		// Leave the file as it was so later appends stay well-formed.
		if terr := l.f.Truncate(l.size); terr != nil {
			l.failed = fmt.Errorf("event log unusable after failed write: %w", terr)
		}
		l.mu.Unlock()
		return 0, fmt.Errorf("write event log: %w", err)
	}
	l.size += int64(buf.Len())
	l.lastTS = lastTS
	for _, e := range batch {
		l.ids[e.id] = true
	}
	l.pending = append(l.pending, batch...)
	l.writeSeq++
	mySeq := l.writeSeq
	l.mu.Unlock()
	return mySeq, nil
}

// sync makes every write up to seq durable and visible, sharing one fsync
// among concurrent appenders.
func (l *Log) sync(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.syncedSeq >= seq {
		l.mu.RLock()
		err := l.failed
		l.mu.RUnlock()
		return err
	}
	l.mu.RLock()
	target := l.writeSeq
	npend := len(l.pending)
	l.mu.RUnlock()
	if err := l.f.Sync(); err != nil {
		l.mu.Lock()
		l.failed = fmt.Errorf("fsync event log: %w", err)
		l.mu.Unlock()
		return l.failed
	}
	l.mu.Lock()
	for _, e := range l.pending[:npend] {
		l.publish(e)
		delete(l.ids, e.id)
	}
	l.pending = append(l.pending[:0], l.pending[npend:]...)
	close(l.notify)
	l.notify = make(chan struct{})
	l.maybeCheckpoint()
	l.mu.Unlock()
	l.syncedSeq = target
	return nil
}

// publish makes e visible: appended to entries, indexed by id and, when it
// has searchable text, in the text index. Callers hold mu for writing.
func (l *Log) publish(e entry) {
	l.byID[e.id] = len(l.entries)
	if e.text != "" {
		l.texts = append(l.texts, len(l.entries))
	}
	l.entries = append(l.entries, e)
}

// Len returns the number of visible events.
func (l *Log) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.entries)
}

// Wait blocks until the log holds more than n events, ctx ends (its error is
// returned) or the log is closed (ErrClosed).
func (l *Log) Wait(ctx context.Context, n int) error {
	for {
		l.mu.RLock()
		count, ch, closed := len(l.entries), l.notify, l.closed
		l.mu.RUnlock()
		if count > n {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Changed returns a channel closed at the next publish (or at Close). Take it
// before reading so an append between the read and the wait is not missed.
func (l *Log) Changed() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.notify
}

// PositionAt returns the position of the first event with a timestamp at or
// after t (Len() when there is none).
func (l *Log) PositionAt(t time.Time) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	us := t.UnixMicro()
	return sort.Search(len(l.entries), func(i int) bool { return l.entries[i].ts >= us })
}

// read returns e's payload, verified against its record's length and
// checksum (a mismatch is ErrCorrupt).
func (l *Log) read(e entry) ([]byte, error) {
	b := make([]byte, headerSize+int(e.n))
	if _, err := l.f.ReadAt(b, e.off-headerSize); err != nil && !(errors.Is(err, io.EOF) && len(b) == headerSize+int(e.n)) {
		return nil, fmt.Errorf("read event %s: %w", e.id, err)
	}
	if binary.LittleEndian.Uint32(b[0:4]) != e.n || crc32.Checksum(b[headerSize:], crcTable) != binary.LittleEndian.Uint32(b[4:8]) {
		return nil, fmt.Errorf("%w: record of event %s at offset %d of %s", ErrCorrupt, e.id, e.off-headerSize, l.path)
	}
	return b[headerSize:], nil
}

// ReadFrom returns the canonical JSON of up to max events starting at
// position i (0-based, in log order).
func (l *Log) ReadFrom(i, max int) ([][]byte, error) {
	l.mu.RLock()
	if i < 0 || i > len(l.entries) {
		l.mu.RUnlock()
		return nil, fmt.Errorf("read from %d: out of range", i)
	}
	end := min(len(l.entries), i+max)
	slice := append([]entry(nil), l.entries[i:end]...)
	l.mu.RUnlock()
	out := make([][]byte, 0, len(slice))
	for _, e := range slice {
		b, err := l.read(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Get returns the canonical JSON of the event with the given id, or
// ErrNotFound.
func (l *Log) Get(id string) ([]byte, error) {
	l.mu.RLock()
	i, ok := l.byID[id]
	var e entry
	if ok {
		e = l.entries[i]
	}
	l.mu.RUnlock()
	if !ok {
		return nil, ErrNotFound
	}
	return l.read(e)
}

// Position returns the log position of the event with the given id.
func (l *Log) Position(id string) (int, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i, ok := l.byID[id]
	return i, ok
}

// GetEvent returns the decoded event with the given id, or ErrNotFound.
func (l *Log) GetEvent(id string) (events.Event, error) {
	b, err := l.Get(id)
	if err != nil {
		return nil, err
	}
	return events.Decode(b)
}

// Filter selects events. Zero fields match everything.
type Filter struct {
	Kind         string        // short kind name
	Source       events.Source // agent, user or environment
	Body         string        // case-insensitive substring of message text (see Search)
	TimestampGTE *time.Time
	TimestampLT  *time.Time
}

func (f *Filter) match(e *entry, body string) bool {
	if f.Kind != "" && e.kind != f.Kind {
		return false
	}
	if f.Source != "" && e.source != f.Source {
		return false
	}
	if body != "" && !strings.Contains(e.text, body) {
		return false
	}
	return true
}

// bounds returns the index range [lo, hi) whose timestamps satisfy the
// filter's time range.
func (l *Log) bounds(f *Filter) (int, int) {
	lo, hi := 0, len(l.entries)
	if f.TimestampGTE != nil {
		t := f.TimestampGTE.UnixMicro()
		lo = sort.Search(len(l.entries), func(i int) bool { return l.entries[i].ts >= t })
	}
	if f.TimestampLT != nil {
		t := f.TimestampLT.UnixMicro()
		hi = sort.Search(len(l.entries), func(i int) bool { return l.entries[i].ts >= t })
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Query is a search: a filter plus paging.
type Query struct {
	Filter
	PageID string // the NextPageID of the previous page; "" starts at the beginning
	Limit  int    // 1..100
	Order  events.EventSortOrder
}

// Page is one page of search results. Items are canonical event JSON.
type Page struct {
	Items      [][]byte
	NextPageID string // "" on the last page
}

// A search with a body filter examines only the events that have searchable
// text (message events, through an index kept in memory), and per page at
// most BodyScanEvents of them or, once it has read BodyScanBytes of their
// text, none more: the cost of a page does not grow with the log.
const (
	BodyScanEvents = 2000
	BodyScanBytes  = 1 << 20
)

// Search returns the events matching q in timestamp order (ascending unless
// q.Order is TIMESTAMP_DESC). NextPageID is the id of the event the next page
// starts from. An unknown PageID is ErrBadPageID.
//
// Without a body filter a page holds q.Limit events whenever that many more
// match. With one, a page ends early when its scan budget (BodyScanEvents,
// BodyScanBytes) is spent: it may then hold fewer than q.Limit events, or
// none, and still carry a NextPageID. Following NextPageID until it is ""
// visits every match exactly once, in order.
func (l *Log) Search(q Query) (Page, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	desc := q.Order == events.SortTimestampDesc
	body := strings.ToLower(q.Body)
	l.mu.RLock()
	lo, hi := l.bounds(&q.Filter)
	start := lo
	if desc {
		start = hi - 1
	}
	if q.PageID != "" {
		i, ok := l.byID[q.PageID]
		if !ok {
			l.mu.RUnlock()
			return Page{}, ErrBadPageID
		}
		start = i
	}
	var hits []entry
	next := ""
	if body != "" {
		hits, next = l.searchText(&q.Filter, body, lo, hi, start, desc, q.Limit)
	} else {
		step := 1
		if desc {
			step = -1
		}
		for i := start; i >= lo && i < hi; i += step {
			e := &l.entries[i]
			if !q.Filter.match(e, body) {
				continue
			}
			if len(hits) == q.Limit {
				next = e.id
				break
			}
			hits = append(hits, *e)
		}
	}
	l.mu.RUnlock()
	page := Page{Items: make([][]byte, 0, len(hits)), NextPageID: next}
	for _, e := range hits {
		b, err := l.read(e)
		if err != nil {
			return Page{}, err
		}
		page.Items = append(page.Items, b)
	}
	return page, nil
}

// searchText is the body search: it walks the text index from log position
// start, in the order asked, within positions [lo, hi), and returns up to
// limit matches and the id the next page starts from ("" at the end). It
// stops early when the scan budget is spent. Callers hold mu.
func (l *Log) searchText(f *Filter, body string, lo, hi, start int, desc bool, limit int) ([]entry, string) {
	j := sort.SearchInts(l.texts, start) // the first slot at or after start
	step := 1
	if desc {
		if j == len(l.texts) || l.texts[j] != start {
			j-- // the last slot before start
		}
		step = -1
	}
	var hits []entry
	scanned, read := 0, 0
	for ; j >= 0 && j < len(l.texts); j += step {
		i := l.texts[j]
		if i < lo || i >= hi {
			break
		}
		e := &l.entries[i]
		if scanned == BodyScanEvents || read >= BodyScanBytes {
			return hits, e.id
		}
		scanned++
		read += len(e.text)
		if !f.match(e, body) {
			continue
		}
		if len(hits) == limit {
			return hits, e.id
		}
		hits = append(hits, *e)
	}
	return hits, ""
}

// Count returns how many events match f. With a body filter it reads only
// the text index (message events), so its cost grows with the number of
// messages in the time range, not with the log.
func (l *Log) Count(f Filter) int {
	body := strings.ToLower(f.Body)
	l.mu.RLock()
	defer l.mu.RUnlock()
	lo, hi := l.bounds(&f)
	n := 0
	switch {
	case body != "":
		for j := sort.SearchInts(l.texts, lo); j < len(l.texts) && l.texts[j] < hi; j++ {
			if f.match(&l.entries[l.texts[j]], body) {
				n++
			}
		}
	case f.Kind == "" && f.Source == "":
		n = hi - lo
	default:
		for i := lo; i < hi; i++ {
			if f.match(&l.entries[i], body) {
				n++
			}
		}
	}
	return n
}

// Close checkpoints the index (a failure is logged: the next open scans
// more) and closes the log. Waiting subscribers get ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	l.ckWG.Wait()
	if err := l.writeCheckpoint(); err != nil {
		slog.Warn("event log: checkpoint at close failed; the next open scans the log", "path", l.path, "error", err)
	}
	return l.f.Close()
}
