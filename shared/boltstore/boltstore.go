// Package boltstore is the embedded acs.Store: one bbolt file under the data
// directory. Records are JSON; secondary indexes (owner and creation time,
// key hashes, conversations by sandbox, event ids) live in their own buckets
// and change in the same transaction as the record, so they never disagree.
package boltstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
)

var (
	bUsers        = []byte("users")
	bKeys         = []byte("apikeys")
	bKeyHash      = []byte("apikey_hash")
	bTasks        = []byte("tasks")
	bTasksOwner   = []byte("tasks_owner")
	bSandboxes    = []byte("sandboxes")
	bSandboxHash  = []byte("sandbox_keyhash")
	bSandboxOwner = []byte("sandboxes_owner")
	bConvs        = []byte("conversations")
	bConvOwner    = []byte("conversations_owner")
	bConvSandbox  = []byte("conversations_sandbox")
	bEvents       = []byte("events")
	bEventIDs     = []byte("event_ids")
)

// Store is an acs.Store on a bbolt file.
type Store struct {
	db *bolt.DB
}

var _ acs.Store = (*Store)(nil)

// Open opens (creating) the store file at path.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bUsers, bKeys, bKeyHash, bTasks, bTasksOwner, bSandboxes, bSandboxHash,
			bSandboxOwner, bConvs, bConvOwner, bConvSandbox, bEvents, bEventIDs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("init store: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

func notFound(what, id string) error { return fmt.Errorf("%s %s: %w", what, id, acs.ErrNotFound) }

func get(tx *bolt.Tx, bucket []byte, id string, v any, what string) error {
	raw := tx.Bucket(bucket).Get([]byte(id))
	if raw == nil {
		return notFound(what, id)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", what, id, err)
	}
	return nil
}

func put(tx *bolt.Tx, bucket []byte, id string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put([]byte(id), raw)
}

// ownerKey orders an owner's records by creation time, then id.
func ownerKey(owner string, created time.Time, id string) []byte {
	k := make([]byte, 0, len(owner)+1+8+len(id))
	k = append(k, owner...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(created.UnixNano())+1<<63)
	return append(k, id...)
}

func encodeToken(k []byte) string { return base64.RawURLEncoding.EncodeToString(k) }

func decodeToken(tok string, prefix []byte) ([]byte, error) {
	k, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !bytes.HasPrefix(k, prefix) {
		return nil, fmt.Errorf("page token: %w", acs.ErrInvalid)
	}
	return k, nil
}

func clamp(limit int) int {
	if limit <= 0 || limit > 100 {
		return 100
	}
	return limit
}

// listNewest walks an owner index newest first. load(id, keep) reports
// whether the record matches and, when keep is set, adds it to the page. After
// limit matches, the next matching key becomes the next page's token.
func listNewest(tx *bolt.Tx, index []byte, owner string, opts acs.ListOptions, load func(id string, keep bool) (bool, error)) (string, error) {
	prefix := append([]byte(owner), 0)
	c := tx.Bucket(index).Cursor()
	var k []byte
	if opts.PageToken != "" {
		start, err := decodeToken(opts.PageToken, prefix)
		if err != nil {
			return "", err
		}
		k, _ = c.Seek(start)
		if k == nil {
			k, _ = c.Last()
		} else if !bytes.Equal(k, start) {
			k, _ = c.Prev()
		}
	} else {
		// Seek past the owner's keys, then step back.
		k, _ = c.Seek(append([]byte(owner), 1))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
	}
	limit := clamp(opts.Limit)
	n := 0
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		id := string(k[len(prefix)+8:])
		ok, err := load(id, n < limit)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if n == limit {
			return encodeToken(append([]byte(nil), k...)), nil
		}
		n++
	}
	return "", nil
}

// ---- users and keys

func (s *Store) CreateUser(_ context.Context, u acs.User) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bUsers).Get([]byte(u.ID)) != nil {
			return fmt.Errorf("user %s: %w", u.ID, acs.ErrConflict)
		}
		return put(tx, bUsers, u.ID, u)
	})
}

func (s *Store) GetUser(_ context.Context, id string) (acs.User, error) {
	var u acs.User
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bUsers, id, &u, "user") })
	return u, err
}

func (s *Store) CreateAPIKey(_ context.Context, k acs.APIKey) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bKeys).Get([]byte(k.ID)) != nil || tx.Bucket(bKeyHash).Get([]byte(k.Hash)) != nil {
			return fmt.Errorf("api key %s: %w", k.ID, acs.ErrConflict)
		}
		if err := put(tx, bKeys, k.ID, k); err != nil {
			return err
		}
		return tx.Bucket(bKeyHash).Put([]byte(k.Hash), []byte(k.ID))
	})
}

func (s *Store) GetAPIKeyByHash(_ context.Context, hash string) (acs.APIKey, error) {
	var k acs.APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bKeyHash).Get([]byte(hash))
		if id == nil {
			return notFound("api key", "by hash")
		}
		return get(tx, bKeys, string(id), &k, "api key")
	})
	return k, err
}

func (s *Store) ListAPIKeys(_ context.Context, userID string) ([]acs.APIKey, error) {
	var out []acs.APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bKeys).ForEach(func(_, v []byte) error {
			var k acs.APIKey
			if err := json.Unmarshal(v, &k); err != nil {
				return err
			}
			if k.UserID == userID {
				out = append(out, k)
			}
			return nil
		})
	})
	return out, err
}

func (s *Store) DeleteAPIKey(_ context.Context, userID, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var k acs.APIKey
		if err := get(tx, bKeys, id, &k, "api key"); err != nil {
			return err
		}
		if k.UserID != userID {
			return notFound("api key", id)
		}
		if err := tx.Bucket(bKeyHash).Delete([]byte(k.Hash)); err != nil {
			return err
		}
		return tx.Bucket(bKeys).Delete([]byte(id))
	})
}

// ---- start tasks

func (s *Store) CreateStartTask(_ context.Context, t acs.StartTask) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bTasks).Get([]byte(t.ID)) != nil {
			return fmt.Errorf("start task %s: %w", t.ID, acs.ErrConflict)
		}
		if err := put(tx, bTasks, t.ID, t); err != nil {
			return err
		}
		return tx.Bucket(bTasksOwner).Put(ownerKey(t.OwnerID, t.CreatedAt, t.ID), nil)
	})
}

func (s *Store) GetStartTask(_ context.Context, id string) (acs.StartTask, error) {
	var t acs.StartTask
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bTasks, id, &t, "start task") })
	return t, err
}

func (s *Store) UpdateStartTask(_ context.Context, id string, fn func(*acs.StartTask) error) (acs.StartTask, error) {
	var t acs.StartTask
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := get(tx, bTasks, id, &t, "start task"); err != nil {
			return err
		}
		owner, created := t.OwnerID, t.CreatedAt
		if err := fn(&t); err != nil {
			return err
		}
		t.ID, t.OwnerID, t.CreatedAt = id, owner, created
		return put(tx, bTasks, id, t)
	})
	return t, err
}

func (s *Store) ListStartTasks(_ context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
	var page acs.Page[acs.StartTask]
	err := s.db.View(func(tx *bolt.Tx) error {
		next, err := listNewest(tx, bTasksOwner, ownerID, opts, func(id string, keep bool) (bool, error) {
			var t acs.StartTask
			if err := get(tx, bTasks, id, &t, "start task"); err != nil {
				return false, err
			}
			if keep {
				page.Items = append(page.Items, t)
			}
			return true, nil
		})
		page.Next = next
		return err
	})
	return page, err
}

// ---- sandboxes

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

func (s *Store) GetSandbox(_ context.Context, id string) (acs.Sandbox, error) {
	var sb acs.Sandbox
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bSandboxes, id, &sb, "sandbox") })
	return sb, err
}

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

func (s *Store) UpdateSandbox(_ context.Context, id string, fn func(*acs.Sandbox) error) (acs.Sandbox, error) {
	var sb acs.Sandbox
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := get(tx, bSandboxes, id, &sb, "sandbox"); err != nil {
			return err
		}
		oldHash, owner, created := sb.SessionKeyHash, sb.OwnerID, sb.CreatedAt
		if err := fn(&sb); err != nil {
			return err
		}
		sb.ID, sb.OwnerID, sb.CreatedAt = id, owner, created
		if sb.SessionKeyHash != oldHash {
			if oldHash != "" {
				if err := tx.Bucket(bSandboxHash).Delete([]byte(oldHash)); err != nil {
					return err
				}
			}
			if sb.SessionKeyHash != "" {
				if err := tx.Bucket(bSandboxHash).Put([]byte(sb.SessionKeyHash), []byte(id)); err != nil {
					return err
				}
			}
		}
		return put(tx, bSandboxes, id, sb)
	})
	return sb, err
}

func (s *Store) ListSandboxes(_ context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	var page acs.Page[acs.Sandbox]
	err := s.db.View(func(tx *bolt.Tx) error {
		next, err := listNewest(tx, bSandboxOwner, ownerID, opts, func(id string, keep bool) (bool, error) {
			var sb acs.Sandbox
			if err := get(tx, bSandboxes, id, &sb, "sandbox"); err != nil {
				return false, err
			}
			if keep {
				page.Items = append(page.Items, sb)
			}
			return true, nil
		})
		page.Next = next
		return err
	})
	return page, err
}

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

// ---- conversations

func sandboxKey(sandboxID, convID string) []byte { return []byte(sandboxID + "\x00" + convID) }

func (s *Store) CreateConversation(_ context.Context, c acs.Conversation) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bConvs).Get([]byte(c.ID)) != nil {
			return fmt.Errorf("conversation %s: %w", c.ID, acs.ErrConflict)
		}
		if err := put(tx, bConvs, c.ID, c); err != nil {
			return err
		}
		if c.SandboxID != "" {
			if err := tx.Bucket(bConvSandbox).Put(sandboxKey(c.SandboxID, c.ID), nil); err != nil {
				return err
			}
		}
		return tx.Bucket(bConvOwner).Put(ownerKey(c.OwnerID, c.CreatedAt, c.ID), nil)
	})
}

func (s *Store) GetConversation(_ context.Context, id string) (acs.Conversation, error) {
	var c acs.Conversation
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bConvs, id, &c, "conversation") })
	return c, err
}

func (s *Store) UpdateConversation(_ context.Context, id string, fn func(*acs.Conversation) error) (acs.Conversation, error) {
	var c acs.Conversation
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := get(tx, bConvs, id, &c, "conversation"); err != nil {
			return err
		}
		oldSandbox, owner, created := c.SandboxID, c.OwnerID, c.CreatedAt
		if err := fn(&c); err != nil {
			return err
		}
		c.ID, c.OwnerID, c.CreatedAt = id, owner, created
		if c.SandboxID != oldSandbox {
			if oldSandbox != "" {
				if err := tx.Bucket(bConvSandbox).Delete(sandboxKey(oldSandbox, id)); err != nil {
					return err
				}
			}
			if c.SandboxID != "" {
				if err := tx.Bucket(bConvSandbox).Put(sandboxKey(c.SandboxID, id), nil); err != nil {
					return err
				}
			}
		}
		return put(tx, bConvs, id, c)
	})
	return c, err
}

func inRange(t time.Time, gte, lt *time.Time) bool {
	return (gte == nil || !t.Before(*gte)) && (lt == nil || t.Before(*lt))
}

func (s *Store) SearchConversations(_ context.Context, ownerID string, f acs.ConversationFilter, opts acs.ListOptions) (acs.Page[acs.Conversation], error) {
	var page acs.Page[acs.Conversation]
	title := strings.ToLower(f.TitleContains)
	err := s.db.View(func(tx *bolt.Tx) error {
		next, err := listNewest(tx, bConvOwner, ownerID, opts, func(id string, keep bool) (bool, error) {
			var c acs.Conversation
			if err := get(tx, bConvs, id, &c, "conversation"); err != nil {
				return false, err
			}
			switch {
			case title != "" && (c.Title == nil || !strings.Contains(strings.ToLower(*c.Title), title)):
				return false, nil
			case !inRange(c.CreatedAt, f.CreatedGTE, f.CreatedLT), !inRange(c.UpdatedAt, f.UpdatedGTE, f.UpdatedLT):
				return false, nil
			case f.SandboxID != "" && c.SandboxID != f.SandboxID:
				return false, nil
			case !f.IncludeSubConversations && c.ParentConversationID != nil:
				return false, nil
			}
			if keep {
				page.Items = append(page.Items, c)
			}
			return true, nil
		})
		page.Next = next
		return err
	})
	return page, err
}

func (s *Store) ListConversationsBySandbox(_ context.Context, sandboxID string) ([]acs.Conversation, error) {
	var out []acs.Conversation
	prefix := []byte(sandboxID + "\x00")
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bConvSandbox).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			var conv acs.Conversation
			if err := get(tx, bConvs, string(k[len(prefix):]), &conv, "conversation"); err != nil {
				return err
			}
			out = append(out, conv)
		}
		return nil
	})
	return out, err
}

func (s *Store) DeleteConversation(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var c acs.Conversation
		if err := get(tx, bConvs, id, &c, "conversation"); err != nil {
			return err
		}
		if c.SandboxID != "" {
			if err := tx.Bucket(bConvSandbox).Delete(sandboxKey(c.SandboxID, id)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bConvOwner).Delete(ownerKey(c.OwnerID, c.CreatedAt, id)); err != nil {
			return err
		}
		return tx.Bucket(bConvs).Delete([]byte(id))
	})
}

// ---- events

type storedEvent struct {
	Kind   string          `json:"k"`
	Source string          `json:"s"`
	Text   string          `json:"t,omitempty"`
	JSON   json.RawMessage `json:"j"`
}

// marshalNoEscape encodes without HTML escaping, so stored event JSON comes
// back byte for byte.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func eventKey(ts time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(ts.UnixMicro())+1<<63)
	return append(k, id...)
}

func (s *Store) PutEvents(_ context.Context, convID string, evs []acs.StoredEvent) (int, error) {
	added := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		added = 0
		eb, err := tx.Bucket(bEvents).CreateBucketIfNotExists([]byte(convID))
		if err != nil {
			return err
		}
		ib, err := tx.Bucket(bEventIDs).CreateBucketIfNotExists([]byte(convID))
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.ID == "" {
				return fmt.Errorf("event without id: %w", acs.ErrInvalid)
			}
			if ib.Get([]byte(ev.ID)) != nil {
				continue
			}
			raw, err := marshalNoEscape(storedEvent{Kind: ev.Kind, Source: ev.Source, Text: ev.Text, JSON: ev.JSON})
			if err != nil {
				return err
			}
			k := eventKey(ev.Timestamp, ev.ID)
			if err := eb.Put(k, raw); err != nil {
				return err
			}
			if err := ib.Put([]byte(ev.ID), k); err != nil {
				return err
			}
			added++
		}
		return nil
	})
	return added, err
}

func matchEvent(f *acs.EventFilter, body string, e *storedEvent) bool {
	return (f.Kind == "" || e.Kind == f.Kind) && (f.Source == "" || e.Source == f.Source) &&
		(body == "" || strings.Contains(e.Text, body))
}

func (s *Store) SearchEvents(_ context.Context, convID string, q acs.EventQuery) (acs.Page[[]byte], error) {
	var page acs.Page[[]byte]
	body := strings.ToLower(q.Body)
	limit := clamp(q.Limit)
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		if eb == nil {
			if q.PageToken != "" {
				return fmt.Errorf("page token: %w", acs.ErrInvalid)
			}
			return nil
		}
		c := eb.Cursor()
		var lo, hi []byte
		if q.TimestampGTE != nil {
			lo = eventKey(*q.TimestampGTE, "")
		}
		if q.TimestampLT != nil {
			hi = eventKey(*q.TimestampLT, "")
		}
		var k, v []byte
		if q.PageToken != "" {
			start, err := decodeToken(q.PageToken, nil)
			if err != nil || len(start) < 8 {
				return fmt.Errorf("page token: %w", acs.ErrInvalid)
			}
			k, v = c.Seek(start)
			if q.Desc && (k == nil || !bytes.Equal(k, start)) {
				if k == nil {
					k, v = c.Last()
				} else {
					k, v = c.Prev()
				}
			}
		} else if q.Desc {
			if hi != nil {
				k, v = c.Seek(hi)
				if k == nil {
					k, v = c.Last()
				} else {
					k, v = c.Prev()
				}
			} else {
				k, v = c.Last()
			}
		} else if lo != nil {
			k, v = c.Seek(lo)
		} else {
			k, v = c.First()
		}
		step := c.Next
		if q.Desc {
			step = c.Prev
		}
		for ; k != nil; k, v = step() {
			if lo != nil && bytes.Compare(k, lo) < 0 {
				if q.Desc {
					break
				}
				continue
			}
			if hi != nil && bytes.Compare(k, hi) >= 0 {
				if !q.Desc {
					break
				}
				continue
			}
			var e storedEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if !matchEvent(&q.EventFilter, body, &e) {
				continue
			}
			if len(page.Items) == limit {
				page.Next = encodeToken(append([]byte(nil), k...))
				break
			}
			page.Items = append(page.Items, append([]byte(nil), e.JSON...))
		}
		return nil
	})
	return page, err
}

func (s *Store) CountEvents(_ context.Context, convID string, f acs.EventFilter) (int, error) {
	n := 0
	body := strings.ToLower(f.Body)
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		if eb == nil {
			return nil
		}
		return eb.ForEach(func(k, v []byte) error {
			ts := time.UnixMicro(int64(binary.BigEndian.Uint64(k[:8]) - 1<<63))
			if !inRange(ts, f.TimestampGTE, f.TimestampLT) {
				return nil
			}
			var e storedEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if matchEvent(&f, body, &e) {
				n++
			}
			return nil
		})
	})
	return n, err
}

func (s *Store) GetEvents(_ context.Context, convID string, ids []string) ([][]byte, error) {
	out := make([][]byte, len(ids))
	err := s.db.View(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bEvents).Bucket([]byte(convID))
		ib := tx.Bucket(bEventIDs).Bucket([]byte(convID))
		if eb == nil || ib == nil {
			return nil
		}
		for i, id := range ids {
			k := ib.Get([]byte(id))
			if k == nil {
				continue
			}
			var e storedEvent
			if err := json.Unmarshal(eb.Get(k), &e); err != nil {
				return err
			}
			out[i] = append([]byte(nil), e.JSON...)
		}
		return nil
	})
	return out, err
}

func (s *Store) DeleteEvents(_ context.Context, convID string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bEvents, bEventIDs} {
			if err := tx.Bucket(b).DeleteBucket([]byte(convID)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	})
}
