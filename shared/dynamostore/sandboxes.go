package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
)

// AllSandboxShards is the number of GSI4 partitions that list every
// sandbox (the reconciler's listing). Shards are ranges of the id's first
// byte (hex ids spread evenly: 0-3, 4-7, 8-b, c-f), so listing the shards
// in order lists every sandbox in id order. GSI4 is KEYS_ONLY: it is
// written only when a sandbox is created or deleted.
const AllSandboxShards = 4

const aStatus = "status"

func sandboxShard(id string) int {
	switch c := id[0]; {
	case c < '4':
		return 0
	case c < '8':
		return 1
	case c < 'c':
		return 2
	}
	return 3
}

func sandboxItem(sb *acs.Sandbox) (item, error) {
	it, err := record(pSandbox+sb.ID, sRecord, sb)
	if err != nil {
		return nil, err
	}
	it[aGSI3PK], it[aGSI3SK] = sv(pSandboxes+sb.OwnerID), sv(timeIDKey(sb.CreatedAt, sb.ID))
	it[aGSI4PK], it[aGSI4SK] = sv(pAllSandbox+strconv.Itoa(sandboxShard(sb.ID))), sv(sb.ID)
	setS(it, aStatus, string(sb.Status))
	return it, nil
}

func sessionLookup(hash, id string) item {
	it := key(pSessionHash+hash, sRecord)
	it[aID] = sv(id)
	return it
}

const aID = "id"

// CreateSandbox implements acs.Store: the record and its session-key lookup
// in one transaction.
func (s *Store) CreateSandbox(ctx context.Context, sb acs.Sandbox) error {
	if sb.ID == "" {
		return fmt.Errorf("sandbox without an id: %w", acs.ErrInvalid)
	}
	it, err := sandboxItem(&sb)
	if err != nil {
		return err
	}
	if sb.SessionKeyHash == "" {
		return s.create(ctx, it, "sandbox", sb.ID)
	}
	it[aVersion] = nv(1)
	e1, e2 := newExpr(), newExpr()
	err = s.transact(ctx, []types.TransactWriteItem{condPut(it, notExists(e1), e1),
		condPut(sessionLookup(sb.SessionKeyHash, sb.ID), notExists(e2), e2)})
	for _, r := range cancelReasons(err) {
		if r == "ConditionalCheckFailed" {
			return fmt.Errorf("sandbox %s: %w", sb.ID, acs.ErrConflict)
		}
	}
	return err
}

// GetSandbox implements acs.Store.
func (s *Store) GetSandbox(ctx context.Context, id string) (acs.Sandbox, error) {
	var sb acs.Sandbox
	it, err := s.getItem(ctx, key(pSandbox+id, sRecord))
	if err != nil {
		return sb, err
	}
	if it == nil {
		return sb, notFound("sandbox", id)
	}
	return sb, decode(it, &sb, "sandbox", id)
}

// GetSandboxBySessionKeyHash implements acs.Store: the lookup, then the
// record (which must still carry the hash).
func (s *Store) GetSandboxBySessionKeyHash(ctx context.Context, hash string) (acs.Sandbox, error) {
	if hash == "" {
		return acs.Sandbox{}, notFound("sandbox", "by session key")
	}
	it, err := s.getItem(ctx, key(pSessionHash+hash, sRecord))
	if err != nil {
		return acs.Sandbox{}, err
	}
	if it == nil {
		return acs.Sandbox{}, notFound("sandbox", "by session key")
	}
	sb, err := s.GetSandbox(ctx, str(it, aID))
	if err == nil && sb.SessionKeyHash != hash {
		return acs.Sandbox{}, notFound("sandbox", "by session key")
	}
	return sb, err
}

// UpdateSandbox implements acs.Store: a conditional put on the version, so
// a slot reserved in fn (acs.Sandbox.Reserve) never overfills the sandbox.
// A new session key moves its lookup in the same transaction.
func (s *Store) UpdateSandbox(ctx context.Context, id string, fn func(*acs.Sandbox) error) (acs.Sandbox, error) {
	var sb acs.Sandbox
	_, err := s.update(ctx, "sandbox", id, key(pSandbox+id, sRecord), false, func(cur item) (p writePlan, err error) {
		sb, p, err = sandboxPlan(id, cur, fn)
		return p, err
	})
	if err != nil {
		return acs.Sandbox{}, err
	}
	return sb, nil
}

// sandboxPlan is UpdateSandbox's write of the sandbox id, whose item is
// cur: the sandbox after fn, its item and the session-key lookup's
// changes.
func sandboxPlan(id string, cur item, fn func(*acs.Sandbox) error) (acs.Sandbox, writePlan, error) {
	var sb acs.Sandbox
	if err := decode(cur, &sb, "sandbox", id); err != nil {
		return sb, writePlan{}, err
	}
	oldHash, owner, created := sb.SessionKeyHash, sb.OwnerID, sb.CreatedAt
	if err := fn(&sb); err != nil {
		return sb, writePlan{}, err
	}
	sb.ID, sb.OwnerID, sb.CreatedAt = id, owner, created
	it, err := sandboxItem(&sb)
	p := writePlan{item: it}
	if err != nil || sb.SessionKeyHash == oldHash {
		return sb, p, err
	}
	if oldHash != "" {
		e := newExpr()
		p.extra = append(p.extra, condDelete(key(pSessionHash+oldHash, sRecord),
			fmt.Sprintf("attribute_not_exists(%s) OR %s = %s", e.n(aPK), e.n(aID), e.v(sv(id))), e))
	}
	newAt := -1
	if sb.SessionKeyHash != "" {
		e := newExpr()
		newAt = len(p.extra)
		p.extra = append(p.extra, condPut(sessionLookup(sb.SessionKeyHash, id),
			fmt.Sprintf("attribute_not_exists(%s) OR %s = %s", e.n(aPK), e.n(aID), e.v(sv(id))), e))
	}
	p.extraFailed = func(i int) error {
		if i == newAt {
			return fmt.Errorf("sandbox %s: session key hash in use: %w", id, acs.ErrConflict)
		}
		return nil
	}
	return sb, p, nil
}

// UpdateStartTaskAndSandbox implements acs.Store: the task's conditional
// put and the sandbox's (on its version) in one transaction.
func (s *Store) UpdateStartTaskAndSandbox(ctx context.Context, id string, fn func(*acs.StartTask) error, sandboxID string, sandboxFn func(*acs.Sandbox) error) (acs.StartTask, acs.Sandbox, error) {
	var t acs.StartTask
	var sb acs.Sandbox
	_, err := s.update(ctx, "start task", id, key(pTask+id, sRecord), false, func(cur item) (writePlan, error) {
		return s.withSandbox(ctx, sandboxID, sandboxFn, &sb, func() (writePlan, error) { return s.taskPlan(id, cur, fn, &t) })
	})
	if err != nil {
		return acs.StartTask{}, acs.Sandbox{}, err
	}
	return t, sb, nil
}

// CreateStartTaskAndUpdateSandbox implements acs.Store: the task's put (on
// its absence) and the sandbox's (on its version) in one transaction.
func (s *Store) CreateStartTaskAndUpdateSandbox(ctx context.Context, t acs.StartTask, sandboxID string, sandboxFn func(*acs.Sandbox) error) (acs.Sandbox, error) {
	if t.ID == "" {
		return acs.Sandbox{}, fmt.Errorf("start task without an id: %w", acs.ErrInvalid)
	}
	var sb acs.Sandbox
	_, err := s.update(ctx, "start task", t.ID, key(pTask+t.ID, sRecord), true, func(cur item) (writePlan, error) {
		if cur != nil {
			return writePlan{}, fmt.Errorf("start task %s: %w", t.ID, acs.ErrConflict)
		}
		return s.withSandbox(ctx, sandboxID, sandboxFn, &sb, func() (writePlan, error) {
			it, err := s.taskItem(&t)
			return writePlan{item: it}, err
		})
	})
	if err != nil {
		return acs.Sandbox{}, err
	}
	return sb, nil
}

// withSandbox is the plan of a start task's write (task, called after
// sandboxFn) with the update of sandbox sandboxID by sandboxFn (on the
// version read now), setting *sb to the updated sandbox. A failed
// condition of the sandbox's put retries the whole write.
func (s *Store) withSandbox(ctx context.Context, sandboxID string, sandboxFn func(*acs.Sandbox) error, sb *acs.Sandbox, task func() (writePlan, error)) (writePlan, error) {
	sbCur, err := s.getItem(ctx, key(pSandbox+sandboxID, sRecord))
	if err != nil {
		return writePlan{}, err
	}
	if sbCur == nil || s.expired(sbCur) {
		return writePlan{}, notFound("sandbox", sandboxID)
	}
	var sp writePlan
	if *sb, sp, err = sandboxPlan(sandboxID, sbCur, sandboxFn); err != nil {
		return writePlan{}, err
	}
	p, err := task()
	if err != nil {
		return writePlan{}, err
	}
	v := num(sbCur, aVersion)
	sp.item[aVersion], sp.item[aWrite] = nv(v+1), sv(writeToken())
	e := newExpr()
	p.extra = append([]types.TransactWriteItem{condPut(sp.item, versionIs(e, v), e)}, sp.extra...)
	p.extraFailed = func(i int) error {
		if i == 0 || sp.extraFailed == nil {
			return nil // the sandbox changed: again
		}
		return sp.extraFailed(i - 1)
	}
	return p, nil
}

// ListSandboxes implements acs.Store: GSI3 (KEYS_ONLY) by creation time,
// newest first, then the records (strongly consistent).
func (s *Store) ListSandboxes(ctx context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	var page acs.Page[acs.Sandbox]
	last, err := decodeToken(opts.PageToken, tagSandboxes, ownerID, validTimeIDKey)
	if err != nil {
		return page, err
	}
	q := &rangeQuery{index: idxGSI3, pkAttr: aGSI3PK, skAttr: aGSI3SK, pk: pSandboxes + ownerID, desc: true}
	more, err := s.walkSandboxes(ctx, q, last, clamp(opts.Limit), &page.Items, &last, nil)
	if more {
		page.Next = encodeToken(tagSandboxes, ownerID, last)
	}
	return page, err
}

// ListSandboxesByStatus lists a user's sandboxes in a status, newest first
// (GSI3 with a filter on the projected status). It is not part of
// acs.Store.
func (s *Store) ListSandboxesByStatus(ctx context.Context, ownerID string, status acs.SandboxStatus, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	var page acs.Page[acs.Sandbox]
	last, err := decodeToken(opts.PageToken, tagSandboxStatus, ownerID+"\x00"+string(status), validTimeIDKey)
	if err != nil {
		return page, err
	}
	e := newExpr()
	q := &rangeQuery{index: idxGSI3, pkAttr: aGSI3PK, skAttr: aGSI3SK, pk: pSandboxes + ownerID, desc: true, e: e,
		filter: []string{fmt.Sprintf("%s = %s", e.n(aStatus), e.v(sv(string(status))))}}
	// The record decides (the index lags a status change).
	more, err := s.walkSandboxes(ctx, q, last, clamp(opts.Limit), &page.Items, &last,
		func(sb *acs.Sandbox) bool { return sb.Status == status })
	if more {
		page.Next = encodeToken(tagSandboxStatus, ownerID+"\x00"+string(status), last)
	}
	return page, err
}

// walkSandboxes appends to out the sandboxes of an index partition (q)
// after the entry skip, until out holds limit; lastKey is set to the index
// sort key of the last one appended. It reports whether more entries
// follow. Entries of deleted sandboxes (the index lags), and those keep
// (when set) refuses, are passed over.
func (s *Store) walkSandboxes(ctx context.Context, q *rangeQuery, skip string, limit int, out *[]acs.Sandbox, lastKey *string,
	keep func(*acs.Sandbox) bool) (bool, error) {
	for {
		need := limit - len(*out)
		q.lo, q.hi = after("", "", skip, q.desc)
		keys, err := s.collect(ctx, q, need, skip)
		if err != nil {
			return false, err
		}
		more := len(keys) > need
		if more {
			keys = keys[:need]
		}
		recs, err := s.sandboxes(ctx, keys)
		if err != nil {
			return false, err
		}
		for i, sb := range recs {
			skip = str(keys[i], q.skAttr)
			if sb != nil && (keep == nil || keep(sb)) {
				*out = append(*out, *sb)
				*lastKey = skip
			}
		}
		if !more || len(*out) == limit {
			return more, nil
		}
	}
}

// sandboxes reads the records of index entries (nil for deleted ones).
func (s *Store) sandboxes(ctx context.Context, keys []item) ([]*acs.Sandbox, error) {
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]*acs.Sandbox, len(keys))
	for i, k := range keys {
		it := got[str(k, aPK)+"\x00"+str(k, aSK)]
		if it == nil {
			continue
		}
		out[i] = new(acs.Sandbox)
		if err := decode(it, out[i], "sandbox", str(k, aPK)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ListAllSandboxes implements acs.Store: the GSI4 shards in order, each by
// sandbox id, then the records. Tokens name the shard and the last id.
func (s *Store) ListAllSandboxes(ctx context.Context, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	var page acs.Page[acs.Sandbox]
	shard, last := 0, ""
	if opts.PageToken != "" {
		raw, err := base64URL.DecodeString(opts.PageToken)
		if err != nil || len(raw) < 3 {
			return page, fmt.Errorf("page token: %w", acs.ErrInvalid)
		}
		shard = int(raw[1]) - '0'
		if shard < 0 || shard >= AllSandboxShards {
			return page, fmt.Errorf("page token: %w", acs.ErrInvalid)
		}
		if last, err = decodeToken(opts.PageToken, tagAllSandboxes, strconv.Itoa(shard), nil); err != nil {
			return page, err
		}
	}
	limit := clamp(opts.Limit)
	lastShard, lastID := shard, last
	for ; shard < AllSandboxShards; shard, last = shard+1, "" {
		q := &rangeQuery{index: idxGSI4, pkAttr: aGSI4PK, skAttr: aGSI4SK, pk: pAllSandbox + strconv.Itoa(shard)}
		n := len(page.Items)
		more, err := s.walkSandboxes(ctx, q, last, limit, &page.Items, &last, nil)
		if err != nil {
			return page, err
		}
		if len(page.Items) > n {
			lastShard, lastID = shard, last
		}
		if more {
			page.Next = encodeToken(tagAllSandboxes, strconv.Itoa(lastShard), lastID)
			return page, nil
		}
	}
	return page, nil
}

// DeleteSandbox implements acs.Store: the record (on its version) and its
// session lookup in one transaction.
func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	foreignLookup := false // the session lookup names another sandbox: leave it
	return s.retry(ctx, "delete sandbox "+id, func() error {
		it, err := s.getItem(ctx, key(pSandbox+id, sRecord))
		if err != nil {
			return err
		}
		if it == nil {
			return notFound("sandbox", id)
		}
		var sb acs.Sandbox
		if err := decode(it, &sb, "sandbox", id); err != nil {
			return err
		}
		e := newExpr()
		items := []types.TransactWriteItem{condDelete(key(pSandbox+id, sRecord), versionIs(e, num(it, aVersion)), e)}
		if sb.SessionKeyHash != "" && !foreignLookup {
			e2 := newExpr()
			items = append(items, condDelete(key(pSessionHash+sb.SessionKeyHash, sRecord),
				fmt.Sprintf("attribute_not_exists(%s) OR %s = %s", e2.n(aPK), e2.n(aID), e2.v(sv(id))), e2))
		}
		if len(items) == 1 {
			d := items[0].Delete
			_, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: d.Key, ConditionExpression: d.ConditionExpression,
				ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues})
			if isCondFailed(err) || contended(err) {
				return errRetry
			}
			return err
		}
		err = s.transact(ctx, items)
		if r := cancelReasons(err); len(r) == 2 && r[0] != "ConditionalCheckFailed" && r[1] == "ConditionalCheckFailed" {
			foreignLookup = true
		}
		if lostRace(err) {
			return errRetry
		}
		return err
	})
}
