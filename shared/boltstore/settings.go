package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// ---- settings

// GetSettings implements acs.Store.
func (s *Store) GetSettings(_ context.Context, userID string) (acs.Settings, error) {
	var st acs.Settings
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bSettings, userID, &st, "settings of user") })
	return st, err
}

// PutSettings implements acs.Store.
func (s *Store) PutSettings(_ context.Context, st acs.Settings) error {
	if st.UserID == "" {
		return fmt.Errorf("settings without a user: %w", acs.ErrInvalid)
	}
	return s.db.Update(func(tx *bolt.Tx) error { return put(tx, bSettings, st.UserID, st) })
}

// UpdateQuota implements acs.Store.
func (s *Store) UpdateQuota(_ context.Context, userID string, fn func(*acs.Quota) error) (acs.Quota, error) {
	if err := validKeyPart("quota user", userID); err != nil {
		return acs.Quota{}, err
	}
	var q acs.Quota
	err := s.db.Update(func(tx *bolt.Tx) error {
		q = acs.Quota{}
		if raw := tx.Bucket(bQuotas).Get([]byte(userID)); raw != nil {
			if err := storerecord.Unmarshal(raw, &q); err != nil {
				return fmt.Errorf("decode quota of %s: %w", userID, err)
			}
		}
		q.UserID = userID
		if q.Claims == nil {
			q.Claims = map[string]time.Time{}
		}
		if err := fn(&q); err != nil {
			return err
		}
		return put(tx, bQuotas, userID, q)
	})
	return q, err
}

// ---- secrets: keyed owner, 0, name, so an owner's secrets are adjacent and
// sorted by name.

func secretKey(owner, name string) []byte { return append(ownerPrefix(owner), name...) }

func checkSecretKey(owner, name string) error {
	if err := validKeyPart("secret owner", owner); err != nil {
		return err
	}
	return validKeyPart("secret name", name)
}

// PutSecret implements acs.Store.
func (s *Store) PutSecret(_ context.Context, sec acs.Secret) error {
	if err := checkSecretKey(sec.OwnerID, sec.Name); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		raw, err := storerecord.Marshal(sec)
		if err != nil {
			return fmt.Errorf("encode secret %s: %w", sec.Name, err)
		}
		return tx.Bucket(bSecrets).Put(secretKey(sec.OwnerID, sec.Name), raw)
	})
}

// GetSecret implements acs.Store.
func (s *Store) GetSecret(_ context.Context, ownerID, name string) (acs.Secret, error) {
	var sec acs.Secret
	if err := checkSecretKey(ownerID, name); err != nil {
		return sec, notFound("secret", name)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bSecrets).Get(secretKey(ownerID, name))
		if raw == nil {
			return notFound("secret", name)
		}
		if err := storerecord.Unmarshal(raw, &sec); err != nil {
			return fmt.Errorf("decode secret %s: %w", name, err)
		}
		return nil
	})
	return sec, err
}

// ListSecrets implements acs.Store.
func (s *Store) ListSecrets(_ context.Context, ownerID string) ([]acs.Secret, error) {
	var out []acs.Secret
	prefix := ownerPrefix(ownerID)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bSecrets).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var sec acs.Secret
			if err := storerecord.Unmarshal(v, &sec); err != nil {
				return fmt.Errorf("decode secret %s: %w", k[len(prefix):], err)
			}
			out = append(out, sec)
		}
		return nil
	})
	return out, err
}

// DeleteSecret implements acs.Store.
func (s *Store) DeleteSecret(_ context.Context, ownerID, name string) error {
	if err := checkSecretKey(ownerID, name); err != nil {
		return notFound("secret", name)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSecrets)
		k := secretKey(ownerID, name)
		if b.Get(k) == nil {
			return notFound("secret", name)
		}
		return b.Delete(k)
	})
}

// ---- pending messages: keyed key, 0, the bucket's next sequence number, so
// a key's messages are adjacent in insertion order.

// AddPendingMessage implements acs.Store. Adds are serialised by the write
// transaction, so concurrent adds never exceed max (max <= 0: no cap). A
// message whose id is already queued under the key is not added again; its
// current position is returned.
func (s *Store) AddPendingMessage(_ context.Context, m acs.PendingMessage, max int) (int, error) {
	if err := validKeyPart("pending message key", m.Key); err != nil {
		return 0, err
	}
	if m.ID == "" {
		return 0, fmt.Errorf("pending message without an id: %w", acs.ErrInvalid)
	}
	pos := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bPending)
		prefix := ownerPrefix(m.Key)
		n := 0
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n++
			id, err := pendingID(v)
			if err != nil {
				return err
			}
			if id == m.ID {
				pos = n
				return nil
			}
		}
		if max > 0 && n >= max {
			return fmt.Errorf("%d messages already queued for %s: %w", n, m.Key, acs.ErrCapacity)
		}
		seq, err := b.NextSequence()
		if err != nil {
			return fmt.Errorf("queue message for %s: %w", m.Key, err)
		}
		raw, err := storerecord.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode message %s: %w", m.ID, err)
		}
		if err := b.Put(binary.BigEndian.AppendUint64(prefix, seq), raw); err != nil {
			return fmt.Errorf("queue message for %s: %w", m.Key, err)
		}
		pos = n + 1
		return nil
	})
	return pos, err
}

func pendingID(v []byte) (string, error) {
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(v, &m); err != nil {
		return "", fmt.Errorf("decode pending message: %w", err)
	}
	return m.ID, nil
}

// ListPendingMessages implements acs.Store.
func (s *Store) ListPendingMessages(_ context.Context, key string) ([]acs.PendingMessage, error) {
	var out []acs.PendingMessage
	if validKeyPart("pending message key", key) != nil {
		return nil, nil
	}
	prefix := ownerPrefix(key)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bPending).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var m acs.PendingMessage
			if err := storerecord.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("decode pending message for %s: %w", key, err)
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// DeletePendingMessage implements acs.Store.
func (s *Store) DeletePendingMessage(_ context.Context, key, id string) error {
	if validKeyPart("pending message key", key) != nil {
		return nil
	}
	prefix := ownerPrefix(key)
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bPending).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			got, err := pendingID(v)
			if err != nil {
				return err
			}
			if got == id {
				if err := c.Delete(); err != nil {
					return fmt.Errorf("delete pending message %s: %w", id, err)
				}
				return nil
			}
		}
		return nil
	})
}
