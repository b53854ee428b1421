package storetest

import (
	"fmt"
	"sort"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunUserStoreTests runs the acs.UserStore suite.
func RunUserStoreTests(t *testing.T, h Harness[acs.UserStore]) { runTests(t, h, userStoreTests) }

var userStoreTests = []Test[acs.UserStore]{
	{"CreateAndGetUser", testCreateAndGetUser},
	{"CreateUserWithATakenIDConflicts", testCreateUserConflict},
	{"GetUnknownUserIsNotFound", testGetUnknownUser},
	{"CreateAPIKeyWithATakenIDOrHashConflicts", testCreateAPIKeyConflict},
	{"GetAPIKeyByHash", testGetAPIKeyByHash},
	{"ListAPIKeysOfAUser", testListAPIKeys},
	{"DeleteAPIKeyOfItsUserOnly", testDeleteAPIKey},
}

func testCreateAndGetUser(t *testing.T, s acs.UserStore) {
	u := acs.User{ID: "u1", Name: "Ada", Admin: true, CreatedAt: base}
	must(t, s.CreateUser(ctx, u))
	got, err := s.GetUser(ctx, "u1")
	must(t, err)
	if got.Name != "Ada" || !got.Admin || !got.CreatedAt.Equal(base) {
		t.Fatalf("user %+v", got)
	}
}

func testCreateUserConflict(t *testing.T, s acs.UserStore) {
	must(t, s.CreateUser(ctx, acs.User{ID: "u1", Name: "Ada", CreatedAt: base}))
	wantErr(t, s.CreateUser(ctx, acs.User{ID: "u1", Name: "Eve", CreatedAt: at(1)}), acs.ErrConflict)
	got, err := s.GetUser(ctx, "u1")
	must(t, err)
	if got.Name != "Ada" {
		t.Fatalf("a conflicting create replaced the user: %+v", got)
	}
}

func testGetUnknownUser(t *testing.T, s acs.UserStore) {
	_, err := s.GetUser(ctx, "nope")
	wantErr(t, err, acs.ErrNotFound)
}

func apiKey(id, user string, i int) acs.APIKey {
	return acs.APIKey{ID: id, UserID: user, Name: "key " + id, Hash: acs.HashKey("secret-" + id), Prefix: id, CreatedAt: at(i)}
}

func testCreateAPIKeyConflict(t *testing.T, s acs.UserStore) {
	k1 := apiKey("k1", "u1", 0)
	must(t, s.CreateAPIKey(ctx, k1))
	wantErr(t, s.CreateAPIKey(ctx, acs.APIKey{ID: "k9", UserID: "u1", Hash: k1.Hash}), acs.ErrConflict)
	wantErr(t, s.CreateAPIKey(ctx, acs.APIKey{ID: "k1", UserID: "u1", Hash: "other"}), acs.ErrConflict)
	_, err := s.GetAPIKeyByHash(ctx, "other")
	wantErr(t, err, acs.ErrNotFound)
	keys, err := s.ListAPIKeys(ctx, "u1")
	must(t, err)
	if len(keys) != 1 || keys[0].ID != "k1" {
		t.Fatalf("keys after refused creates: %+v", keys)
	}
}

func testGetAPIKeyByHash(t *testing.T, s acs.UserStore) {
	for i, k := range []acs.APIKey{apiKey("k1", "u1", 0), apiKey("k2", "u1", 1), apiKey("k3", "u2", 2)} {
		k.Name = fmt.Sprint("key ", i)
		must(t, s.CreateAPIKey(ctx, k))
	}
	got, err := s.GetAPIKeyByHash(ctx, acs.HashKey("secret-k2"))
	must(t, err)
	if got.ID != "k2" || got.UserID != "u1" || got.Name != "key 1" || got.Prefix != "k2" || !got.CreatedAt.Equal(at(1)) {
		t.Fatalf("key %+v", got)
	}
	_, err = s.GetAPIKeyByHash(ctx, acs.HashKey("unknown"))
	wantErr(t, err, acs.ErrNotFound)
}

func testListAPIKeys(t *testing.T, s acs.UserStore) {
	for _, k := range []acs.APIKey{apiKey("k1", "u1", 0), apiKey("k2", "u1", 1), apiKey("k3", "u2", 2)} {
		must(t, s.CreateAPIKey(ctx, k))
	}
	ids := func(user string) string {
		keys, err := s.ListAPIKeys(ctx, user)
		must(t, err)
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	if got := ids("u1"); got != "[k1 k2]" {
		t.Fatalf("u1 keys %s", got)
	}
	if got := ids("nobody"); got != "[]" {
		t.Fatalf("keys of a user without keys %s", got)
	}
}

func testDeleteAPIKey(t *testing.T, s acs.UserStore) {
	k1, k3 := apiKey("k1", "u1", 0), apiKey("k3", "u2", 2)
	must(t, s.CreateAPIKey(ctx, k1))
	must(t, s.CreateAPIKey(ctx, k3))
	wantErr(t, s.DeleteAPIKey(ctx, "u1", "k3"), acs.ErrNotFound) // another user's key
	if _, err := s.GetAPIKeyByHash(ctx, k3.Hash); err != nil {
		t.Fatalf("a refused delete removed the key: %v", err)
	}
	must(t, s.DeleteAPIKey(ctx, "u1", "k1"))
	_, err := s.GetAPIKeyByHash(ctx, k1.Hash)
	wantErr(t, err, acs.ErrNotFound)
	if keys, err := s.ListAPIKeys(ctx, "u1"); err != nil || len(keys) != 0 {
		t.Fatalf("keys after delete: %+v, %v", keys, err)
	}
	wantErr(t, s.DeleteAPIKey(ctx, "u1", "k1"), acs.ErrNotFound)
	// The id is free again.
	must(t, s.CreateAPIKey(ctx, k1))
}
