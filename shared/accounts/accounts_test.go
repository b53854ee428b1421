package accounts_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sealbox"
)

func newService(t *testing.T) *accounts.Service {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return accounts.New(store, sealbox.FromPassphrase("accounts test"), nil)
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	admin := acs.User{ID: "root", Admin: true}
	if err := s.Store.CreateUser(ctx, admin); err != nil {
		t.Fatal(err)
	}
	u, key, err := s.CreateUser(ctx, admin, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateUser(ctx, u, "mallory"); !errors.Is(err, acs.ErrForbidden) {
		t.Fatalf("a user who is no admin created a user: %v", err)
	}
	for _, tc := range []struct {
		header string
		ok     bool
	}{
		{"Bearer " + key.Key, true},
		{"bearer  " + key.Key + " ", true},
		{key.Key, false},
		{"Basic " + key.Key, false},
		{"Bearer ", false},
		{"Bearer wrong-key", false},
		{"", false},
	} {
		got, err := s.Authenticate(ctx, tc.header)
		if tc.ok && (err != nil || got.ID != u.ID) {
			t.Errorf("Authenticate(%q) = %v, %v", tc.header, got.ID, err)
		}
		if !tc.ok && !errors.Is(err, acs.ErrUnauthorized) {
			t.Errorf("Authenticate(%q): %v, want unauthorized", tc.header, err)
		}
	}
	if err := s.DeleteKey(ctx, u.ID, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, "Bearer "+key.Key); !errors.Is(err, acs.ErrUnauthorized) {
		t.Fatalf("a revoked key still works: %v", err)
	}
	if err := s.DeleteKey(ctx, u.ID, key.ID); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}
}

func TestUpdateSettingsIsPartial(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	st, saved, err := s.Settings(ctx, "alice")
	if err != nil || saved || st.MaxConversationsPerSandbox != acs.DefaultSettings("alice").MaxConversationsPerSandbox {
		t.Fatalf("unsaved settings: %+v %v %v", st, saved, err)
	}
	model, key, n := "m1", "sk-secret", 3
	if _, err := s.UpdateSettings(ctx, "alice", acs.SettingsUpdate{LLMModel: acs.Field[string]{Set: true, Value: &model},
		LLMAPIKey: acs.Field[string]{Set: true, Value: &key}, MaxConversationsPerSandbox: &n}); err != nil {
		t.Fatal(err)
	}
	st, saved, err = s.Settings(ctx, "alice")
	if err != nil || !saved || st.LLMModel == nil || *st.LLMModel != "m1" || st.MaxConversationsPerSandbox != 3 {
		t.Fatalf("saved settings: %+v %v %v", st, saved, err)
	}
	if st.LLMAPIKeySealed == "" || st.LLMAPIKeySealed == key {
		t.Fatalf("the LLM key is not sealed: %q", st.LLMAPIKeySealed)
	}
	if plain, err := s.Sealer.Open(st.LLMAPIKeySealed); err != nil || plain != key {
		t.Fatalf("the sealed key opens to %q, %v", plain, err)
	}
	// Absent fields are kept; null clears.
	st, err = s.UpdateSettings(ctx, "alice", acs.SettingsUpdate{LLMAPIKey: acs.Field[string]{Set: true}})
	if err != nil || st.LLMAPIKeySealed != "" || st.LLMModel == nil || *st.LLMModel != "m1" || st.MaxConversationsPerSandbox != 3 {
		t.Fatalf("after clearing the key: %+v %v", st, err)
	}
	if other, saved, _ := s.Settings(ctx, "bob"); saved || other.LLMModel != nil {
		t.Fatalf("another user's settings changed: %+v", other)
	}
}

func TestSecrets(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	desc := "d"
	sec, err := s.CreateSecret(ctx, "alice", "TOKEN", "value-1", &desc)
	if err != nil || sec.Description != "d" || sec.Sealed == "value-1" {
		t.Fatalf("created %+v, %v", sec, err)
	}
	if _, err := s.CreateSecret(ctx, "alice", "TOKEN", "value-2", nil); !errors.Is(err, acs.ErrConflict) {
		t.Fatalf("creating an existing name: %v", err)
	}
	if _, err := s.CreateSecret(ctx, "bob", "TOKEN", "bobs", nil); err != nil {
		t.Fatalf("another user's secret of the same name: %v", err)
	}
	got, err := s.Secret(ctx, "alice", "TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	v := "value-3"
	if got, err = s.UpdateSecret(ctx, got, &v, nil); err != nil || got.Description != "d" {
		t.Fatalf("updated %+v, %v", got, err)
	}
	if plain, err := s.Sealer.Open(got.Sealed); err != nil || plain != v {
		t.Fatalf("the updated value opens to %q, %v", plain, err)
	}
	if err := s.DeleteSecret(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Secret(ctx, "alice", "TOKEN"); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if list, err := s.Secrets(ctx, "bob"); err != nil || len(list) != 1 {
		t.Fatalf("bob's secrets: %+v %v", list, err)
	}
}
