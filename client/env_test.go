package client_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/localqueue"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

func TestMain(m *testing.M) { testbin.Main(m) }

const (
	adminKey = "client-admin-key-0123456789"
	bobKey   = "client-bob-key-0123456789ab"
)

// env is a real control plane: the V1 API over a bbolt store, a local
// queue and process sandboxes running the acs binary, with the start-flow
// worker, behind an httptest server.
type env struct {
	url   string
	llm   *llmtest.Server
	store *boltstore.Store
}

func newEnv(t *testing.T) *env { return newEnvStreamLimit(t, 0) }

// newEnvStreamLimit is newEnv whose stream-start answers end after limit
// (api.Deps.StreamLimit; 0: at READY or ERROR), as behind a proxy that
// limits a response's time.
func newEnvStreamLimit(t *testing.T, limit time.Duration) *env {
	t.Helper()
	dir := t.TempDir()
	store, err := boltstore.Open(filepath.Join(dir, "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	queue, err := localqueue.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { queue.Close() })
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: filepath.Join(dir, "sandboxes")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	ctx := context.Background()
	for _, u := range []struct {
		id, key string
		admin   bool
	}{{"admin", adminKey, true}, {"bob", bobKey, false}} {
		if err := store.CreateUser(ctx, acs.User{ID: u.id, Name: u.id, Admin: u.admin}); err != nil {
			t.Fatal(err)
		}
		if err := store.CreateAPIKey(ctx, acs.APIKey{ID: u.id + "-k", UserID: u.id, Hash: acs.HashKey(u.key)}); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{llm: llmtest.New(llmtest.Reply{Text: "Done.", Repeat: true}), store: store}
	t.Cleanup(e.llm.Close)
	cfg := llm.DefaultConfig()
	cfg.Model, cfg.BaseURL, cfg.NumRetries = "test", &e.llm.URL, 0
	flow := startflow.Config{LLM: cfg, StartupTimeout: 30 * time.Second, Sandboxes: sandboxes.Config{
		PollInterval: 50 * time.Millisecond, Specs: []acs.SandboxSpec{{ID: "acs-local"}, {ID: "second"}}}}
	sealer := sealbox.FromPassphrase("client test passphrase")
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	flow.Sandboxes.WebhookBaseURL = srv.URL + "/api/v1/webhooks"
	srv.Config.Handler = api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue,
		Runtime: rt, Flow: flow, Sealer: sealer}), StreamLimit: limit}).Handler()
	w := startflow.NewWorker(store, queue, rt, sealer, flow)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(wctx, 2); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e.url = srv.URL
	return e
}

// ctx is a test's context with a deadline.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// message is a user message of text.
func message(text string) *agentwire.SendMessageRequest {
	return &agentwire.SendMessageRequest{Role: "user", Content: []events.Content{&events.TextContent{Text: text}}, Run: true}
}

// startRequest starts a conversation with an initial message.
func startRequest(text string) *v1wire.StartRequest {
	return &v1wire.StartRequest{InitialMessage: message(text)}
}

var _ = client.New
