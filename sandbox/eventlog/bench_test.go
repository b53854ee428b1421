package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/eventlog"
)

// bigLog is a 100k-event log built once per benchmark process (in batches, so
// building it does not take 100k fsyncs).
var (
	bigOnce sync.Once
	bigDir  string
	bigLog  *eventlog.Log
	bigMid  time.Time
)

const bigN = 100_000

func big(b *testing.B) *eventlog.Log {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "eventlog-bench-")
		if err != nil {
			b.Fatal(err)
		}
		bigDir = dir
		l, err := eventlog.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]events.Event, 0, 1000)
		for i := 0; i < bigN; i++ {
			var ev events.Event
			switch i % 4 {
			case 0:
				ev = msg("user", fmt.Sprintf("user message %d about the parser", i))
			case 1:
				ev = msg("agent", fmt.Sprintf("agent reply %d", i))
			default:
				ev = state("execution_status", `"running"`)
			}
			batch = append(batch, ev)
			if i == bigN/2 {
				bigMid = time.Now()
			}
			if len(batch) == cap(batch) {
				if err := l.Append(context.Background(), batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		// Closed and reopened, so no background checkpoint of the build
		// is still being written when a benchmark starts.
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		if l, err = eventlog.Open(dir); err != nil {
			b.Fatal(err)
		}
		bigLog = l
	})
	return bigLog
}

// BenchmarkAppend measures one durable append (encode + write + fsync).
func BenchmarkAppend(b *testing.B) {
	l, err := eventlog.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Append(context.Background(), msg("user", "hello world")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel measures appends from concurrent writers, which
// share fsyncs (group commit).
func BenchmarkAppendParallel(b *testing.B) {
	l, err := eventlog.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Append(context.Background(), msg("user", "hello world")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppendOn100k measures a durable append to a log that already holds
// 100k events.
func BenchmarkAppendOn100k(b *testing.B) {
	l := big(b)
	b.ResetTimer()
	for b.Loop() {
		if err := l.Append(context.Background(), msg("user", "one more")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearch100k measures searches of a 100k-event log.
func BenchmarkSearch100k(b *testing.B) {
	l := big(b)
	mid := bigMid
	cases := []struct {
		name string
		q    eventlog.Query
	}{
		{"first-page", eventlog.Query{Limit: 100}},
		{"desc-last-page", eventlog.Query{Limit: 100, Order: events.SortTimestampDesc}},
		{"kind", eventlog.Query{Limit: 100, Filter: eventlog.Filter{Kind: "MessageEvent"}}},
		{"source-desc", eventlog.Query{Limit: 100, Order: events.SortTimestampDesc, Filter: eventlog.Filter{Source: "agent"}}},
		{"body-rare", eventlog.Query{Limit: 100, Filter: eventlog.Filter{Body: "message 99996 about"}}},
		{"time-range", eventlog.Query{Limit: 100, Filter: eventlog.Filter{TimestampGTE: &mid}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Search(c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("count-kind", func(b *testing.B) {
		for b.Loop() {
			l.Count(eventlog.Filter{Kind: "MessageEvent"})
		}
	})
}

// checkpointBig leaves a checkpoint covering the whole 100k-event log, as a
// clean close does.
func checkpointBig(b *testing.B) {
	big(b)
	l, err := eventlog.Open(bigDir)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpen100k measures reopening a 100k-event log after a clean close
// (an agent-server restart): the index comes from the checkpoint.
func BenchmarkOpen100k(b *testing.B) {
	checkpointBig(b)
	for b.Loop() {
		l, err := eventlog.Open(bigDir)
		if err != nil {
			b.Fatal(err)
		}
		if l.Len() < bigN {
			b.Fatalf("len %d", l.Len())
		}
		l.Close()
	}
}

// BenchmarkFullScanOpen100k measures reopening a 100k-event log without a
// checkpoint (re-indexing every record), as after an upgrade or when the
// checkpoint is unusable.
func BenchmarkFullScanOpen100k(b *testing.B) {
	big(b)
	for b.Loop() {
		b.StopTimer()
		if err := os.Remove(filepath.Join(bigDir, eventlog.CheckpointName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
		b.StartTimer()
		l, err := eventlog.Open(bigDir)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if l.Len() < bigN {
			b.Fatalf("len %d", l.Len())
		}
		l.Close()
		b.StartTimer()
	}
}

// BenchmarkReopenFirstSearch100k measures an agent server restarting on a
// 100k-event log until it has answered its first search (the latest page of
// events) and a body search (goal: 200 ms).
func BenchmarkReopenFirstSearch100k(b *testing.B) {
	checkpointBig(b)
	for b.Loop() {
		l, err := eventlog.Open(bigDir)
		if err != nil {
			b.Fatal(err)
		}
		page, err := l.Search(eventlog.Query{Limit: 100, Order: events.SortTimestampDesc})
		if err != nil || len(page.Items) != 100 {
			b.Fatalf("first search: %d items, %v", len(page.Items), err)
		}
		if _, err := l.Search(eventlog.Query{Limit: 100, Order: events.SortTimestampDesc, Filter: eventlog.Filter{Body: "parser"}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		bigLog.Close()
		os.RemoveAll(bigDir)
	}
	for _, l := range bodyLogs {
		l.Close()
	}
	for _, d := range bodyDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// bodyLogs are logs of 1k, 10k and 100k events (a quarter user messages, a
// quarter agent messages, half state updates) with "needle" in three user
// messages: at the start, the middle and the end. Built once per size and
// removed by TestMain.
var (
	bodyMu   sync.Mutex
	bodyLogs = map[int]*eventlog.Log{}
	bodyDirs []string
)

func bodyLog(b *testing.B, n int) *eventlog.Log {
	bodyMu.Lock()
	defer bodyMu.Unlock()
	if l := bodyLogs[n]; l != nil {
		return l
	}
	dir, err := os.MkdirTemp("", "eventlog-bench-body-")
	if err != nil {
		b.Fatal(err)
	}
	bodyDirs = append(bodyDirs, dir)
	l, err := eventlog.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]events.Event, 0, 1000)
	for i := 0; i < n; i++ {
		var ev events.Event
		switch {
		case i == 0 || i == n/2 || i == n-4:
			ev = msg("user", fmt.Sprintf("user message %d: the NEEDLE is here", i))
		case i%4 == 0:
			ev = msg("user", fmt.Sprintf("user message %d about the parser", i))
		case i%4 == 1:
			ev = msg("agent", fmt.Sprintf("agent reply %d: I looked at the parser and fixed the tokenizer", i))
		default:
			ev = state("execution_status", `"running"`)
		}
		batch = append(batch, ev)
		if len(batch) == cap(batch) || i == n-1 {
			if err := l.Append(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	bodyLogs[n] = l
	return l
}

// BenchmarkSearchBody measures the first page of a body search that
// matches three events, on logs of growing length: the cost per request
// must stay flat as the log grows (issue 11, defect 9).
func BenchmarkSearchBody(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			l := bodyLog(b, n)
			for _, order := range []events.EventSortOrder{events.SortTimestamp, events.SortTimestampDesc} {
				b.Run(string(order), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := l.Search(eventlog.Query{Limit: 100, Order: order, Filter: eventlog.Filter{Body: "needle"}}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
