package startflow_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/localqueue"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/startflow"
)

// env is a start flow over real components: a store, a local queue,
// process sandboxes, the sandbox lifecycle, the start service and its
// worker, and an LLM that answers "hello". Users alice and bob exist.
type env struct {
	store acs.Store
	// reopen gives a new handle on the store's data (a restart), after
	// which store is not used.
	reopen func() acs.Store
	queue  *localqueue.Queue
	rt     *procsandbox.Runtime
	life   *sandboxes.Lifecycle
	svc    *startflow.Service
	w      *startflow.Worker
}

// envOptions say how an env differs from the default one (bbolt, the acs
// binary, a startup timeout of 30 s, no running cap, the default attempts).
type envOptions struct {
	// store opens the store (bbolt when its open is nil).
	store capStore
	// binary is the sandboxes' agent-server binary (testbin.ACS when "").
	binary string
	// timeout is the sandboxes' startup timeout (30 s when 0).
	timeout time.Duration
	// maxRunning caps each user's running sandboxes (0: no cap).
	maxRunning int
	// maxAttempts bounds a step's attempts (0: the default).
	maxAttempts int
	// placeOnSubmit makes the worker the service's Placer, as acs serve
	// wires them.
	placeOnSubmit bool
	// sandboxRoot holds the sandboxes' directories (a new temporary
	// directory when "").
	sandboxRoot string
}

// newEnv builds the environment o describes: every test of the package
// gets its wiring from here.
func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	if o.store.open == nil {
		o.store = capStores()[0]
	}
	if o.binary == "" {
		o.binary = testbin.ACS(t)
	}
	if o.timeout == 0 {
		o.timeout = 30 * time.Second
	}
	dir := t.TempDir()
	store, reopen := o.store.open(t)
	queue, err := localqueue.Open(filepath.Join(dir, "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { queue.Close() })
	if o.sandboxRoot == "" {
		o.sandboxRoot = filepath.Join(dir, "sandboxes")
	}
	rt, err := procsandbox.New(procsandbox.Config{Binary: o.binary, Root: o.sandboxRoot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	l := llmtest.New(llmtest.Reply{Text: "hello", Repeat: true})
	t.Cleanup(l.Close)
	cfg := llm.DefaultConfig()
	cfg.BaseURL = &l.URL
	for _, u := range []string{"alice", "bob"} {
		if err := store.CreateUser(ctx, acs.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	flow := startflow.Config{LLM: cfg, Sandboxes: sandboxes.Config{Specs: []acs.SandboxSpec{{ID: "acs-local"}}, PollInterval: 20 * time.Millisecond,
		MaxRunningSandboxes: o.maxRunning}, StartupTimeout: o.timeout, MaxAttempts: o.maxAttempts}
	box := sealbox.FromPassphrase("start flow test passphrase")
	life := &sandboxes.Lifecycle{Store: store, Runtime: rt, Config: flow.Defaults().Sandboxes}
	e := &env{store: store, reopen: reopen, queue: queue, rt: rt, life: life,
		svc: &startflow.Service{Store: store, Queue: queue, Sealer: box, Lifecycle: life},
		w:   startflow.NewWorker(store, queue, rt, box, flow)}
	if o.placeOnSubmit {
		e.svc.Placer = e.w
	}
	return e
}
