package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/eventlog"
)

func msg(src events.Source, text string) *events.MessageEvent {
	return &events.MessageEvent{Base: events.Base{Source: src},
		LLMMessage: events.Message{Role: events.Role(map[events.Source]string{"user": "user", "agent": "assistant", "environment": "user"}[src]),
			Content: []events.Content{events.TextItem(text)}}}
}

func state(key, value string) *events.ConversationStateUpdateEvent {
	return &events.ConversationStateUpdateEvent{Key: key, Value: []byte(value)}
}

func open(t testing.TB, dir string) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// ids decodes the ids of a page's items.
func ids(t *testing.T, items [][]byte) []string {
	t.Helper()
	out := []string{}
	for _, b := range items {
		ev, err := events.Decode(b)
		if err != nil {
			t.Fatalf("stored event does not decode: %v", err)
		}
		out = append(out, ev.EventBase().ID)
	}
	return out
}

func fill(t *testing.T, l *eventlog.Log) []events.Event {
	t.Helper()
	evs := []events.Event{
		msg("user", "Please FIX the bug"),      // 0
		state("execution_status", `"running"`), // 1
		msg("agent", "Looking at the code"),    // 2
		state("execution_status", `"idle"`),    // 3
		msg("user", "thanks, bug fixed?"),      // 4
		&events.PauseEvent{},                   // 5
	}
	for _, ev := range evs {
		if err := l.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

func TestSearchFiltersAndPaging(t *testing.T) {
	l := open(t, t.TempDir())
	evs := fill(t, l)
	id := func(i int) string { return evs[i].EventBase().ID }
	ts := func(i int) *time.Time { tt := evs[i].EventBase().Timestamp.Time; return &tt }

	cases := []struct {
		name string
		q    eventlog.Query
		want []string
		next string
	}{
		{"all", eventlog.Query{}, []string{id(0), id(1), id(2), id(3), id(4), id(5)}, ""},
		{"desc", eventlog.Query{Order: events.SortTimestampDesc}, []string{id(5), id(4), id(3), id(2), id(1), id(0)}, ""},
		{"limit", eventlog.Query{Limit: 2}, []string{id(0), id(1)}, id(2)},
		{"second page", eventlog.Query{Limit: 2, PageID: id(2)}, []string{id(2), id(3)}, id(4)},
		{"desc page", eventlog.Query{Limit: 2, PageID: id(3), Order: events.SortTimestampDesc}, []string{id(3), id(2)}, id(1)},
		{"kind", eventlog.Query{Filter: eventlog.Filter{Kind: "MessageEvent"}}, []string{id(0), id(2), id(4)}, ""},
		{"kind paged", eventlog.Query{Filter: eventlog.Filter{Kind: "MessageEvent"}, Limit: 1}, []string{id(0)}, id(2)},
		{"source", eventlog.Query{Filter: eventlog.Filter{Source: "user"}}, []string{id(0), id(4), id(5)}, ""},
		{"body case-insensitive", eventlog.Query{Filter: eventlog.Filter{Body: "BUG"}}, []string{id(0), id(4)}, ""},
		{"body no match", eventlog.Query{Filter: eventlog.Filter{Body: "running"}}, []string{}, ""},
		{"gte", eventlog.Query{Filter: eventlog.Filter{TimestampGTE: ts(3)}}, []string{id(3), id(4), id(5)}, ""},
		{"lt", eventlog.Query{Filter: eventlog.Filter{TimestampLT: ts(2)}}, []string{id(0), id(1)}, ""},
		{"range desc", eventlog.Query{Filter: eventlog.Filter{TimestampGTE: ts(1), TimestampLT: ts(4)}, Order: events.SortTimestampDesc}, []string{id(3), id(2), id(1)}, ""},
		{"empty range", eventlog.Query{Filter: eventlog.Filter{TimestampGTE: ts(4), TimestampLT: ts(1)}}, []string{}, ""},
		{"combined", eventlog.Query{Filter: eventlog.Filter{Kind: "MessageEvent", Source: "user", TimestampGTE: ts(1)}}, []string{id(4)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, err := l.Search(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(t, page.Items)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || page.NextPageID != tc.next {
				t.Fatalf("got %v next %q; want %v next %q", got, page.NextPageID, tc.want, tc.next)
			}
			if tc.q.PageID == "" && tc.q.Limit == 0 {
				if n := l.Count(tc.q.Filter); n != len(tc.want) {
					t.Fatalf("count %d, want %d", n, len(tc.want))
				}
			}
		})
	}
	if _, err := l.Search(eventlog.Query{PageID: "nope"}); !errors.Is(err, eventlog.ErrBadPageID) {
		t.Fatalf("unknown page id: %v", err)
	}
}

func TestPagingVisitsEveryEventOnce(t *testing.T) {
	l := open(t, t.TempDir())
	var all []events.Event
	for i := 0; i < 25; i++ {
		all = append(all, msg("user", fmt.Sprint("m", i)))
	}
	if err := l.Append(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	for _, order := range []events.EventSortOrder{events.SortTimestamp, events.SortTimestampDesc} {
		seen := map[string]bool{}
		page := eventlog.Page{}
		q := eventlog.Query{Limit: 7, Order: order}
		for first := true; first || page.NextPageID != ""; first = false {
			q.PageID = page.NextPageID
			var err error
			if page, err = l.Search(q); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids(t, page.Items) {
				if seen[id] {
					t.Fatalf("%s seen twice", id)
				}
				seen[id] = true
			}
		}
		if len(seen) != 25 {
			t.Fatalf("%s: saw %d of 25", order, len(seen))
		}
	}
}

func TestTimestampsStrictlyIncrease(t *testing.T) {
	l := open(t, t.TempDir())
	past := events.At(time.Now().Add(-time.Hour))
	a := msg("user", "a")
	b := msg("user", "b")
	b.Timestamp = past // older than a: must be raised
	if err := l.Append(context.Background(), a, b); err != nil {
		t.Fatal(err)
	}
	if !b.Timestamp.After(a.Timestamp.Time) {
		t.Fatalf("timestamps not increasing: %s then %s", a.Timestamp, b.Timestamp)
	}
}

func TestDurableAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	evs := fill(t, l)
	l.Close()

	l2 := open(t, dir)
	if l2.Len() != len(evs) {
		t.Fatalf("reopened log has %d events, want %d", l2.Len(), len(evs))
	}
	got, err := l2.GetEvent(evs[4].EventBase().ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(events.MustEncode(got)) != string(events.MustEncode(evs[4])) {
		t.Fatal("event changed across reopen")
	}
	if n := l2.Count(eventlog.Filter{Body: "bug"}); n != 2 {
		t.Fatalf("search index not rebuilt: %d", n)
	}
	// New appends after reopen keep increasing timestamps.
	ev := msg("user", "after")
	if err := l2.Append(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if !ev.Timestamp.After(evs[5].EventBase().Timestamp.Time) {
		t.Fatal("timestamp went backwards after reopen")
	}
}

// Create makes an empty log that Open opens; a second Create finds it and
// leaves it (and its events) alone.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	if err := eventlog.Create(dir); err != nil {
		t.Fatal(err)
	}
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 0 {
		t.Fatalf("a created log has %d events", l.Len())
	}
	evs := fill(t, l)
	l.Close()
	if err := eventlog.Create(dir); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a log: %v, want fs.ErrExist", err)
	}
	if l := open(t, dir); l.Len() != len(evs) {
		t.Fatalf("after a second Create the log has %d events, want %d", l.Len(), len(evs))
	}
}

// A log file made ahead by Prepare is the one Create uses (no other file
// is made), and a log with records is still not created over.
func TestPrepareThenCreate(t *testing.T) {
	dir := t.TempDir()
	if err := eventlog.Prepare(dir); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(dir, eventlog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := eventlog.Prepare(dir); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Prepare over a prepared log: %v, want fs.ErrExist", err)
	}
	if err := eventlog.Create(dir); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(filepath.Join(dir, eventlog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("Create replaced the prepared file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the directory holds %d entries, want only the log", len(entries))
	}
	l := open(t, dir)
	if l.Len() != 0 {
		t.Fatalf("a created log has %d events", l.Len())
	}
	fill(t, l)
	l.Close()
	if err := eventlog.Create(dir); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a log with records: %v, want fs.ErrExist", err)
	}
}

// AppendNoWait's events are visible once its wait returns, and a later
// Append returns only once they are durable and visible too, in order;
// both survive a reopen.
func TestAppendNoWait(t *testing.T) {
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wait, err := l.AppendNoWait(ctx, msg("user", "first"))
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil || l.Len() != 1 {
		t.Fatalf("after the wait: %v, %d events", err, l.Len())
	}
	if _, err := l.AppendNoWait(ctx, msg("agent", "second")); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, msg("user", "third")); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("an Append returned before the no-wait events before it were visible: %d events", l.Len())
	}
	l.Close()
	l = open(t, dir)
	got, err := l.ReadFrom(0, 10)
	if err != nil || len(got) != 3 || !strings.Contains(string(got[1]), "second") {
		t.Fatalf("after a reopen: %v, %d events", err, len(got))
	}
}

func TestTornTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l)
	l.Close()
	path := filepath.Join(dir, eventlog.FileName)
	st, _ := os.Stat(path)
	// A crash mid-write leaves a partial record: header claims 500 bytes.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{0xf4, 0x01, 0, 0, 1, 2, 3, 4, '{', '"'})
	f.Close()

	l2 := open(t, dir)
	if l2.Len() != 6 {
		t.Fatalf("want the 6 complete events, got %d", l2.Len())
	}
	if st2, _ := os.Stat(path); st2.Size() != st.Size() {
		t.Fatalf("torn tail not truncated: %d vs %d", st2.Size(), st.Size())
	}
	if err := l2.Append(context.Background(), msg("user", "x")); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptionBeforeEndIsAnError(t *testing.T) {
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l)
	l.Close()
	path := filepath.Join(dir, eventlog.FileName)
	b, _ := os.ReadFile(path)
	b[20] ^= 0xff // inside the first record's payload
	os.WriteFile(path, b, 0o600)
	if _, err := eventlog.Open(dir); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Fatalf("want ErrCorrupt, got %v", err)
	}
}

func TestDuplicateIDRejected(t *testing.T) {
	l := open(t, t.TempDir())
	a := msg("user", "a")
	if err := l.Append(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	b := msg("user", "b")
	b.ID = a.ID
	if err := l.Append(context.Background(), b); err == nil {
		t.Fatal("duplicate id accepted")
	}
	if l.Len() != 1 {
		t.Fatalf("len %d", l.Len())
	}
}

func TestConcurrentAppendsShareFsync(t *testing.T) {
	l := open(t, t.TempDir())
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := l.Append(context.Background(), msg("user", fmt.Sprintf("w%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if l.Len() != writers*each {
		t.Fatalf("len %d", l.Len())
	}
	page, err := l.Search(eventlog.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, b := range page.Items {
		ev, _ := events.Decode(b)
		ts := ev.EventBase().Timestamp.Time
		if !ts.After(last) {
			t.Fatal("timestamps not strictly increasing in log order")
		}
		last = ts
	}
}

func TestWaitWakesOnAppend(t *testing.T) {
	l := open(t, t.TempDir())
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background(), 0) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before any append: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := l.Append(context.Background(), msg("user", "x")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Wait(ctx, 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	// Legitimate sleep: close while Wait blocks (a Wait that starts on a
	// closed log is a different path).
	go func() { time.Sleep(10 * time.Millisecond); l.Close() }()
	if err := l.Wait(context.Background(), 5); !errors.Is(err, eventlog.ErrClosed) {
		t.Fatalf("wait on closed log: %v", err)
	}
}

func TestReadFrom(t *testing.T) {
	l := open(t, t.TempDir())
	evs := fill(t, l)
	items, err := l.ReadFrom(4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, items); fmt.Sprint(got) != fmt.Sprint([]string{evs[4].EventBase().ID, evs[5].EventBase().ID}) {
		t.Fatalf("got %v", got)
	}
	if _, err := l.ReadFrom(7, 1); err == nil {
		t.Fatal("out of range read accepted")
	}
}
