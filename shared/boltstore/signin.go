package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
)

// ---- browser sessions, sign-in tokens and identities

// CreateSession implements acs.SessionStore.
func (s *Store) CreateSession(_ context.Context, bs acs.BrowserSession) error {
	if err := validKeyPart("session hash", bs.Hash); err != nil {
		return err
	}
	if err := validKeyPart("session user", bs.UserID); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		var cur acs.BrowserSession
		if err := get(tx, bSessions, bs.Hash, &cur, "session"); err == nil && !expired(cur.ExpiresAt) {
			return fmt.Errorf("session: %w", acs.ErrConflict)
		}
		if err := put(tx, bSessions, bs.Hash, bs); err != nil {
			return err
		}
		return tx.Bucket(bSessionsUser).Put(append(ownerPrefix(bs.UserID), bs.Hash...), nil)
	})
}

// GetSession implements acs.SessionStore.
func (s *Store) GetSession(_ context.Context, hash string) (acs.BrowserSession, error) {
	var bs acs.BrowserSession
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bSessions, hash, &bs, "session") })
	if err == nil && expired(bs.ExpiresAt) {
		return acs.BrowserSession{}, notFound("session", "by hash")
	}
	return bs, err
}

// DeleteSession implements acs.SessionStore.
func (s *Store) DeleteSession(_ context.Context, hash string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var bs acs.BrowserSession
		if err := get(tx, bSessions, hash, &bs, "session"); err != nil {
			return nil // absent (a decode failure leaves nothing worth keeping either)
		}
		if err := tx.Bucket(bSessionsUser).Delete(append(ownerPrefix(bs.UserID), hash...)); err != nil {
			return err
		}
		return tx.Bucket(bSessions).Delete([]byte(hash))
	})
}

// DeleteUserSessions implements acs.SessionStore.
func (s *Store) DeleteUserSessions(_ context.Context, userID string) (int, error) {
	return s.deleteSessions(userID, nil)
}

// DeleteKeySessions implements acs.SessionStore.
func (s *Store) DeleteKeySessions(_ context.Context, userID, keyHash string) (int, error) {
	if keyHash == "" {
		return 0, fmt.Errorf("sessions of a key without a hash: %w", acs.ErrInvalid)
	}
	return s.deleteSessions(userID, func(bs acs.BrowserSession) bool { return bs.KeyHash == keyHash })
}

// deleteSessions removes the user's sessions that only accepts (every one
// when only is nil) in one transaction, and counts the unexpired ones.
func (s *Store) deleteSessions(userID string, only func(acs.BrowserSession) bool) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		n = 0
		prefix := ownerPrefix(userID)
		idx := tx.Bucket(bSessionsUser)
		var keys [][]byte
		c := idx.Cursor()
		for k, _ := c.Seek(prefix); k != nil && len(k) >= len(prefix) && string(k[:len(prefix)]) == string(prefix); k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			hash := string(k[len(prefix):])
			var bs acs.BrowserSession
			found := get(tx, bSessions, hash, &bs, "session") == nil
			if only != nil && (!found || !only(bs)) {
				continue
			}
			if found && !expired(bs.ExpiresAt) {
				n++
			}
			if err := tx.Bucket(bSessions).Delete([]byte(hash)); err != nil {
				return err
			}
			if err := idx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// CreateSignInToken implements acs.SessionStore.
func (s *Store) CreateSignInToken(_ context.Context, t acs.SignInToken) error {
	if err := validKeyPart("sign-in token hash", t.Hash); err != nil {
		return err
	}
	if err := validKeyPart("sign-in token user", t.UserID); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		var cur acs.SignInToken
		if err := get(tx, bSignIn, t.Hash, &cur, "sign-in token"); err == nil && !expired(cur.ExpiresAt) {
			return fmt.Errorf("sign-in token: %w", acs.ErrConflict)
		}
		// Expired tokens are swept here: tokens are few and short-lived.
		var stale [][]byte
		err := tx.Bucket(bSignIn).ForEach(func(k, v []byte) error {
			var old acs.SignInToken
			if get(tx, bSignIn, string(k), &old, "sign-in token") == nil && expired(old.ExpiresAt) {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := tx.Bucket(bSignIn).Delete(k); err != nil {
				return err
			}
		}
		return put(tx, bSignIn, t.Hash, t)
	})
}

// ConsumeSignInToken implements acs.SessionStore: one write transaction
// reads and deletes the token, so one caller at most gets it.
func (s *Store) ConsumeSignInToken(_ context.Context, hash string) (acs.SignInToken, error) {
	var t acs.SignInToken
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := get(tx, bSignIn, hash, &t, "sign-in token"); err != nil {
			return err
		}
		if err := tx.Bucket(bSignIn).Delete([]byte(hash)); err != nil {
			return err
		}
		if expired(t.ExpiresAt) {
			return notFound("sign-in token", "by hash")
		}
		return nil
	})
	if err != nil {
		return acs.SignInToken{}, err
	}
	return t, nil
}

func identityKey(issuer, subject string) string { return issuer + "\x00" + subject }

// CreateUserWithIdentity implements acs.IdentityStore.
func (s *Store) CreateUserWithIdentity(_ context.Context, u acs.User, id acs.Identity) error {
	if u.ID == "" || id.UserID != u.ID || id.Issuer == "" || id.Subject == "" {
		return fmt.Errorf("identity of user %q: %w", u.ID, acs.ErrInvalid)
	}
	if err := validKeyPart("issuer", id.Issuer); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bUsers).Get([]byte(u.ID)) != nil {
			return fmt.Errorf("user %s: %w", u.ID, acs.ErrConflict)
		}
		if tx.Bucket(bIdentities).Get([]byte(identityKey(id.Issuer, id.Subject))) != nil {
			return fmt.Errorf("identity %s: %w", id.Subject, acs.ErrConflict)
		}
		if err := put(tx, bUsers, u.ID, u); err != nil {
			return err
		}
		return put(tx, bIdentities, identityKey(id.Issuer, id.Subject), id)
	})
}

// LinkIdentity implements acs.IdentityStore.
func (s *Store) LinkIdentity(_ context.Context, id acs.Identity) error {
	if id.UserID == "" || id.Issuer == "" || id.Subject == "" {
		return fmt.Errorf("identity of user %q: %w", id.UserID, acs.ErrInvalid)
	}
	if err := validKeyPart("issuer", id.Issuer); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bIdentities).Get([]byte(identityKey(id.Issuer, id.Subject))) != nil {
			return fmt.Errorf("identity %s: %w", id.Subject, acs.ErrConflict)
		}
		return put(tx, bIdentities, identityKey(id.Issuer, id.Subject), id)
	})
}

// GetIdentity implements acs.IdentityStore.
func (s *Store) GetIdentity(_ context.Context, issuer, subject string) (acs.Identity, error) {
	var id acs.Identity
	err := s.db.View(func(tx *bolt.Tx) error {
		return get(tx, bIdentities, identityKey(issuer, subject), &id, "identity")
	})
	return id, err
}

// expired says whether an expiry has passed.
func expired(at time.Time) bool { return !at.After(time.Now()) }
