package api_test

import (
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/localqueue"
	"github.com/acs-project/acs/shared/procsandbox"
)

// The embedded adapters every API test environment is built from (newEnv,
// newVEnv and the tests that need a bare API), each in its own temporary
// directory and closed when the test ends.

// openStore opens a fresh bbolt store.
func openStore(tb testing.TB) *boltstore.Store {
	tb.Helper()
	store, err := boltstore.Open(filepath.Join(tb.TempDir(), "acs.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	return store
}

// openQueue opens a fresh local queue.
func openQueue(tb testing.TB) *localqueue.Queue {
	tb.Helper()
	queue, err := localqueue.Open(filepath.Join(tb.TempDir(), "queue.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { queue.Close() })
	return queue
}

// openRuntime makes a process-sandbox runtime of binary ("/nonexistent/acs"
// where no route under test starts a sandbox).
func openRuntime(tb testing.TB, binary string) *procsandbox.Runtime {
	tb.Helper()
	rt, err := procsandbox.New(procsandbox.Config{Binary: binary, Root: filepath.Join(tb.TempDir(), "sandboxes")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rt.Close)
	return rt
}
