package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// schemaVersion is the layout this code writes. Version 1 (no meta bucket)
// had empty owner-index values, no update-time task index, no conversation
// counts, and a sandbox conversation counter instead of slots. Version 2 had
// no index of unfinished tasks. Version 3 had no text index of events.
const schemaVersion = 4

var metaSchema = []byte("schema")

// migrate brings a file written by an older version to schemaVersion, in
// Open's transaction.
func migrate(tx *bolt.Tx) error {
	meta := tx.Bucket(bMeta)
	version := byte(1)
	if v := meta.Get(metaSchema); len(v) == 1 {
		version = v[0]
	}
	if version >= schemaVersion {
		return nil
	}
	if version < 2 {
		if err := migrateV2(tx); err != nil {
			return err
		}
	}
	if version < 3 {
		err := tx.Bucket(bTasks).ForEach(func(id, raw []byte) error {
			var t acs.StartTask
			if err := storerecord.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("migrate start task %s: %w", id, err)
			}
			if t.Status.Done() {
				return nil
			}
			return tx.Bucket(bTasksOpen).Put(openKey(&t), nil)
		})
		if err != nil {
			return err
		}
	}
	if version < 4 {
		if err := migrateV4(tx); err != nil {
			return err
		}
	}
	return meta.Put(metaSchema, []byte{schemaVersion})
}

// migrateV4 builds the text index of the events stored so far.
func migrateV4(tx *bolt.Tx) error {
	return tx.Bucket(bEvents).ForEachBucket(func(conv []byte) error {
		var tb *bolt.Bucket
		return tx.Bucket(bEvents).Bucket(conv).ForEach(func(k, raw []byte) error {
			var e storedEvent
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("migrate event of conversation %s: %w", conv, err)
			}
			if e.Text == "" {
				return nil
			}
			if tb == nil {
				var err error
				if tb, err = tx.Bucket(bEventText).CreateBucketIfNotExists(conv); err != nil {
					return fmt.Errorf("migrate events of conversation %s: %w", conv, err)
				}
			}
			return tb.Put(bytes.Clone(k), []byte(e.Text))
		})
	})
}

// migrateV2 brings a version 1 file to version 2.
func migrateV2(tx *bolt.Tx) error {
	type kv struct {
		bucket []byte
		k, v   []byte
	}
	var puts []kv
	counts := map[string][2]uint64{}
	err := tx.Bucket(bConvs).ForEach(func(id, raw []byte) error {
		var c acs.Conversation
		if err := storerecord.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("migrate conversation %s: %w", id, err)
		}
		puts = append(puts, kv{bConvOwner, ownerKey(c.OwnerID, c.CreatedAt, c.ID), convIndexValue(&c)})
		n := counts[c.OwnerID]
		n[0]++
		n[1] += uint64(topLevel(&c))
		counts[c.OwnerID] = n
		return nil
	})
	if err != nil {
		return err
	}
	for owner, n := range counts {
		v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, n[0]), n[1])
		puts = append(puts, kv{bConvCount, []byte(owner), v})
	}
	err = tx.Bucket(bTasks).ForEach(func(id, raw []byte) error {
		var t acs.StartTask
		if err := storerecord.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("migrate start task %s: %w", id, err)
		}
		v := taskIndexValue(&t)
		puts = append(puts, kv{bTasksOwner, ownerKey(t.OwnerID, t.CreatedAt, t.ID), v},
			kv{bTasksUpdated, ownerKey(t.OwnerID, t.UpdatedAt, t.ID), v})
		return nil
	})
	if err != nil {
		return err
	}
	// Sandboxes from before slots get one per conversation placed on them.
	err = tx.Bucket(bSandboxes).ForEach(func(id, raw []byte) error {
		var sb acs.Sandbox
		if err := storerecord.Unmarshal(raw, &sb); err != nil {
			return fmt.Errorf("migrate sandbox %s: %w", id, err)
		}
		if sb.Slots != nil {
			return nil
		}
		prefix := append(bytes.Clone(id), 0)
		c := tx.Bucket(bConvSandbox).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			sb.Slots = append(sb.Slots, string(k[len(prefix):]))
		}
		if sb.Slots == nil {
			return nil
		}
		out, err := storerecord.Marshal(sb)
		if err != nil {
			return fmt.Errorf("migrate sandbox %s: %w", id, err)
		}
		puts = append(puts, kv{bSandboxes, bytes.Clone(id), out})
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range puts {
		if err := tx.Bucket(p.bucket).Put(p.k, p.v); err != nil {
			return fmt.Errorf("migrate %s: %w", p.bucket, err)
		}
	}
	return nil
}
