package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// A conversation's owner-index entry (owner, created_at, id) carries
// convIndexValue: everything ConversationFilter looks at besides created_at,
// which is in the key. Searches decode only the records of their page, and
// counts decode none.

const convSub = 1 // flag: a sub-conversation

// convIndexValue is a version byte, flags, updated_at, the sandbox id
// (length-prefixed) and the lower-cased title.
func convIndexValue(c *acs.Conversation) []byte {
	var flags byte
	if c.ParentConversationID != nil {
		flags |= convSub
	}
	title := ""
	if c.Title != nil {
		title = strings.ToLower(*c.Title)
	}
	v := make([]byte, 0, 2+8+binary.MaxVarintLen64+len(c.SandboxID)+len(title))
	v = append(v, idxVersion, flags)
	v = appendTime(v, c.UpdatedAt)
	v = binary.AppendUvarint(v, uint64(len(c.SandboxID)))
	v = append(v, c.SandboxID...)
	return append(v, title...)
}

// convIndexFields returns the sandbox id and lower-cased title of an index
// value.
func convIndexFields(v []byte) (sandbox, title []byte, ok bool) {
	if len(v) < 11 || v[0] != idxVersion {
		return nil, nil, false
	}
	n, w := binary.Uvarint(v[10:])
	rest := v[10+max(w, 0):]
	if w <= 0 || n > uint64(len(rest)) {
		return nil, nil, false
	}
	return rest[:n], rest[n:], true
}

func sandboxKey(sandboxID, convID string) []byte { return []byte(sandboxID + "\x00" + convID) }

func convID(k []byte, owner string) string { return string(k[len(owner)+1+8:]) }

// convSpan is the part of an owner's index f can match (the created_at
// range), and the filter for the entries in it (nil: all match).
func convSpan(tx *bolt.Tx, owner string, f acs.ConversationFilter) (keyRange, func(k, v []byte) (bool, error)) {
	var lo, hi []byte
	if f.CreatedGTE != nil {
		lo = ownerKey(owner, *f.CreatedGTE, "")
	}
	if f.CreatedLT != nil {
		hi = ownerKey(owner, *f.CreatedLT, "")
	}
	r := prefixRange(ownerPrefix(owner)).narrow(lo, hi)
	if f.TitleContains == "" && f.UpdatedGTE == nil && f.UpdatedLT == nil && f.SandboxID == "" && f.IncludeSubConversations {
		return r, nil
	}
	title := []byte(strings.ToLower(f.TitleContains))
	sandbox := []byte(f.SandboxID)
	var updLo, updHi uint64 = 0, ^uint64(0)
	if f.UpdatedGTE != nil {
		updLo = timeBits(*f.UpdatedGTE)
	}
	checkHi := f.UpdatedLT != nil
	if checkHi {
		updHi = timeBits(*f.UpdatedLT)
	}
	checkUpd := f.UpdatedGTE != nil || f.UpdatedLT != nil
	return r, func(k, v []byte) (bool, error) {
		if len(v) < 11 || v[0] != idxVersion { // an entry without an index value: read the record
			var c acs.Conversation
			if err := get(tx, bConvs, convID(k, owner), &c, "conversation"); err != nil {
				return false, err
			}
			v = convIndexValue(&c)
		}
		if !f.IncludeSubConversations && v[1]&convSub != 0 {
			return false, nil
		}
		if checkUpd {
			if u := binary.BigEndian.Uint64(v[2:10]); u < updLo || checkHi && u >= updHi {
				return false, nil
			}
		}
		if len(sandbox) == 0 && len(title) == 0 {
			return true, nil
		}
		sb, ti, ok := convIndexFields(v)
		if !ok {
			return false, fmt.Errorf("conversation %s: corrupt index entry", convID(k, owner))
		}
		return (len(sandbox) == 0 || bytes.Equal(sb, sandbox)) && (len(title) == 0 || bytes.Contains(ti, title)), nil
	}
}

// Each owner's conversation counts (all, top-level) are kept in bConvCount
// as two big-endian uint64s, changed with the records, so unfiltered counts
// read one key.

func addConvCount(tx *bolt.Tx, owner string, all, top int) error {
	b := tx.Bucket(bConvCount)
	var a, t uint64
	if v := b.Get([]byte(owner)); len(v) == 16 {
		a, t = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(int64(a)+int64(all)))
	v = binary.BigEndian.AppendUint64(v, uint64(int64(t)+int64(top)))
	if err := b.Put([]byte(owner), v); err != nil {
		return fmt.Errorf("count conversations of %s: %w", owner, err)
	}
	return nil
}

func topLevel(c *acs.Conversation) int {
	if c.ParentConversationID == nil {
		return 1
	}
	return 0
}

// CreateConversation implements acs.Store.
func (s *Store) CreateConversation(_ context.Context, c acs.Conversation) error {
	return s.db.Update(func(tx *bolt.Tx) error { return createConversation(tx, &c) })
}

// createConversation stores the new conversation c in tx; ErrConflict when
// its id exists.
func createConversation(tx *bolt.Tx, c *acs.Conversation) error {
	if tx.Bucket(bConvs).Get([]byte(c.ID)) != nil {
		return fmt.Errorf("conversation %s: %w", c.ID, acs.ErrConflict)
	}
	return insertConversation(tx, c)
}

func insertConversation(tx *bolt.Tx, c *acs.Conversation) error {
	if err := put(tx, bConvs, c.ID, c); err != nil {
		return err
	}
	if c.SandboxID != "" {
		if err := tx.Bucket(bConvSandbox).Put(sandboxKey(c.SandboxID, c.ID), nil); err != nil {
			return fmt.Errorf("index conversation %s: %w", c.ID, err)
		}
	}
	if err := tx.Bucket(bConvOwner).Put(ownerKey(c.OwnerID, c.CreatedAt, c.ID), convIndexValue(c)); err != nil {
		return fmt.Errorf("index conversation %s: %w", c.ID, err)
	}
	return addConvCount(tx, c.OwnerID, 1, topLevel(c))
}

// GetConversation implements acs.Store.
func (s *Store) GetConversation(_ context.Context, id string) (acs.Conversation, error) {
	var c acs.Conversation
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, bConvs, id, &c, "conversation") })
	return c, err
}

// UpdateConversation implements acs.Store. The id, owner and creation time
// are not updatable.
func (s *Store) UpdateConversation(_ context.Context, id string, fn func(*acs.Conversation) error) (acs.Conversation, error) {
	var c acs.Conversation
	err := s.db.Update(func(tx *bolt.Tx) error {
		c = acs.Conversation{}
		if err := get(tx, bConvs, id, &c, "conversation"); err != nil {
			return err
		}
		oldSandbox, owner, created, oldTop := c.SandboxID, c.OwnerID, c.CreatedAt, topLevel(&c)
		if err := fn(&c); err != nil {
			return err
		}
		c.ID, c.OwnerID, c.CreatedAt = id, owner, created
		if top := topLevel(&c); top != oldTop {
			if err := addConvCount(tx, owner, 0, top-oldTop); err != nil {
				return err
			}
		}
		if c.SandboxID != oldSandbox {
			if oldSandbox != "" {
				if err := tx.Bucket(bConvSandbox).Delete(sandboxKey(oldSandbox, id)); err != nil {
					return fmt.Errorf("unindex conversation %s: %w", id, err)
				}
			}
			if c.SandboxID != "" {
				if err := tx.Bucket(bConvSandbox).Put(sandboxKey(c.SandboxID, id), nil); err != nil {
					return fmt.Errorf("index conversation %s: %w", id, err)
				}
			}
		}
		if err := tx.Bucket(bConvOwner).Put(ownerKey(owner, created, id), convIndexValue(&c)); err != nil {
			return fmt.Errorf("index conversation %s: %w", id, err)
		}
		return put(tx, bConvs, id, c)
	})
	return c, err
}

// SearchConversations implements acs.Store. Filters are evaluated on the
// owner index; only the page's records are decoded.
func (s *Store) SearchConversations(_ context.Context, ownerID string, f acs.ConversationFilter, opts acs.ListOptions) (acs.Page[acs.Conversation], error) {
	var page acs.Page[acs.Conversation]
	start, err := decodeToken(opts.PageToken, tagConversations, ownerPrefix(ownerID))
	if err != nil {
		return page, err
	}
	limit := clamp(opts.Limit)
	err = s.db.View(func(tx *bolt.Tx) error {
		r, match := convSpan(tx, ownerID, f)
		convs := tx.Bucket(bConvs)
		next, err := walkPage(tx.Bucket(bConvOwner).Cursor(), r, start, true, limit, match, func(k, _ []byte) error {
			id := convID(k, ownerID)
			raw := convs.Get([]byte(id))
			if raw == nil {
				return fmt.Errorf("conversation %s indexed but missing", id)
			}
			if page.Items == nil {
				page.Items = make([]acs.Conversation, 0, limit)
			}
			page.Items = append(page.Items, acs.Conversation{})
			if err := storerecord.Unmarshal(raw, &page.Items[len(page.Items)-1]); err != nil {
				return fmt.Errorf("decode conversation %s: %w", id, err)
			}
			return nil
		})
		if next != nil {
			page.Next = encodeToken(tagConversations, next)
		}
		return err
	})
	return page, err
}

// CountConversations implements acs.Store. No record is decoded: without a
// filter (but for IncludeSubConversations) it reads the owner's counter,
// otherwise it filters the owner index.
func (s *Store) CountConversations(_ context.Context, ownerID string, f acs.ConversationFilter) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		if f.TitleContains == "" && f.CreatedGTE == nil && f.CreatedLT == nil && f.UpdatedGTE == nil &&
			f.UpdatedLT == nil && f.SandboxID == "" {
			if v := tx.Bucket(bConvCount).Get([]byte(ownerID)); len(v) == 16 {
				if f.IncludeSubConversations {
					n = int(binary.BigEndian.Uint64(v))
				} else {
					n = int(binary.BigEndian.Uint64(v[8:]))
				}
				return nil
			}
		}
		r, match := convSpan(tx, ownerID, f)
		c := tx.Bucket(bConvOwner).Cursor()
		for k, v := c.Seek(r.lo); k != nil && bytes.Compare(k, r.hi) < 0; k, v = c.Next() {
			if match != nil {
				ok, err := match(k, v)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			n++
		}
		return nil
	})
	return n, err
}

// ListConversationsBySandbox implements acs.Store.
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

// DeleteConversation implements acs.Store.
func (s *Store) DeleteConversation(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var c acs.Conversation
		if err := get(tx, bConvs, id, &c, "conversation"); err != nil {
			return err
		}
		if c.SandboxID != "" {
			if err := tx.Bucket(bConvSandbox).Delete(sandboxKey(c.SandboxID, id)); err != nil {
				return fmt.Errorf("unindex conversation %s: %w", id, err)
			}
		}
		if err := tx.Bucket(bConvOwner).Delete(ownerKey(c.OwnerID, c.CreatedAt, id)); err != nil {
			return fmt.Errorf("unindex conversation %s: %w", id, err)
		}
		if err := addConvCount(tx, c.OwnerID, -1, -topLevel(&c)); err != nil {
			return err
		}
		return tx.Bucket(bConvs).Delete([]byte(id))
	})
}
