package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// Users and API keys. Keys are stored only as SHA-256 hashes; a key's value
// is shown once, when it is made. A revoked key stops working at once.

// The users and keys bodies (v1wire's).
type (
	UserJSON    = v1wire.User
	NewKeyJSON  = v1wire.NewKey
	KeyJSON     = v1wire.Key
	NameRequest = v1wire.NameRequest
)

// KeyPrefixLen is how much of a key is kept to recognise it.
const KeyPrefixLen = 8

// IssueKey stores a new key for user and returns it with its value.
func IssueKey(ctx context.Context, st acs.Store, userID, name string, value string, createdAt events.Time) (NewKeyJSON, error) {
	if value == "" {
		value = "acs_" + acs.NewSecret(40)
	}
	k := acs.APIKey{ID: acs.NewID(), UserID: userID, Name: name, Hash: acs.HashKey(value), Prefix: value[:min(KeyPrefixLen, len(value))],
		CreatedAt: createdAt.Time}
	if err := st.CreateAPIKey(ctx, k); err != nil {
		return NewKeyJSON{}, fmt.Errorf("store API key: %w", err)
	}
	return NewKeyJSON{ID: k.ID, Name: k.Name, Key: value, CreatedAt: createdAt}, nil
}

// createUser: POST /api/v1/users {"name"} (admins only) makes a user and
// returns its first key once.
func (a *API) createUser(w http.ResponseWriter, r *http.Request) {
	if !userOf(r).Admin {
		httpjson.WriteDetail(w, http.StatusForbidden, "Only an admin can create users")
		return
	}
	var req NameRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	now := events.At(a.now())
	u := acs.User{ID: acs.NewID(), Name: req.Name, CreatedAt: now.Time}
	if err := a.d.Store.CreateUser(r.Context(), u); err != nil {
		writeErr(w, err)
		return
	}
	key, err := IssueKey(r.Context(), a.d.Store, u.ID, "first key", "", now)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, v1wire.NewUser{User: UserJSON{ID: u.ID, Name: u.Name, Admin: u.Admin, CreatedAt: now}, Key: key})
}

// getMe: GET /api/v1/users/me.
func (a *API) getMe(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	httpjson.WriteJSON(w, http.StatusOK, UserJSON{ID: u.ID, Name: u.Name, Admin: u.Admin, CreatedAt: events.At(u.CreatedAt)})
}

// createKey: POST /api/v1/keys {"name"} returns {"id","name","key"} (the key
// shown once).
func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var req NameRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	key, err := IssueKey(r.Context(), a.d.Store, userOf(r).ID, req.Name, "", events.At(a.now()))
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, key)
}

// listKeys: GET /api/v1/keys — the caller's keys, without values.
func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := a.d.Store.ListAPIKeys(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]KeyJSON, 0, len(keys))
	for _, k := range keys {
		out = append(out, KeyJSON{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: events.At(k.CreatedAt)})
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// deleteKey: DELETE /api/v1/keys/{key_id} revokes one of the caller's keys
// at once.
func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("key_id")
	if err := a.d.Store.DeleteAPIKey(r.Context(), userOf(r).ID, id); err != nil {
		if errors.Is(err, acs.ErrNotFound) {
			err = acs.Errorf(acs.ENOTFOUND, "API key not found: %s", id)
		}
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
}

// AdminID is the id of the installation's admin user.
const AdminID = "admin"

// The bootstrap marker: the hash of the last key EnsureAdmin registered,
// kept as a record of a system owner that no user id can equal (user ids are
// UUIDs or "admin"), so no user ever lists or reads it. Its Sealed field
// holds "sha256:<hex>", a hash rather than a sealed value.
const (
	bootstrapOwner  = "acs-system"
	bootstrapName   = "admin-bootstrap-key"
	bootstrapPrefix = "sha256:"
	// bootstrapKeyIDPrefix starts the ids of keys EnsureAdmin registers
	// ("admin-" and the hash's first 16 hex digits); issued keys have UUIDs.
	bootstrapKeyIDPrefix = "admin-"
)

// EnsureAdmin makes sure the admin user exists and bootstraps the admin's
// API key (the installation's configured or generated key) whose SHA-256
// hash (hex) is keyHash; prefix is the key's first characters, as listed by
// GET /api/v1/keys.
//
// A bootstrap key is registered once per value, not at every start: the
// store remembers the hash of the last key bootstrapped, and when keyHash is
// that same hash nothing is done, so a bootstrap key the admin revoked
// (DELETE /api/v1/keys/{id}) stays revoked across restarts. When keyHash
// differs (the configured key changed, or a new one was generated), the new
// key is registered and every other key this function bootstrapped before
// is revoked: the new key works, the old one answers 401. Keys made through
// the API are never touched. To get in again after revoking every key, set
// a new configured key.
//
// It is idempotent and safe to run concurrently with the same keyHash
// (conditional creates; revoking an absent key is not an error). The marker
// is written last, so a start that fails halfway is completed by the next.
func EnsureAdmin(ctx context.Context, store acs.Store, keyHash, prefix string) error {
	if _, err := store.GetUser(ctx, AdminID); errors.Is(err, acs.ErrNotFound) {
		err := store.CreateUser(ctx, acs.User{ID: AdminID, Name: "admin", Admin: true, CreatedAt: time.Now().UTC()})
		if err != nil && !errors.Is(err, acs.ErrConflict) {
			return fmt.Errorf("create the admin user: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read the admin user: %w", err)
	}
	marker, err := store.GetSecret(ctx, bootstrapOwner, bootstrapName)
	switch {
	case err == nil && marker.Sealed == bootstrapPrefix+keyHash:
		return nil // bootstrapped before: if it was revoked since, it stays so
	case err != nil && !errors.Is(err, acs.ErrNotFound):
		return fmt.Errorf("read the admin key marker: %w", err)
	}
	now := time.Now().UTC()
	keyID := bootstrapKeyIDPrefix + keyHash[:min(16, len(keyHash))]
	err = store.CreateAPIKey(ctx, acs.APIKey{ID: keyID, UserID: AdminID, Name: "admin", Hash: keyHash, Prefix: prefix, CreatedAt: now})
	if err != nil && !errors.Is(err, acs.ErrConflict) {
		return fmt.Errorf("create the admin API key: %w", err)
	}
	keys, err := store.ListAPIKeys(ctx, AdminID)
	if err != nil {
		return fmt.Errorf("list the admin API keys: %w", err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k.ID, bootstrapKeyIDPrefix) && k.ID != keyID {
			if err := store.DeleteAPIKey(ctx, AdminID, k.ID); err != nil && !errors.Is(err, acs.ErrNotFound) {
				return fmt.Errorf("revoke the previous admin API key: %w", err)
			}
		}
	}
	if marker.CreatedAt.IsZero() {
		marker.CreatedAt = now
	}
	marker = acs.Secret{OwnerID: bootstrapOwner, Name: bootstrapName, Description: "hash of the last bootstrapped admin API key",
		Sealed: bootstrapPrefix + keyHash, CreatedAt: marker.CreatedAt, UpdatedAt: now}
	if err := store.PutSecret(ctx, marker); err != nil {
		return fmt.Errorf("remember the admin API key: %w", err)
	}
	return nil
}
