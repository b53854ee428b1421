package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// A subscriber receives full_state snapshots in the order they were
// taken, so the last one it holds is the newest: snapshots broadcast at
// once by several goroutines (each Interrupt broadcasts one) never
// arrive older than the one before.
func TestFullStateSnapshotsArriveInOrder(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL = &srv.URL
	dir := t.TempDir()
	c, err := agent.Create(context.Background(), uuid.New(), agentwire.StartConversationRequest{
		Agent:     &agentwire.Agent{Kind: "Agent", LLM: cfg},
		Workspace: agentwire.Workspace{WorkingDir: filepath.Join(dir, "work")}, MaxIterations: 10},
		agent.Options{Dir: filepath.Join(dir, "conv")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frames, unsubscribe := c.Subscribe()
	defer unsubscribe()
	const goroutines, each = 8, 30
	var got []time.Time // read once done is closed
	done, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	go func() {
		defer close(done)
		for len(got) < goroutines*each {
			var f agent.Transient
			select {
			case f = <-frames:
			case <-stop:
				return
			}
			var e struct {
				Key       string
				Timestamp events.Time
			}
			if err := json.Unmarshal(f.Frame, &e); err != nil {
				t.Error(err)
				return
			}
			if e.Key == "full_state" {
				got = append(got, e.Timestamp.Time)
			}
		}
	}()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := c.Interrupt(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	testwait.For(t, 10*time.Second, "every full_state frame", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	late := 0
	for i := 1; i < len(got); i++ {
		if got[i].Before(got[i-1]) {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d of %d full_state frames arrived after a newer one", late, len(got))
	}
}
