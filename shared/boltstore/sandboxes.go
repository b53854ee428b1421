package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// CreateSandbox implements acs.Store.
func (s *Store) CreateSandbox(_ context.Context, sb acs.Sandbox) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bSandboxes).Get([]byte(sb.ID)) != nil {
			return fmt.Errorf("sandbox %s: %w", sb.ID, acs.ErrConflict)
		}
		if err := put(tx, bSandboxes, sb.ID, sb); err != nil {
			return err
		}
		if sb.SessionKeyHash != "" {
			if err := tx.Bucket(bSandboxHash).Put([]byte(sb.SessionKeyHash), []byte(sb.ID)); err != nil {
				return err
			}
		}
		return tx.Bucket(bSandboxOwner).Put(ownerKey(sb.OwnerID, sb.CreatedAt, sb.ID), nil)
	})
}

// GetSandbox implements acs.Store.
func (s *Store) GetSandbox(_ context.Context, id string) (acs.Sandbox, error) {
	var sb acs.Sandbox
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bSandboxes, id, &sb, "sandbox") })
	return sb, err
}

// GetSandboxBySessionKeyHash implements acs.Store.
func (s *Store) GetSandboxBySessionKeyHash(_ context.Context, hash string) (acs.Sandbox, error) {
	var sb acs.Sandbox
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bSandboxHash).Get([]byte(hash))
		if id == nil || hash == "" {
			return notFound("sandbox", "by session key")
		}
		return get(tx, bSandboxes, string(id), &sb, "sandbox")
	})
	return sb, err
}

// UpdateSandbox implements acs.Store. Updates are serialised, so a slot
// reserved in fn (acs.Sandbox.Reserve) never overfills the sandbox.
func (s *Store) UpdateSandbox(_ context.Context, id string, fn func(*acs.Sandbox) error) (acs.Sandbox, error) {
	var sb acs.Sandbox
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		sb, err = updateSandbox(tx, id, fn)
		return err
	})
	return sb, err
}

// UpdateStartTaskAndSandbox implements acs.Store: one transaction.
func (s *Store) UpdateStartTaskAndSandbox(_ context.Context, id string, fn func(*acs.StartTask) error, sandboxID string, sandboxFn func(*acs.Sandbox) error) (acs.StartTask, acs.Sandbox, error) {
	var t acs.StartTask
	var sb acs.Sandbox
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		if sb, err = updateSandbox(tx, sandboxID, sandboxFn); err != nil {
			return err
		}
		t, err = s.updateStartTask(tx, id, fn)
		return err
	})
	if err != nil {
		return acs.StartTask{}, acs.Sandbox{}, err
	}
	return t, sb, nil
}

// updateSandbox is UpdateSandbox in tx.
func updateSandbox(tx *bolt.Tx, id string, fn func(*acs.Sandbox) error) (acs.Sandbox, error) {
	var sb acs.Sandbox
	if err := get(tx, bSandboxes, id, &sb, "sandbox"); err != nil {
		return sb, err
	}
	oldHash, owner, created := sb.SessionKeyHash, sb.OwnerID, sb.CreatedAt
	if err := fn(&sb); err != nil {
		return sb, err
	}
	sb.ID, sb.OwnerID, sb.CreatedAt = id, owner, created
	if sb.SessionKeyHash != oldHash {
		if oldHash != "" {
			if err := tx.Bucket(bSandboxHash).Delete([]byte(oldHash)); err != nil {
				return sb, err
			}
		}
		if sb.SessionKeyHash != "" {
			if err := tx.Bucket(bSandboxHash).Put([]byte(sb.SessionKeyHash), []byte(id)); err != nil {
				return sb, err
			}
		}
	}
	return sb, put(tx, bSandboxes, id, sb)
}

// ListSandboxes implements acs.Store.
func (s *Store) ListSandboxes(_ context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	var page acs.Page[acs.Sandbox]
	prefix := ownerPrefix(ownerID)
	start, err := decodeToken(opts.PageToken, tagSandboxes, prefix)
	if err != nil {
		return page, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		next, err := walkPage(tx.Bucket(bSandboxOwner).Cursor(), prefixRange(prefix), start, true, clamp(opts.Limit), nil,
			func(k, _ []byte) error {
				var sb acs.Sandbox
				if err := get(tx, bSandboxes, string(k[len(prefix)+8:]), &sb, "sandbox"); err != nil {
					return err
				}
				page.Items = append(page.Items, sb)
				return nil
			})
		if next != nil {
			page.Next = encodeToken(tagSandboxes, next)
		}
		return err
	})
	return page, err
}

// ListAllSandboxes implements acs.Store: every owner's sandboxes by id.
func (s *Store) ListAllSandboxes(_ context.Context, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	var page acs.Page[acs.Sandbox]
	start, err := decodeToken(opts.PageToken, tagAllSandboxes, nil)
	if err != nil {
		return page, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		next, err := walkPage(tx.Bucket(bSandboxes).Cursor(), keyRange{}, start, false, clamp(opts.Limit), nil,
			func(k, v []byte) error {
				var sb acs.Sandbox
				if err := storerecord.Unmarshal(v, &sb); err != nil {
					return fmt.Errorf("decode sandbox %s: %w", k, err)
				}
				page.Items = append(page.Items, sb)
				return nil
			})
		if next != nil {
			page.Next = encodeToken(tagAllSandboxes, next)
		}
		return err
	})
	return page, err
}

// DeleteSandbox implements acs.Store.
func (s *Store) DeleteSandbox(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var sb acs.Sandbox
		if err := get(tx, bSandboxes, id, &sb, "sandbox"); err != nil {
			return err
		}
		if sb.SessionKeyHash != "" {
			if err := tx.Bucket(bSandboxHash).Delete([]byte(sb.SessionKeyHash)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bSandboxOwner).Delete(ownerKey(sb.OwnerID, sb.CreatedAt, sb.ID)); err != nil {
			return err
		}
		return tx.Bucket(bSandboxes).Delete([]byte(id))
	})
}
