package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/netdrop"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

const sessionKey = "client-test-session-key"

// newAgentServer runs an agent server (its own constructor) behind an
// httptest server and returns a client of it.
func newAgentServer(t *testing.T) (*client.Agent, string, *llmtest.Server) {
	t.Helper()
	dir := t.TempDir()
	llm := llmtest.New(llmtest.Reply{Text: "Done.", Repeat: true})
	t.Cleanup(llm.Close)
	srv, err := agentserver.New(context.Background(), agentserver.Config{SessionKeys: []string{sessionKey},
		ConversationsDir: filepath.Join(dir, "conversations"), WorkspaceDir: filepath.Join(dir, "workspace"),
		BuildSHA: "unknown", BuildRef: "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return client.NewAgent(hs.URL, sessionKey), hs.URL, llm
}

// startRequestFor is an agent server start request using llm.
func startRequestFor(t *testing.T, llm *llmtest.Server, workdir string) *agentwire.StartConversationRequest {
	t.Helper()
	var req agentwire.StartConversationRequest
	body := `{"agent":{"kind":"Agent","tools":[],"llm":{"model":"openai/test-model","base_url":"` + llm.URL +
		`","api_key":"sk-test","num_retries":0,"usage_id":"agent"}},"workspace":{"working_dir":"` + workdir + `"}}`
	if err := strictjson.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// TestSubscribeResumesAfterADroppedConnection: the events socket's
// subscription reconnects after the connection drops and continues after
// the last event seen: every logged event arrives once, in order.
func TestSubscribeResumesAfterADroppedConnection(t *testing.T) {
	agent, _, llm := newAgentServer(t)
	ctx := ctxFor(t, 2*time.Minute)
	info, err := agent.CreateConversation(ctx, startRequestFor(t, llm, t.TempDir()))
	if err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	id := info.ID

	d := &netdrop.Net{}
	sctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var got []events.Event
	var subErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range agent.Subscribe(sctx, id, client.SubscribeOptions{All: true, HTTPClient: d.Client(), Backoff: 10 * time.Millisecond}) {
			mu.Lock()
			if err != nil {
				subErr = err
			} else {
				got = append(got, ev)
			}
			mu.Unlock()
		}
	}()
	received := func() []events.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]events.Event(nil), got...)
	}
	// caughtUp: every logged event arrived, and the conversation finished
	// its run of text.
	caughtUp := func(text string) bool {
		var logged []string
		for ev, err := range agent.Events(ctx, id, nil) {
			if err != nil {
				return false
			}
			logged = append(logged, ev.EventBase().ID)
		}
		ids := map[string]bool{}
		all := received()
		for _, ev := range all {
			ids[ev.EventBase().ID] = true
		}
		for _, l := range logged {
			if !ids[l] {
				return false
			}
		}
		c, err := agent.GetConversation(ctx, id)
		return sawText(all, text) && err == nil && c.ExecutionStatus == "finished"
	}

	if err := agent.SendMessage(ctx, id, message("first")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the first run's events on the socket", func() bool { return caughtUp("first") })
	before := len(received())
	// While the network is down, the second run happens in full: the
	// subscription can only see it by resuming.
	reopen := d.Down()
	if err := agent.SendMessage(ctx, id, message("second")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the second run to finish", func() bool {
		n, err := agent.CountEvents(ctx, id, client.Filter{"kind": {"MessageEvent"}})
		c, cerr := agent.GetConversation(ctx, id)
		return err == nil && cerr == nil && n == 4 && c.ExecutionStatus == "finished"
	})
	if sawText(received(), "second") {
		t.Fatal("the second message arrived while the network was down")
	}
	reopen()
	testwait.For(t, 30*time.Second, "the second run's events after the reconnection", func() bool { return caughtUp("second") })
	stop()
	<-done

	dials := d.Dials()
	if dials < 2 {
		t.Fatalf("%d dials: the subscription never reconnected", dials)
	}
	if subErr != nil {
		t.Fatalf("the subscription failed: %v", subErr)
	}
	all := received()
	if len(all) <= before {
		t.Fatalf("no events after the drop (%d before, %d in all)", before, len(all))
	}
	seen := map[string]bool{}
	for _, ev := range all {
		if seen[ev.EventBase().ID] {
			t.Fatalf("event %s (%s) delivered twice", ev.EventBase().ID, ev.Kind())
		}
		seen[ev.EventBase().ID] = true
	}
	// The logged events arrived in the log's order.
	var logged []string
	for ev, err := range agent.Events(ctx, id, nil) {
		if err != nil {
			t.Fatal(err)
		}
		logged = append(logged, ev.EventBase().ID)
	}
	i := 0
	for _, ev := range all {
		if i < len(logged) && ev.EventBase().ID == logged[i] {
			i++
		}
	}
	if i != len(logged) {
		t.Fatalf("only %d of %d logged events arrived in order", i, len(logged))
	}
}

// TestSubscribeEndsOnAPermanentClose: an unknown conversation or a wrong
// key ends the subscription with the server's close, without retrying.
func TestSubscribeEndsOnAPermanentClose(t *testing.T) {
	agent, url, _ := newAgentServer(t)
	ctx := ctxFor(t, 30*time.Second)
	for _, tc := range []struct {
		name  string
		agent *client.Agent
		code  websocket.StatusCode
	}{
		{"unknown conversation", agent, 4004},
		{"wrong key", client.NewAgent(url, "wrong"), 4001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &netdrop.Net{}
			var errs []error
			for ev, err := range tc.agent.Subscribe(ctx, "0123456789abcdef0123456789abcdef", client.SubscribeOptions{HTTPClient: d.Client()}) {
				if err == nil {
					t.Fatalf("an event: %v", ev)
				}
				errs = append(errs, err)
			}
			var ce websocket.CloseError
			if len(errs) != 1 || !errors.As(errs[0], &ce) || ce.Code != tc.code {
				t.Fatalf("errors %v, want one close %d", errs, tc.code)
			}
			if n := d.Dials(); n != 1 {
				t.Fatalf("%d dials, want 1", n)
			}
		})
	}
}

// sawText reports a MessageEvent of text among evs.
func sawText(evs []events.Event, text string) bool {
	for _, ev := range evs {
		if m, ok := ev.(*events.MessageEvent); ok && len(m.LLMMessage.Content) > 0 {
			if tc, ok := m.LLMMessage.Content[0].(*events.TextContent); ok && tc.Text == text {
				return true
			}
		}
	}
	return false
}
