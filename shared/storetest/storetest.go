// Package storetest is the conformance suite of the store contracts
// (acs.UserStore, acs.StartTaskStore, …): one suite per contract, each a
// list of small named tests that run on an empty store of their own, so a
// failure in one never changes what another sees. An adapter that
// implements every contract (acs.Store) runs them all with Run; one that
// implements some runs their suites (RunUserStoreTests, …).
//
// The package also holds the stored-data fixture (WriteFixture,
// CheckFixture) with which adapters check that data written by an older
// version still reads.
package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Harness makes an empty store of contract S for one test; the adapter
// closes it in a t.Cleanup.
type Harness[S any] func(t *testing.T) S

// Test is one named conformance test of contract S.
type Test[S any] struct {
	Name string
	Run  func(t *testing.T, s S)
}

// runTests runs each test as a subtest, on a store of its own.
func runTests[S any](t *testing.T, h Harness[S], tests []Test[S]) {
	for _, tc := range tests {
		t.Run(tc.Name, func(t *testing.T) { tc.Run(t, h(t)) })
	}
}

// narrow makes a harness of one contract from a harness of them all.
func narrow[S any](h Harness[acs.Store]) Harness[S] {
	return func(t *testing.T) S { return any(h(t)).(S) }
}

// Run runs every contract's suite, each as a subtest named after its
// contract, on stores made by h.
func Run(t *testing.T, h Harness[acs.Store]) {
	t.Run("UserStore", func(t *testing.T) { RunUserStoreTests(t, narrow[acs.UserStore](h)) })
	t.Run("StartTaskStore", func(t *testing.T) { RunStartTaskStoreTests(t, narrow[acs.StartTaskStore](h)) })
	t.Run("SandboxStore", func(t *testing.T) { RunSandboxStoreTests(t, narrow[acs.SandboxStore](h)) })
	t.Run("ConversationStore", func(t *testing.T) { RunConversationStoreTests(t, narrow[acs.ConversationStore](h)) })
	t.Run("EventStore", func(t *testing.T) { RunEventStoreTests(t, narrow[acs.EventStore](h)) })
	t.Run("QuotaStore", func(t *testing.T) { RunQuotaStoreTests(t, narrow[acs.QuotaStore](h)) })
	t.Run("SettingsStore", func(t *testing.T) { RunSettingsStoreTests(t, narrow[acs.SettingsStore](h)) })
	t.Run("SecretStore", func(t *testing.T) { RunSecretStoreTests(t, narrow[acs.SecretStore](h)) })
	t.Run("PendingMessageStore", func(t *testing.T) { RunPendingMessageStoreTests(t, narrow[acs.PendingMessageStore](h)) })
	t.Run("SessionStore", func(t *testing.T) { RunSessionStoreTests(t, narrow[acs.SessionStore](h)) })
	t.Run("IdentityStore", func(t *testing.T) { RunIdentityStoreTests(t, narrow[acs.IdentityStore](h)) })
	t.Run("StartWrites", func(t *testing.T) { RunStartWritesTests(t, h) })
}

var ctx = context.Background()

// base is a fixed instant; records are spaced from it so orders are exact.
var base = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func at(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got %v, want %v", err, kind)
	}
}

func strp(s string) *string { return &s }

func timep(i int) *time.Time {
	v := at(i)
	return &v
}

// pageAll pages a listing with limit per page to the end, checking that
// every page but the last is full and that no item comes twice.
func pageAll[T any](t *testing.T, limit int, list func(acs.ListOptions) (acs.Page[T], error), id func(T) string) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	opts := acs.ListOptions{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		page, err := list(opts)
		must(t, err)
		for _, it := range page.Items {
			if seen[id(it)] {
				t.Fatalf("%s listed twice (%v)", id(it), ids)
			}
			seen[id(it)] = true
			ids = append(ids, id(it))
		}
		if page.Next == "" {
			return ids
		}
		if len(page.Items) != limit {
			t.Fatalf("a page of %d with a next page (limit %d)", len(page.Items), limit)
		}
		opts.PageToken = page.Next
	}
}

// contend runs try(0) … try(n-1) at once and returns how many succeeded;
// an error other than lost (the expected way to lose the race) fails the
// test.
func contend(t *testing.T, n int, lost error, try func(i int) error) int {
	t.Helper()
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := try(i); err == nil {
				won.Add(1)
			} else if !errors.Is(err, lost) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return int(won.Load())
}
