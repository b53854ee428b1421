package agentserver

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
)

// BenchmarkSocketFanout measures delivering 10k events to 10 WebSocket
// subscribers of one conversation: from the first append until every
// subscriber has read every event.
func BenchmarkSocketFanout(b *testing.B) {
	const subscribers, total = 10, 10_000
	dir := b.TempDir()
	srv, err := New(context.Background(), Config{ConversationsDir: filepath.Join(dir, "c"), WorkspaceDir: filepath.Join(dir, "w")})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	cfg := llm.DefaultConfig()
	for b.Loop() {
		b.StopTimer()
		id := uuid.New()
		c, err := agent.Create(context.Background(), id, agentwire.StartConversationRequest{Agent: &agentwire.Agent{Kind: "Agent", LLM: cfg},
			Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "w")}, MaxIterations: 1}, agent.Options{Dir: filepath.Join(dir, "c", agentwire.Hex(id))})
		if err != nil {
			b.Fatal(err)
		}
		srv.mu.Lock()
		srv.convs[id] = c
		srv.mu.Unlock()
		var ready, done sync.WaitGroup
		for i := 0; i < subscribers; i++ {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ctx := context.Background()
				conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/sockets/events/"+id.String(), nil)
				if err != nil {
					b.Error(err)
					ready.Done()
					return
				}
				defer conn.CloseNow()
				conn.SetReadLimit(1 << 20)
				conn.Read(ctx) // full_state
				ready.Done()
				for n := 0; n < total; n++ {
					if _, _, err := conn.Read(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		ready.Wait()
		batch := make([]events.Event, 0, 100)
		b.StartTimer()
		start := time.Now()
		for i := 0; i < total; i++ {
			batch = append(batch, &events.PauseEvent{})
			if len(batch) == cap(batch) {
				if err := c.Log().Append(context.Background(), batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		done.Wait()
		b.ReportMetric(float64(total*subscribers)/time.Since(start).Seconds(), "frames/s")
	}
}
