// Package boltstore is the embedded acs.Store: one bbolt file under the data
// directory. Records are JSON (the record types of shared/storerecord, not
// the domain types' tags); secondary indexes (owner and creation or update
// time, key hashes, conversations by sandbox, event ids) live in their own
// buckets and change in the same transaction as the record, so they never
// disagree. Owner-index entries carry the few fields searches filter on, so
// searches and counts decode only the records they return.
package boltstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

var (
	bUsers        = []byte("users")
	bKeys         = []byte("apikeys")
	bKeyHash      = []byte("apikey_hash")
	bTasks        = []byte("tasks")
	bTasksOwner   = []byte("tasks_owner")
	bTasksUpdated = []byte("tasks_owner_updated")
	bTasksOpen    = []byte("tasks_open") // unfinished tasks by update time
	bSandboxes    = []byte("sandboxes")
	bSandboxHash  = []byte("sandbox_keyhash")
	bSandboxOwner = []byte("sandboxes_owner")
	bConvs        = []byte("conversations")
	bConvOwner    = []byte("conversations_owner")
	bConvSandbox  = []byte("conversations_sandbox")
	bConvCount    = []byte("conversations_count")
	bEvents       = []byte("events")
	bEventIDs     = []byte("event_ids")
	bEventText    = []byte("event_text") // per conversation: event key → text of the events that have one
	bSettings     = []byte("settings")
	bSecrets      = []byte("secrets")
	bPending      = []byte("pending_messages")
	bMeta         = []byte("meta")
	bQuotas       = []byte("quotas")
	bSessions     = []byte("browser_sessions")      // hash → session
	bSessionsUser = []byte("browser_sessions_user") // user \0 hash → nil
	bSignIn       = []byte("signin_tokens")         // hash → token
	bIdentities   = []byte("identities")            // issuer \0 subject → identity

	allBuckets = [][]byte{bUsers, bKeys, bKeyHash, bTasks, bTasksOwner, bTasksUpdated, bTasksOpen, bSandboxes, bSandboxHash,
		bSandboxOwner, bConvs, bConvOwner, bConvSandbox, bConvCount, bEvents, bEventIDs, bEventText, bSettings, bSecrets, bPending, bMeta, bQuotas,
		bSessions, bSessionsUser, bSignIn, bIdentities}
)

// Store is an acs.Store on a bbolt file.
type Store struct {
	db      boltDB
	watches taskWatches
}

// boltDB is the store's bbolt file. Its Update reports a write that found
// the disk or quota full as acs.ErrStorageFull: the transaction is rolled
// back, nothing is stored and the file stays consistent, so the same write
// works once space is freed.
type boltDB struct{ *bolt.DB }

func (d boltDB) Update(fn func(*bolt.Tx) error) error {
	err := d.DB.Update(fn)
	if diskfull.Is(err) {
		return fmt.Errorf("store %s: %w: %w", d.Path(), err, acs.ErrStorageFull)
	}
	return err
}

var _ acs.Store = (*Store)(nil)

// Open opens (creating) the store file at path. A file written by an older
// version gains the buckets and index entries it lacks.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		return migrate(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("init store %s: %w", path, err)
	}
	return &Store{db: boltDB{db}}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

func notFound(what, id string) error { return fmt.Errorf("%s %s: %w", what, id, acs.ErrNotFound) }

func get(tx *bolt.Tx, bucket []byte, id string, v any, what string) error {
	raw := tx.Bucket(bucket).Get([]byte(id))
	if raw == nil {
		return notFound(what, id)
	}
	if err := storerecord.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", what, id, err)
	}
	return nil
}

func put(tx *bolt.Tx, bucket []byte, id string, v any) error {
	raw, err := storerecord.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", bucket, id, err)
	}
	return tx.Bucket(bucket).Put([]byte(id), raw)
}

// marshalNoEscape encodes without HTML escaping, so stored JSON (event
// bodies, message contents, metrics) comes back as it was given.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// timeBits orders instants as big-endian unsigned integers.
// timeBits orders times as unsigned integers. Times outside the range of
// nanosecond Unix time (years 1678 to 2262) are clamped to its ends, so a
// filter such as created_at__gte=2999-01-01 still compares correctly.
func timeBits(t time.Time) uint64 {
	switch {
	case t.After(maxNanoTime):
		return math.MaxUint64
	case t.Before(minNanoTime):
		return 0
	}
	return uint64(t.UnixNano()) + 1<<63
}

var (
	maxNanoTime = time.Unix(0, math.MaxInt64)
	minNanoTime = time.Unix(0, math.MinInt64)
)

func appendTime(b []byte, t time.Time) []byte { return binary.BigEndian.AppendUint64(b, timeBits(t)) }

func ownerPrefix(owner string) []byte { return append([]byte(owner), 0) }

// ownerKey orders an owner's records by a time (creation or update), then id.
func ownerKey(owner string, t time.Time, id string) []byte {
	k := make([]byte, 0, len(owner)+1+8+len(id))
	k = append(k, owner...)
	k = append(k, 0)
	k = appendTime(k, t)
	return append(k, id...)
}

// validKeyPart rejects the separator byte in ids that become key prefixes.
func validKeyPart(what, s string) error {
	if s == "" || strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s %q: %w", what, s, acs.ErrInvalid)
	}
	return nil
}

// ---- paging

// Page tokens are base64 of a tag naming the listing (and its order) and the
// index key of the next page's first entry, so a token only works for the
// listing that issued it.
const (
	tagConversations = 'c'
	tagSandboxes     = 's'
	tagAllSandboxes  = 'S'
	tagEvents        = 'e'
	tagTasksCreated  = 'a'
	tagTasksCreatedD = 'A'
	tagTasksUpdated  = 'u'
	tagTasksUpdatedD = 'U'
)

func encodeToken(tag byte, k []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{tag}, k...))
}

// decodeToken returns the key a token resumes at (nil for ""); ErrInvalid
// unless it was issued for the listing tag within prefix.
func decodeToken(tok string, tag byte, prefix []byte) ([]byte, error) {
	if tok == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 2+len(prefix) || raw[0] != tag || !bytes.HasPrefix(raw[1:], prefix) {
		return nil, fmt.Errorf("page token: %w", acs.ErrInvalid)
	}
	return raw[1:], nil
}

func clamp(limit int) int {
	if limit <= 0 || limit > 100 {
		return 100
	}
	return limit
}

// keyRange bounds a walk: lo inclusive, hi exclusive; nil is unbounded.
type keyRange struct{ lo, hi []byte }

// prefixRange is the range of keys starting with prefix.
func prefixRange(prefix []byte) keyRange {
	hi := bytes.Clone(prefix)
	for i := len(hi) - 1; i >= 0; i-- {
		if hi[i] < 0xff {
			hi[i]++
			return keyRange{lo: prefix, hi: hi[:i+1]}
		}
	}
	return keyRange{lo: prefix}
}

// narrow intersects r with [lo, hi) (nil bounds leave r's).
func (r keyRange) narrow(lo, hi []byte) keyRange {
	if lo != nil && (r.lo == nil || bytes.Compare(lo, r.lo) > 0) {
		r.lo = lo
	}
	if hi != nil && (r.hi == nil || bytes.Compare(hi, r.hi) < 0) {
		r.hi = hi
	}
	return r
}

// walkPage walks the keys of r from start (inclusive; nil: the range's first
// key in the walk's direction), ascending or descending. match reports
// whether an entry belongs to the listing (nil: all do); the first limit
// matches (all when limit < 0) go to keep, and the key of the next match is returned as the next
// page's start (nil: no more). Only keep needs to decode records.
func walkPage(c *bolt.Cursor, r keyRange, start []byte, desc bool, limit int,
	match func(k, v []byte) (bool, error), keep func(k, v []byte) error) ([]byte, error) {
	var k, v []byte
	switch {
	case desc && start != nil && (r.hi == nil || bytes.Compare(start, r.hi) < 0):
		k, v = c.Seek(start)
		if k == nil {
			k, v = c.Last()
		} else if !bytes.Equal(k, start) {
			k, v = c.Prev()
		}
	case desc && r.hi != nil:
		k, v = c.Seek(r.hi)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	case desc:
		k, v = c.Last()
	default:
		from := r.lo
		if start != nil && (from == nil || bytes.Compare(start, from) > 0) {
			from = start
		}
		if from != nil {
			k, v = c.Seek(from)
		} else {
			k, v = c.First()
		}
	}
	n := 0
	for k != nil {
		if desc && r.lo != nil && bytes.Compare(k, r.lo) < 0 || !desc && r.hi != nil && bytes.Compare(k, r.hi) >= 0 {
			break
		}
		ok := true
		if match != nil {
			var err error
			if ok, err = match(k, v); err != nil {
				return nil, err
			}
		}
		if ok {
			if n == limit {
				return bytes.Clone(k), nil
			}
			if err := keep(k, v); err != nil {
				return nil, err
			}
			n++
		}
		if desc {
			k, v = c.Prev()
		} else {
			k, v = c.Next()
		}
	}
	return nil, nil
}

// ---- users and keys

// CreateUser implements acs.Store.
func (s *Store) CreateUser(_ context.Context, u acs.User) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bUsers).Get([]byte(u.ID)) != nil {
			return fmt.Errorf("user %s: %w", u.ID, acs.ErrConflict)
		}
		return put(tx, bUsers, u.ID, u)
	})
}

// GetUser implements acs.Store.
func (s *Store) GetUser(_ context.Context, id string) (acs.User, error) {
	var u acs.User
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bUsers, id, &u, "user") })
	return u, err
}

// CreateAPIKey implements acs.Store.
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

// GetAPIKeyByHash implements acs.Store.
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

// ListAPIKeys implements acs.Store.
func (s *Store) ListAPIKeys(_ context.Context, userID string) ([]acs.APIKey, error) {
	var out []acs.APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bKeys).ForEach(func(id, v []byte) error {
			var k acs.APIKey
			if err := storerecord.Unmarshal(v, &k); err != nil {
				return fmt.Errorf("decode api key %s: %w", id, err)
			}
			if k.UserID == userID {
				out = append(out, k)
			}
			return nil
		})
	})
	return out, err
}

// DeleteAPIKey implements acs.Store.
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
