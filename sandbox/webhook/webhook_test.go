package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/eventlog"
	"github.com/acs-project/acs/sandbox/webhook"
)

// receiver is a control-plane stand-in recording what it is sent. failFirst
// requests are answered 503.
type receiver struct {
	mu        sync.Mutex
	srv       *httptest.Server
	ids       []string
	infos     []string
	idsAtInfo []int // events received when each info arrived
	batches   int
	failFirst int
	keys      map[string]bool
	paths     map[string]bool
	got       chan struct{}
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst, keys: map[string]bool{}, paths: map[string]bool{}, got: make(chan struct{}, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.keys[req.Header.Get("X-Session-API-Key")] = true
		if r.failFirst > 0 {
			r.failFirst--
			http.Error(w, "try later", 503)
			return
		}
		switch {
		case strings.Contains(req.URL.Path, "/events/"):
			r.paths[req.URL.Path] = true
			var evs []struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(b, &evs); err != nil {
				t.Errorf("event batch is not a JSON array: %s", b)
			}
			for _, e := range evs {
				r.ids = append(r.ids, e.ID)
			}
			r.batches++
		case strings.HasSuffix(req.URL.Path, "/conversations"):
			var info struct {
				Title string `json:"title"`
			}
			json.Unmarshal(b, &info)
			r.infos = append(r.infos, info.Title)
			r.idsAtInfo = append(r.idsAtInfo, len(r.ids))
		}
		w.Write([]byte(`{"success":true}`))
		r.got <- struct{}{}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

func appendN(t testing.TB, l *eventlog.Log, n int, prefix string) []string {
	var ids []string
	for i := 0; i < n; i++ {
		ev := &events.PauseEvent{Base: events.Base{ID: fmt.Sprintf("%s-%03d", prefix, i)}}
		if err := l.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

func TestEventsDeliveredInOrderThroughFailures(t *testing.T) {
	r := newReceiver(t, 3)
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id := uuid.New()
	p := webhook.New(webhook.Config{BaseURLs: []string{r.srv.URL + "/api/v1/webhooks"}, SessionKey: "sk", BatchSize: 7, MaxBackoff: 20 * time.Millisecond})
	defer p.Close()
	want := appendN(t, l, 10, "a")
	p.Watch(id, l, filepath.Join(dir, "webhook"))
	want = append(want, appendN(t, l, 15, "b")...)
	testwait.For(t, 15*time.Second, "all events delivered", func() bool { return len(r.received()) >= len(want) })
	if got := r.received(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered\n%v\nwant\n%v", got, want)
	}
	if !r.keys["sk"] || !r.paths["/api/v1/webhooks/events/"+agentwire.Hex(id)] {
		t.Fatalf("keys %v paths %v", r.keys, r.paths)
	}
	if r.batches < 4 {
		t.Fatalf("batch size not honoured: %d batches for 25 events of at most 7", r.batches)
	}
}

func TestResumesFromCursorAfterRestart(t *testing.T) {
	r := newReceiver(t, 0)
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id := uuid.New()
	cursor := filepath.Join(dir, "webhook")
	cfg := webhook.Config{BaseURLs: []string{r.srv.URL}, SessionKey: "sk"}
	first := appendN(t, l, 5, "first")
	p := webhook.New(cfg)
	p.Watch(id, l, cursor)
	testwait.For(t, 15*time.Second, "first batch", func() bool { return len(r.received()) == 5 })
	if err := p.Flush(context.Background(), id, l, cursor); err != nil {
		t.Fatal(err)
	}
	p.Close()

	second := appendN(t, l, 4, "second") // appended while no pusher runs
	p2 := webhook.New(cfg)
	defer p2.Close()
	p2.Watch(id, l, cursor)
	testwait.For(t, 15*time.Second, "second batch", func() bool { return len(r.received()) >= 9 })
	// Legitimate sleep: a duplicate delivery would arrive within this quiet
	// period; there is no event to wait for when none comes.
	time.Sleep(50 * time.Millisecond)
	if got := r.received(); fmt.Sprint(got) != fmt.Sprint(append(first, second...)) {
		t.Fatalf("after restart delivered %v", got)
	}
}

func TestInfoPushCoalescesAndRetries(t *testing.T) {
	r := newReceiver(t, 2)
	p := webhook.New(webhook.Config{BaseURLs: []string{r.srv.URL}, SessionKey: "sk", MaxBackoff: 20 * time.Millisecond})
	defer p.Close()
	id := uuid.New()
	title := "v1"
	var mu sync.Mutex
	get := func() *agentwire.ConversationInfo {
		mu.Lock()
		defer mu.Unlock()
		t := title
		return &agentwire.ConversationInfo{ID: id.String(), Title: &t}
	}
	p.NotifyInfo(id, get)
	mu.Lock()
	title = "v2"
	mu.Unlock()
	p.NotifyInfo(id, get)
	testwait.For(t, 15*time.Second, "info delivered", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.infos) > 0 && r.infos[len(r.infos)-1] == "v2"
	})
}

// A delayed info (NotifyInfoAfter) goes out once its delay is over, not
// before; an immediate one for the conversation meanwhile replaces it, and
// unwatching the conversation drops it. A later delayed info of another
// conversation (a marker) shows what the first one's timer did.
func TestInfoAfterADelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	info := func(id uuid.UUID, title string) func() *agentwire.ConversationInfo {
		return func() *agentwire.ConversationInfo { return &agentwire.ConversationInfo{ID: id.String(), Title: &title} }
	}
	for _, tc := range []struct {
		name string
		then func(p *webhook.Pusher, id uuid.UUID)
		want []string
	}{
		{"due", func(*webhook.Pusher, uuid.UUID) {}, []string{"late", "marker"}},
		{"replaced by an immediate info", func(p *webhook.Pusher, id uuid.UUID) { p.NotifyInfo(id, info(id, "now")) }, []string{"now", "marker"}},
		{"unwatched", func(p *webhook.Pusher, id uuid.UUID) { p.Unwatch(id) }, []string{"marker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, 0)
			p := webhook.New(webhook.Config{BaseURLs: []string{r.srv.URL}, SessionKey: "sk"})
			defer p.Close()
			l, err := eventlog.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			id := uuid.New()
			p.Watch(id, l, filepath.Join(t.TempDir(), "webhook"))
			asked := time.Now()
			p.NotifyInfoAfter(id, info(id, "late"), delay)
			tc.then(p, id)
			other := uuid.New()
			p.NotifyInfoAfter(other, info(other, "marker"), 2*delay)
			testwait.For(t, 15*time.Second, "the marker delivered", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return len(r.infos) > 0 && r.infos[len(r.infos)-1] == "marker"
			})
			if since := time.Since(asked); since < 2*delay {
				t.Fatalf("the marker arrived %s after it was asked for, before its delay", since)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if strings.Join(r.infos, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("infos delivered %q, want %q", r.infos, tc.want)
			}
		})
	}
}

// A conversation's info goes out only after the events logged before it
// were acknowledged, even when their delivery is being retried: a client
// that sees a status on the control plane finds the events that led to it.
func TestInfoWaitsForEarlierEvents(t *testing.T) {
	r := newReceiver(t, 4)
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id := uuid.New()
	p := webhook.New(webhook.Config{BaseURLs: []string{r.srv.URL}, SessionKey: "sk", BatchSize: 3, MaxBackoff: 20 * time.Millisecond})
	defer p.Close()
	want := appendN(t, l, 10, "e")
	p.Watch(id, l, filepath.Join(dir, "webhook"))
	title := "finished"
	p.NotifyInfo(id, func() *agentwire.ConversationInfo { return &agentwire.ConversationInfo{ID: id.String(), Title: &title} })
	testwait.For(t, 15*time.Second, "info delivered", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.infos) > 0
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idsAtInfo[0] < len(want) {
		t.Fatalf("the info arrived after %d of the %d events logged before it", r.idsAtInfo[0], len(want))
	}
}

func TestDisabledWithoutURLs(t *testing.T) {
	p := webhook.New(webhook.Config{})
	defer p.Close()
	if p.Enabled() {
		t.Fatal("enabled without URLs")
	}
	l, _ := eventlog.Open(t.TempDir())
	defer l.Close()
	p.Watch(uuid.New(), l, filepath.Join(t.TempDir(), "c")) // no-op, must not panic or block
}

// BenchmarkDeliveryLatency measures the time from an event's durable append
// to its arrival at the control plane's webhook (target: ≤ 3 ms).
func BenchmarkDeliveryLatency(b *testing.B) {
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- time.Now()
		w.Write([]byte(`{"success":true}`))
	}))
	defer srv.Close()
	dir := b.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	p := webhook.New(webhook.Config{BaseURLs: []string{srv.URL}})
	defer p.Close()
	p.Watch(uuid.New(), l, filepath.Join(dir, "cursor"))
	var total time.Duration
	n := 0
	for b.Loop() {
		ev := &events.PauseEvent{}
		if err := l.Append(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
		appended := time.Now()
		total += (<-arrived).Sub(appended)
		n++
	}
	b.ReportMetric(float64(total.Microseconds())/float64(n)/1000, "ms/delivery")
}

// TestBatchesOnlyUnderLoad: an event appended to an idle pipe is posted
// alone; the events appended while that post is in flight wait for
// it and then go together, in order, in one post (that nothing waits when
// idle is measured by BenchmarkDeliveryLatency).
func TestBatchesOnlyUnderLoad(t *testing.T) {
	release := make(chan struct{})
	inFlight := make(chan struct{}, 1)
	var mu sync.Mutex
	var batches [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var evs []struct {
			ID string `json:"id"`
		}
		if err := json.NewDecoder(req.Body).Decode(&evs); err != nil {
			t.Errorf("event batch is not a JSON array: %v", err)
		}
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		mu.Lock()
		batches = append(batches, ids)
		first := len(batches) == 1
		mu.Unlock()
		if first {
			inFlight <- struct{}{}
			<-release
		}
		w.Write([]byte(`{"success":true}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := webhook.New(webhook.Config{BaseURLs: []string{srv.URL}})
	defer p.Close()
	p.Watch(uuid.New(), l, filepath.Join(dir, "webhook"))
	first := appendN(t, l, 1, "idle")
	<-inFlight // the first event went out alone, without waiting for company
	load := appendN(t, l, 10, "load")
	close(release)
	got := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return append([][]string(nil), batches...)
	}
	testwait.For(t, 15*time.Second, "all events delivered", func() bool { return len(got()) >= 2 })
	if b := got(); fmt.Sprint(b) != fmt.Sprint([][]string{first, load}) {
		t.Fatalf("batches %v, want %v then %v", b, first, load)
	}
}
