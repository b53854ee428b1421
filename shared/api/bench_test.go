package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

// benchAPI is the V1 API over a boltstore seeded with n conversations of
// one user spread over 10 sandboxes (records only: the sandboxes read
// MISSING, so no runtime is involved).
type benchAPI struct {
	srv   *httptest.Server
	store *boltstore.Store
	ids   []string
	key   string
}

func newBenchAPI(b *testing.B, n int) *benchAPI {
	b.Helper()
	store := openStore(b)
	queue := openQueue(b)
	rt := openRuntime(b, "/nonexistent/acs")
	ctx := context.Background()
	key := "bench-key-0123456789"
	store.CreateUser(ctx, acs.User{ID: "u"})
	store.CreateAPIKey(ctx, acs.APIKey{ID: "k", UserID: "u", Hash: acs.HashKey(key)})
	now := time.Now().UTC()
	for i := 0; i < 10; i++ {
		store.CreateSandbox(ctx, acs.Sandbox{ID: fmt.Sprintf("sb%d", i), OwnerID: "u", Status: acs.SandboxMissing,
			SessionKeyHash: acs.HashKey(fmt.Sprintf("session-%d", i)), CreatedAt: now, UpdatedAt: now})
	}
	a := &benchAPI{store: store, key: key}
	for i := 0; i < n; i++ {
		id := acs.NewID()
		title := fmt.Sprintf("Conversation %d about topic %d", i, i%50)
		model := "openai/gpt"
		c := acs.Conversation{ID: id, OwnerID: "u", SandboxID: fmt.Sprintf("sb%d", i%10), Title: &title, LLMModel: &model,
			ExecutionStatus: "finished", Metrics: []byte(`{"accumulated_cost":0.01}`),
			CreatedAt: now.Add(time.Duration(i) * time.Millisecond), UpdatedAt: now}
		if err := store.CreateConversation(ctx, c); err != nil {
			b.Fatal(err)
		}
		a.ids = append(a.ids, id)
	}
	flow := startflow.Config{Sandboxes: sandboxes.Config{Specs: []acs.SandboxSpec{{ID: "acs-local"}}}}
	v1 := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue, Runtime: rt,
		Flow: flow, Sealer: sealbox.FromPassphrase("bench passphrase")})})
	a.srv = httptest.NewServer(v1.Handler())
	b.Cleanup(a.srv.Close)
	return a
}

func (a *benchAPI) get(b *testing.B, path string) {
	req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		b.Fatalf("%s: %d %s", path, res.StatusCode, buf.Bytes())
	}
}

// BenchmarkV1At10k measures the conversation reads a UI makes, with 10,000
// conversations stored for the user: a batch GET of 100 ids, a search page
// of 100 (newest first, no filter and with title__contains), a count.
func BenchmarkV1At10k(b *testing.B) {
	a := newBenchAPI(b, 10000)
	q := url.Values{}
	for i := 0; i < 100; i++ {
		q.Add("ids", a.ids[i*97%len(a.ids)])
	}
	batch := "/api/v1/app-conversations?" + q.Encode()
	for _, tc := range []struct{ name, path string }{
		{"get-100-by-ids", batch},
		{"search-page-100", "/api/v1/app-conversations/search?limit=100"},
		{"search-title-contains", "/api/v1/app-conversations/search?limit=100&title__contains=topic%2042"},
		{"count", "/api/v1/app-conversations/count"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				a.get(b, tc.path)
			}
		})
	}
}

// BenchmarkWebhookIngestion measures event ingestion through
// POST /api/v1/webhooks/events/{id}: batches of 50 new events (user
// messages, state updates, agent errors), every batch with fresh ids so each
// event is stored rather than deduplicated, reported as events/s.
func BenchmarkWebhookIngestion(b *testing.B) {
	a := newBenchAPI(b, 1)
	ctx := context.Background()
	a.store.UpdateSandbox(ctx, "sb0", func(s *acs.Sandbox) error { s.Status = acs.SandboxRunning; return nil })
	conv := a.ids[0]
	const batch = 50
	mkBatch := func() []byte {
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i := 0; i < batch; i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			var ev events.Event
			switch i % 3 {
			case 0:
				ev = &events.MessageEvent{Base: events.Base{Source: events.SourceUser},
					LLMMessage: events.Message{Role: events.RoleUser, Content: []events.Content{events.TextItem(fmt.Sprintf("message %d with some text to index", i))}}}
			case 1:
				ev = &events.ConversationStateUpdateEvent{Key: "execution_status", Value: []byte(`"running"`)}
			default:
				ev = &events.AgentErrorEvent{ToolName: "terminal", ToolCallID: "call_1", Error: "an error the model can act on"}
			}
			buf.Write(events.MustEncode(events.Stamp(ev)))
		}
		buf.WriteByte(']')
		return buf.Bytes()
	}
	// Every iteration sends a batch of new events (fresh ids): resending
	// stored ids would only measure the dedup. Batches are built 256 at a
	// time with the timer stopped.
	const chunk = 256
	var bodies [][]byte
	n := 0
	for b.Loop() {
		if n%chunk == 0 {
			b.StopTimer()
			bodies = bodies[:0]
			for range chunk {
				bodies = append(bodies, mkBatch())
			}
			b.StartTimer()
		}
		req, _ := http.NewRequest("POST", a.srv.URL+"/api/v1/webhooks/events/"+conv, bytes.NewReader(bodies[n%chunk]))
		req.Header.Set("X-Session-API-Key", "session-0")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		// Read to the end, as the agent server's pusher does, so the
		// connection is reused.
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("webhook: %d", res.StatusCode)
		}
		n++
	}
	elapsed := b.Elapsed()
	if got, err := a.store.CountEvents(ctx, conv, acs.EventFilter{}); err != nil || got != n*batch {
		b.Fatalf("%d batches of %d stored %d events (%v): some were not new", n, batch, got, err)
	}
	b.ReportMetric(float64(n*batch)/elapsed.Seconds(), "events/s")
}
