package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Users and API keys. Keys are stored only as SHA-256 hashes; a key's value
// is shown once, when it is made. A revoked key stops working at once, and
// so do the browser sessions made with it.

// KeyPrefixLen is how much of a key is kept to recognise it.
const KeyPrefixLen = 8

// NewKey is a key as made: the stored key and, this once, its value.
type NewKey struct {
	acs.APIKey
	// Key is the key's value (never stored).
	Key string
}

// IssueKey stores a new key named name for the user and returns it with its
// value; value "" makes a random one. It wraps acs.ErrConflict when the id
// or hash exists.
func IssueKey(ctx context.Context, st acs.UserStore, userID, name, value string, createdAt time.Time) (NewKey, error) {
	if value == "" {
		value = "acs_" + acs.NewSecret(40)
	}
	k := acs.APIKey{ID: acs.NewID(), UserID: userID, Name: name, Hash: acs.HashKey(value), Prefix: value[:min(KeyPrefixLen, len(value))],
		CreatedAt: createdAt}
	if err := st.CreateAPIKey(ctx, k); err != nil {
		return NewKey{}, fmt.Errorf("store API key: %w", err)
	}
	return NewKey{APIKey: k, Key: value}, nil
}

// CanCreateUsers says whether caller may create users (admins only); it
// wraps acs.ErrForbidden otherwise.
func CanCreateUsers(caller acs.User) error {
	if !caller.Admin {
		return acs.Errorf(acs.EFORBIDDEN, "Only an admin can create users")
	}
	return nil
}

// CreateUser makes a user named name, on behalf of caller (who must be an
// admin: acs.ErrForbidden otherwise), and issues its first key.
func (s *Service) CreateUser(ctx context.Context, caller acs.User, name string) (acs.User, NewKey, error) {
	if err := CanCreateUsers(caller); err != nil {
		return acs.User{}, NewKey{}, err
	}
	now := s.now().Truncate(time.Microsecond) // as the wire shows it
	u := acs.User{ID: acs.NewID(), Name: name, CreatedAt: now}
	if err := s.Store.CreateUser(ctx, u); err != nil {
		return acs.User{}, NewKey{}, err
	}
	key, err := IssueKey(ctx, s.Store, u.ID, "first key", "", now)
	if err != nil {
		return acs.User{}, NewKey{}, err
	}
	return u, key, nil
}

// CreateKey issues a new key named name for the user.
func (s *Service) CreateKey(ctx context.Context, userID, name string) (NewKey, error) {
	return IssueKey(ctx, s.Store, userID, name, "", s.now().Truncate(time.Microsecond))
}

// Keys lists the user's keys (hashes and prefixes, never values).
func (s *Service) Keys(ctx context.Context, userID string) ([]acs.APIKey, error) {
	return s.Store.ListAPIKeys(ctx, userID)
}

// DeleteKey revokes one of the user's keys at once and ends the browser
// sessions made with it; acs.ErrNotFound ("API key not found: <id>") when
// the user has no such key.
func (s *Service) DeleteKey(ctx context.Context, userID, id string) error {
	keys, err := s.Store.ListAPIKeys(ctx, userID)
	if err != nil {
		return fmt.Errorf("list the API keys: %w", err)
	}
	for _, k := range keys {
		if k.ID != id {
			continue
		}
		// Sessions first: a failure leaves the key to revoke again.
		if _, err := s.Store.DeleteKeySessions(ctx, userID, k.Hash); err != nil {
			return fmt.Errorf("end the API key's sessions: %w", err)
		}
	}
	if err := s.Store.DeleteAPIKey(ctx, userID, id); err != nil {
		if errors.Is(err, acs.ErrNotFound) {
			err = acs.Errorf(acs.ENOTFOUND, "API key not found: %s", id)
		}
		return err
	}
	return nil
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

// AdminStore is what bootstrapping the admin keeps: the admin user and its
// keys, the sessions of a revoked key, and the marker secret of the last
// bootstrapped key.
type AdminStore interface {
	acs.UserStore
	acs.SessionStore
	acs.SecretStore
}

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
// is revoked with the browser sessions made with it: the new key works, the
// old one and its sessions answer 401. Keys made through the API are never
// touched. To get in again after revoking every key, set a new configured
// key.
//
// It is idempotent and safe to run concurrently with the same keyHash
// (conditional creates; revoking an absent key is not an error). The marker
// is written last, so a start that fails halfway is completed by the next.
func EnsureAdmin(ctx context.Context, store AdminStore, keyHash, prefix string) error {
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
			if _, err := store.DeleteKeySessions(ctx, AdminID, k.Hash); err != nil {
				return fmt.Errorf("end the previous admin API key's sessions: %w", err)
			}
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
