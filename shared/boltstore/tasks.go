package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
)

// Start tasks have two owner indexes, by creation time (bTasksOwner) and by
// update time (bTasksUpdated). Both entries carry taskIndexValue, so filters
// need no record.

const idxVersion = 1

// taskIndexValue is a version byte, created_at, the app conversation id
// (length-prefixed) and the conversation id.
func taskIndexValue(t *acs.StartTask) []byte {
	app := ""
	if t.AppConversationID != nil {
		app = *t.AppConversationID
	}
	v := make([]byte, 0, 1+8+binary.MaxVarintLen64+len(app)+len(t.ConversationID))
	v = append(v, idxVersion)
	v = appendTime(v, t.CreatedAt)
	v = binary.AppendUvarint(v, uint64(len(app)))
	v = append(v, app...)
	return append(v, t.ConversationID...)
}

type taskIndex struct {
	created     uint64
	app, convID []byte
}

func parseTaskIndex(v []byte) (taskIndex, bool) {
	if len(v) < 10 || v[0] != idxVersion {
		return taskIndex{}, false
	}
	ix := taskIndex{created: binary.BigEndian.Uint64(v[1:9])}
	n, w := binary.Uvarint(v[9:])
	rest := v[9+max(w, 0):]
	if w <= 0 || n > uint64(len(rest)) {
		return taskIndex{}, false
	}
	ix.app, ix.convID = rest[:n], rest[n:]
	return ix, true
}

func putTaskIndexes(tx *bolt.Tx, t *acs.StartTask) error {
	v := taskIndexValue(t)
	if err := tx.Bucket(bTasksOwner).Put(ownerKey(t.OwnerID, t.CreatedAt, t.ID), v); err != nil {
		return fmt.Errorf("index start task %s: %w", t.ID, err)
	}
	if err := tx.Bucket(bTasksUpdated).Put(ownerKey(t.OwnerID, t.UpdatedAt, t.ID), v); err != nil {
		return fmt.Errorf("index start task %s: %w", t.ID, err)
	}
	if !t.Status.Done() {
		if err := tx.Bucket(bTasksOpen).Put(openKey(t), nil); err != nil {
			return fmt.Errorf("index start task %s: %w", t.ID, err)
		}
	}
	return nil
}

// openKey orders unfinished tasks by update time, then id.
func openKey(t *acs.StartTask) []byte { return append(appendTime(nil, t.UpdatedAt), t.ID...) }

// CreateStartTask implements acs.Store.
func (s *Store) CreateStartTask(_ context.Context, t acs.StartTask) error {
	return s.db.Update(func(tx *bolt.Tx) error { return createStartTask(tx, t) })
}

// CreateStartTaskAndUpdateSandbox implements acs.Store: one transaction.
func (s *Store) CreateStartTaskAndUpdateSandbox(_ context.Context, t acs.StartTask, sandboxID string, sandboxFn func(*acs.Sandbox) error) (acs.Sandbox, error) {
	var sb acs.Sandbox
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		if sb, err = updateSandbox(tx, sandboxID, sandboxFn); err != nil {
			return err
		}
		return createStartTask(tx, t)
	})
	if err != nil {
		return acs.Sandbox{}, err
	}
	return sb, nil
}

// createStartTask is CreateStartTask in tx.
func createStartTask(tx *bolt.Tx, t acs.StartTask) error {
	if tx.Bucket(bTasks).Get([]byte(t.ID)) != nil {
		return fmt.Errorf("start task %s: %w", t.ID, acs.ErrConflict)
	}
	if err := put(tx, bTasks, t.ID, t); err != nil {
		return err
	}
	return putTaskIndexes(tx, &t)
}

// GetStartTask implements acs.Store.
func (s *Store) GetStartTask(_ context.Context, id string) (acs.StartTask, error) {
	var t acs.StartTask
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bTasks, id, &t, "start task") })
	return t, err
}

// UpdateStartTask implements acs.Store. The id, owner and creation time are
// not updatable.
func (s *Store) UpdateStartTask(_ context.Context, id string, fn func(*acs.StartTask) error) (acs.StartTask, error) {
	var t acs.StartTask
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		t, err = s.updateStartTask(tx, id, fn)
		return err
	})
	return t, err
}

// UpdateStartTaskCreatingConversation implements acs.Store: one
// transaction.
func (s *Store) UpdateStartTaskCreatingConversation(_ context.Context, id string, fn func(*acs.StartTask) error, c acs.Conversation) (acs.StartTask, error) {
	var t acs.StartTask
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		if t, err = s.updateStartTask(tx, id, fn); err != nil {
			return err
		}
		return createConversation(tx, &c)
	})
	if err != nil {
		return acs.StartTask{}, err
	}
	return t, nil
}

// updateStartTask is UpdateStartTask in tx; its commit closes the task's
// watch (WatchStartTask).
func (s *Store) updateStartTask(tx *bolt.Tx, id string, fn func(*acs.StartTask) error) (acs.StartTask, error) {
	s.taskWritten(tx, id)
	var t acs.StartTask
	if err := get(tx, bTasks, id, &t, "start task"); err != nil {
		return t, err
	}
	owner, created := t.OwnerID, t.CreatedAt
	oldUpdated, oldOpen := ownerKey(owner, t.UpdatedAt, id), openKey(&t)
	if err := fn(&t); err != nil {
		return t, err
	}
	if err := tx.Bucket(bTasksOpen).Delete(oldOpen); err != nil {
		return t, fmt.Errorf("index start task %s: %w", id, err)
	}
	t.ID, t.OwnerID, t.CreatedAt = id, owner, created
	if !bytes.Equal(oldUpdated, ownerKey(owner, t.UpdatedAt, id)) {
		if err := tx.Bucket(bTasksUpdated).Delete(oldUpdated); err != nil {
			return t, fmt.Errorf("index start task %s: %w", id, err)
		}
	}
	if err := putTaskIndexes(tx, &t); err != nil {
		return t, err
	}
	return t, put(tx, bTasks, id, t)
}

// ListStartTasks implements acs.Store: SearchStartTasks without a filter.
func (s *Store) ListStartTasks(ctx context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
	return s.SearchStartTasks(ctx, ownerID, acs.StartTaskFilter{}, acs.SortCreatedAtDesc, opts)
}

// taskOrder maps a sort order to its index, direction and token tag.
func taskOrder(o acs.StartTaskSort) (index []byte, desc bool, tag byte, err error) {
	switch o {
	case acs.SortCreatedAt:
		return bTasksOwner, false, tagTasksCreated, nil
	case acs.SortCreatedAtDesc, "":
		return bTasksOwner, true, tagTasksCreatedD, nil
	case acs.SortUpdatedAt:
		return bTasksUpdated, false, tagTasksUpdated, nil
	case acs.SortUpdatedAtDesc:
		return bTasksUpdated, true, tagTasksUpdatedD, nil
	}
	return nil, false, 0, fmt.Errorf("start task sort order %q: %w", o, acs.ErrInvalid)
}

// taskSpan is the part of an owner's index f can match, and the filter for
// the entries in it (nil: all match).
func taskSpan(tx *bolt.Tx, owner string, index []byte, f acs.StartTaskFilter) (keyRange, func(k, v []byte) (bool, error)) {
	r := prefixRange(ownerPrefix(owner))
	byCreated := bytes.Equal(index, bTasksOwner)
	if f.CreatedGTE != nil && byCreated {
		r = r.narrow(ownerKey(owner, *f.CreatedGTE, ""), nil)
	}
	if f.ConversationID == "" && (f.CreatedGTE == nil || byCreated) {
		return r, nil
	}
	conv := []byte(f.ConversationID)
	var gte uint64
	if f.CreatedGTE != nil {
		gte = timeBits(*f.CreatedGTE)
	}
	plen := len(owner) + 1 + 8
	return r, func(k, v []byte) (bool, error) {
		ix, ok := parseTaskIndex(v)
		if !ok { // an entry without an index value: read the record
			var t acs.StartTask
			if err := get(tx, bTasks, string(k[plen:]), &t, "start task"); err != nil {
				return false, err
			}
			ix, _ = parseTaskIndex(taskIndexValue(&t))
		}
		if ix.created < gte {
			return false, nil
		}
		return len(conv) == 0 || bytes.Equal(ix.app, conv) || bytes.Equal(ix.convID, conv), nil
	}
}

// SearchStartTasks implements acs.Store.
func (s *Store) SearchStartTasks(_ context.Context, ownerID string, f acs.StartTaskFilter, order acs.StartTaskSort, opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
	var page acs.Page[acs.StartTask]
	index, desc, tag, err := taskOrder(order)
	if err != nil {
		return page, err
	}
	prefix := ownerPrefix(ownerID)
	start, err := decodeToken(opts.PageToken, tag, prefix)
	if err != nil {
		return page, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		r, match := taskSpan(tx, ownerID, index, f)
		next, err := walkPage(tx.Bucket(index).Cursor(), r, start, desc, clamp(opts.Limit), match, func(k, _ []byte) error {
			var t acs.StartTask
			if err := get(tx, bTasks, string(k[len(prefix)+8:]), &t, "start task"); err != nil {
				return err
			}
			page.Items = append(page.Items, t)
			return nil
		})
		if next != nil {
			page.Next = encodeToken(tag, next)
		}
		return err
	})
	return page, err
}

// CountStartTasks implements acs.Store.
func (s *Store) CountStartTasks(_ context.Context, ownerID string, f acs.StartTaskFilter) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		r, match := taskSpan(tx, ownerID, bTasksOwner, f)
		_, err := walkPage(tx.Bucket(bTasksOwner).Cursor(), r, nil, false, -1, match, func(_, _ []byte) error {
			n++
			return nil
		})
		return err
	})
	return n, err
}

// DeleteStartTask implements acs.Store.
func (s *Store) DeleteStartTask(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		s.taskWritten(tx, id)
		var t acs.StartTask
		if err := get(tx, bTasks, id, &t, "start task"); err != nil {
			return err
		}
		if err := tx.Bucket(bTasksOwner).Delete(ownerKey(t.OwnerID, t.CreatedAt, id)); err != nil {
			return fmt.Errorf("unindex start task %s: %w", id, err)
		}
		if err := tx.Bucket(bTasksUpdated).Delete(ownerKey(t.OwnerID, t.UpdatedAt, id)); err != nil {
			return fmt.Errorf("unindex start task %s: %w", id, err)
		}
		if err := tx.Bucket(bTasksOpen).Delete(openKey(&t)); err != nil {
			return fmt.Errorf("unindex start task %s: %w", id, err)
		}
		return tx.Bucket(bTasks).Delete([]byte(id))
	})
}

// ListUnfinishedStartTasks implements acs.Store.
func (s *Store) ListUnfinishedStartTasks(_ context.Context, updatedBefore time.Time, limit int) ([]acs.StartTask, error) {
	var out []acs.StartTask
	end := appendTime(nil, updatedBefore)
	limit = clamp(limit)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bTasksOpen).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit && bytes.Compare(k[:8], end) < 0; k, _ = c.Next() {
			var t acs.StartTask
			if err := get(tx, bTasks, string(k[8:]), &t, "start task"); err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}
