package accounts_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
)

func TestEnsureAdminBootstrapKey(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, b := acs.HashKey("bootstrap-key-a-0123456789"), acs.HashKey("bootstrap-key-b-0123456789")
	works := func(hash string) bool {
		t.Helper()
		k, err := store.GetAPIKeyByHash(ctx, hash)
		if errors.Is(err, acs.ErrNotFound) {
			return false
		} else if err != nil {
			t.Fatal(err)
		}
		if k.UserID != accounts.AdminID {
			t.Fatalf("key of %q", k.UserID)
		}
		return true
	}
	ensure := func(hash string) {
		t.Helper()
		if err := accounts.EnsureAdmin(ctx, store, hash, "prefix"); err != nil {
			t.Fatal(err)
		}
	}

	// Concurrent first starts: one admin, one key.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- accounts.EnsureAdmin(ctx, store, a, "prefix") }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if u, err := store.GetUser(ctx, accounts.AdminID); err != nil || !u.Admin {
		t.Fatalf("admin user: %+v %v", u, err)
	}
	if keys, _ := store.ListAPIKeys(ctx, accounts.AdminID); len(keys) != 1 || !works(a) {
		t.Fatalf("admin keys after first start: %+v", keys)
	}
	issued, err := accounts.IssueKey(ctx, store, accounts.AdminID, "issued", "", events.Now().Time)
	if err != nil {
		t.Fatal(err)
	}

	// Revoked, then restarted with the same key: it stays revoked.
	k, _ := store.GetAPIKeyByHash(ctx, a)
	if err := store.DeleteAPIKey(ctx, accounts.AdminID, k.ID); err != nil {
		t.Fatal(err)
	}
	ensure(a)
	ensure(a)
	if works(a) {
		t.Fatal("a revoked bootstrap key came back")
	}

	// A new key: registered, the old one revoked, issued keys kept.
	ensure(b)
	ensure(b)
	if !works(b) || works(a) || !works(acs.HashKey(issued.Key)) {
		t.Fatalf("after the change: b %v, a %v, issued %v", works(b), works(a), works(acs.HashKey(issued.Key)))
	}
	// Back to the first value: that is a change too.
	ensure(a)
	if !works(a) || works(b) || !works(acs.HashKey(issued.Key)) {
		t.Fatalf("after changing back: a %v, b %v", works(a), works(b))
	}
	if keys, _ := store.ListAPIKeys(ctx, accounts.AdminID); len(keys) != 2 {
		t.Fatalf("admin keys: %+v", keys)
	}
	// The marker is no user's secret.
	if list, _ := store.ListSecrets(ctx, accounts.AdminID); len(list) != 0 {
		t.Fatalf("the admin's secrets: %+v", list)
	}
}

// TestBootstrapKeyChangeEndsItsSessions: a new bootstrap key ends the
// sessions made with the old one, for good, even when the old value comes
// back; a link's session goes on.
func TestBootstrapKeyChangeEndsItsSessions(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := accounts.New(store, nil, nil)
	const a, b = "bootstrap-key-a-0123456789", "bootstrap-key-b-0123456789"
	ensure := func(key string) {
		t.Helper()
		if err := accounts.EnsureAdmin(ctx, store, acs.HashKey(key), key[:8]); err != nil {
			t.Fatal(err)
		}
	}
	valid := func(ns accounts.NewSession) bool { _, _, err := s.Session(ctx, ns.ID); return err == nil }
	ensure(a)
	byKey, _, err := s.SignInWithAPIKey(ctx, a, accounts.SignInPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	token, err := s.IssueSignInToken(ctx, accounts.AdminID)
	if err != nil {
		t.Fatal(err)
	}
	byLink, _, err := s.SignInWithToken(ctx, token, accounts.SignInPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	ensure(b)
	if valid(byKey) || !valid(byLink) {
		t.Fatalf("after the change: the old key's session valid %v, the link's %v", valid(byKey), valid(byLink))
	}
	ensure(a)
	if valid(byKey) || !valid(byLink) {
		t.Fatalf("after changing back: the old key's session valid %v, the link's %v", valid(byKey), valid(byLink))
	}
}
