package dynamostore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
)

// TaskRetention is how long a finished (READY or ERROR) start task is kept
// after its last update: its expires_at.
const TaskRetention = 30 * 24 * time.Hour

// Start-task filter attributes.
const (
	aCreated = "created" // timeKey(CreatedAt)
	aConv    = "conv"    // ConversationID
	aApp     = "app"     // AppConversationID
)

func (s *Store) taskItem(t *acs.StartTask) (item, error) {
	it, err := record(pTask+t.ID, sRecord, t)
	if err != nil {
		return nil, err
	}
	it[aGSI1PK], it[aGSI1SK] = sv(pTasksOwner+t.OwnerID), sv(timeIDKey(t.CreatedAt, t.ID))
	it[aGSI2PK], it[aGSI2SK] = sv(pTasksUpd+t.OwnerID), sv(timeIDKey(t.UpdatedAt, t.ID))
	it[aCreated] = sv(timeKey(t.CreatedAt))
	setS(it, aConv, t.ConversationID)
	if t.AppConversationID != nil {
		setS(it, aApp, *t.AppConversationID)
	}
	if t.Status.Done() {
		it[aExpires] = nv(s.now().Add(TaskRetention).Unix())
	} else {
		// Sparse: only unfinished tasks are in the reconciler's index.
		it[aGSI4PK], it[aGSI4SK] = sv(pOpenTasks+strconv.Itoa(sandboxShard(t.ID))), sv(timeIDKey(t.UpdatedAt, t.ID))
	}
	return it, nil
}

// CreateStartTask implements acs.Store.
func (s *Store) CreateStartTask(ctx context.Context, t acs.StartTask) error {
	if t.ID == "" {
		return fmt.Errorf("start task without an id: %w", acs.ErrInvalid)
	}
	it, err := s.taskItem(&t)
	if err != nil {
		return err
	}
	return s.create(ctx, it, "start task", t.ID)
}

// GetStartTask implements acs.Store.
func (s *Store) GetStartTask(ctx context.Context, id string) (acs.StartTask, error) {
	var t acs.StartTask
	it, err := s.getItem(ctx, key(pTask+id, sRecord))
	if err != nil {
		return t, err
	}
	if it == nil || s.expired(it) {
		return t, notFound("start task", id)
	}
	return t, decode(it, &t, "start task", id)
}

// UpdateStartTask implements acs.Store: a conditional put on the version;
// the indexes follow the item.
func (s *Store) UpdateStartTask(ctx context.Context, id string, fn func(*acs.StartTask) error) (acs.StartTask, error) {
	var t acs.StartTask
	_, err := s.update(ctx, "start task", id, key(pTask+id, sRecord), false, func(cur item) (writePlan, error) {
		return s.taskPlan(id, cur, fn, &t)
	})
	if err != nil {
		return acs.StartTask{}, err
	}
	return t, nil
}

// taskPlan is UpdateStartTask's write of the task id, whose item is cur:
// *t is the task after fn.
func (s *Store) taskPlan(id string, cur item, fn func(*acs.StartTask) error, t *acs.StartTask) (writePlan, error) {
	*t = acs.StartTask{}
	if err := decode(cur, t, "start task", id); err != nil {
		return writePlan{}, err
	}
	owner, created := t.OwnerID, t.CreatedAt
	if err := fn(t); err != nil {
		return writePlan{}, err
	}
	t.ID, t.OwnerID, t.CreatedAt = id, owner, created
	it, err := s.taskItem(t)
	return writePlan{item: it}, err
}

// UpdateStartTaskCreatingConversation implements acs.Store: the task's
// conditional put, the conversation's (on its absence) and the owner's
// counters in one transaction.
func (s *Store) UpdateStartTaskCreatingConversation(ctx context.Context, id string, fn func(*acs.StartTask) error, c acs.Conversation) (acs.StartTask, error) {
	if c.ID == "" {
		return acs.StartTask{}, fmt.Errorf("conversation without an id: %w", acs.ErrInvalid)
	}
	var t acs.StartTask
	_, err := s.update(ctx, "start task", id, key(pTask+id, sRecord), false, func(cur item) (writePlan, error) {
		p, err := s.taskPlan(id, cur, fn, &t)
		if err != nil {
			return writePlan{}, err
		}
		conv, err := conversationItem(&c)
		if err != nil {
			return writePlan{}, err
		}
		conv[aVersion] = nv(1)
		e := newExpr()
		p.extra = []types.TransactWriteItem{condPut(conv, notExists(e), e), countUpdate(c.OwnerID, 1, topLevel(&c))}
		p.extraFailed = func(i int) error {
			if i == 0 {
				return fmt.Errorf("conversation %s: %w", c.ID, acs.ErrConflict)
			}
			return nil
		}
		return p, nil
	})
	if err != nil {
		return acs.StartTask{}, err
	}
	return t, nil
}

// ListStartTasks implements acs.Store: SearchStartTasks without a filter.
func (s *Store) ListStartTasks(ctx context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
	return s.SearchStartTasks(ctx, ownerID, acs.StartTaskFilter{}, acs.SortCreatedAtDesc, opts)
}

// taskQuery is the query of an owner's tasks in an order (by creation:
// GSI1; by update: GSI2) matching f.
func (s *Store) taskQuery(owner string, f acs.StartTaskFilter, byUpdate, desc bool) *rangeQuery {
	e := newExpr()
	q := &rangeQuery{index: idxGSI1, pkAttr: aGSI1PK, skAttr: aGSI1SK, pk: pTasksOwner + owner, desc: desc, e: e}
	if byUpdate {
		q.index, q.pkAttr, q.skAttr, q.pk = idxGSI2, aGSI2PK, aGSI2SK, pTasksUpd+owner
	}
	q.filter = append(q.filter, e.notExpired(s.now()))
	if f.CreatedGTE != nil {
		if byUpdate {
			q.filter = append(q.filter, fmt.Sprintf("%s >= %s", e.n(aCreated), e.v(sv(timeKey(*f.CreatedGTE)))))
		} else {
			q.lo = timeKey(*f.CreatedGTE)
		}
	}
	if f.ConversationID != "" {
		c := e.v(sv(f.ConversationID))
		q.filter = append(q.filter, fmt.Sprintf("(%s = %s OR %s = %s)", e.n(aApp), c, e.n(aConv), c))
	}
	return q
}

func taskOrder(o acs.StartTaskSort) (byUpdate, desc bool, tag byte, err error) {
	switch o {
	case acs.SortCreatedAt:
		return false, false, tagTasksCreated, nil
	case acs.SortCreatedAtDesc, "":
		return false, true, tagTasksCreatedD, nil
	case acs.SortUpdatedAt:
		return true, false, tagTasksUpdated, nil
	case acs.SortUpdatedAtDesc:
		return true, true, tagTasksUpdatedD, nil
	}
	return false, false, 0, fmt.Errorf("start task sort order %q: %w", o, acs.ErrInvalid)
}

// SearchStartTasks implements acs.Store.
func (s *Store) SearchStartTasks(ctx context.Context, ownerID string, f acs.StartTaskFilter, order acs.StartTaskSort, opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
	var page acs.Page[acs.StartTask]
	byUpdate, desc, tag, err := taskOrder(order)
	if err != nil {
		return page, err
	}
	last, err := decodeToken(opts.PageToken, tag, ownerID, validTimeIDKey)
	if err != nil {
		return page, err
	}
	q := s.taskQuery(ownerID, f, byUpdate, desc)
	q.lo, q.hi = after(q.lo, q.hi, last, desc)
	limit := clamp(opts.Limit)
	items, err := s.collect(ctx, q, limit, last)
	if err != nil {
		return page, err
	}
	if len(items) > limit {
		items = items[:limit]
		page.Next = encodeToken(tag, ownerID, str(items[limit-1], q.skAttr))
	}
	for _, it := range items {
		var t acs.StartTask
		if err := decode(it, &t, "start task", str(it, aPK)); err != nil {
			return page, err
		}
		page.Items = append(page.Items, t)
	}
	return page, nil
}

// CountStartTasks implements acs.Store.
func (s *Store) CountStartTasks(ctx context.Context, ownerID string, f acs.StartTaskFilter) (int, error) {
	return s.count(ctx, s.taskQuery(ownerID, f, false, false))
}

// DeleteStartTask implements acs.Store.
func (s *Store) DeleteStartTask(ctx context.Context, id string) error {
	e := newExpr()
	cond := fmt.Sprintf("attribute_exists(%s) AND %s", e.n(aPK), e.notExpired(s.now()))
	_, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pTask+id, sRecord), ConditionExpression: &cond,
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap()})
	if isCondFailed(err) {
		return notFound("start task", id)
	}
	return err
}

// ListUnfinishedStartTasks implements acs.Store: a Query of each GSI4
// OPENTASKS shard up to the bound, merged by update time, then the records
// themselves (strongly consistent BatchGetItem), dropping those that
// finished or moved since the index was written.
func (s *Store) ListUnfinishedStartTasks(ctx context.Context, updatedBefore time.Time, limit int) ([]acs.StartTask, error) {
	limit = clamp(limit)
	var keys []item
	for shard := 0; shard < AllSandboxShards; shard++ {
		q := &rangeQuery{index: idxGSI4, pkAttr: aGSI4PK, skAttr: aGSI4SK, pk: pOpenTasks + strconv.Itoa(shard),
			hi: timeKey(updatedBefore)}
		items, err := s.collect(ctx, q, limit, "")
		if err != nil {
			return nil, err
		}
		keys = append(keys, items...)
	}
	sort.Slice(keys, func(i, j int) bool { return str(keys[i], aGSI4SK) < str(keys[j], aGSI4SK) })
	if len(keys) > limit {
		keys = keys[:limit]
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []acs.StartTask
	for _, k := range keys {
		it := got[str(k, aPK)+"\x00"+str(k, aSK)]
		if it == nil || s.expired(it) {
			continue
		}
		var t acs.StartTask
		if err := decode(it, &t, "start task", str(it, aPK)); err != nil {
			return nil, err
		}
		if t.Status.Done() || !t.UpdatedAt.Before(updatedBefore) {
			continue
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.Before(out[j].UpdatedAt) })
	return out, nil
}
