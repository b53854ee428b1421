package dynamostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
)

// Conversation filter attributes (besides gsi1sk, the creation time).
const (
	aTitle   = "title_lc" // the lower-cased title (absent without one)
	aUpdated = "updated"  // timeKey(UpdatedAt)
	aSandbox = "sandbox"  // SandboxID (absent without one)
	aSub     = "sub"      // true for a sub-conversation (absent otherwise)

	aCountAll = "all" // the owner's conversations
	aCountTop = "top" // the owner's top-level conversations
)

func conversationItem(c *acs.Conversation) (item, error) {
	it, err := record(pConv+c.ID, sRecord, c)
	if err != nil {
		return nil, err
	}
	it[aGSI1PK], it[aGSI1SK] = sv(pConvsOwner+c.OwnerID), sv(timeIDKey(c.CreatedAt, c.ID))
	it[aUpdated] = sv(timeKey(c.UpdatedAt))
	if c.Title != nil {
		setS(it, aTitle, strings.ToValidUTF8(strings.ToLower(*c.Title), "\uFFFD"))
	}
	if c.SandboxID != "" {
		it[aSandbox] = sv(c.SandboxID)
		it[aGSI3PK], it[aGSI3SK] = sv(pConvsSbx+c.SandboxID), sv(c.ID)
	}
	if c.ParentConversationID != nil {
		it[aSub] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return it, nil
}

func topLevel(c *acs.Conversation) int64 {
	if c.ParentConversationID == nil {
		return 1
	}
	return 0
}

// countUpdate adds to the owner's conversation counters (a transaction
// item).
func countUpdate(owner string, all, top int64) types.TransactWriteItem {
	e := newExpr()
	return condUpdate(key(pUser+owner, sConvCount),
		fmt.Sprintf("ADD %s %s, %s %s", e.n(aCountAll), e.v(nv(all)), e.n(aCountTop), e.v(nv(top))), "", e)
}

// CreateConversation implements acs.Store: the record and the owner's
// counters in one transaction.
func (s *Store) CreateConversation(ctx context.Context, c acs.Conversation) error {
	if c.ID == "" {
		return fmt.Errorf("conversation without an id: %w", acs.ErrInvalid)
	}
	return s.retry(ctx, "create conversation "+c.ID, func() error {
		it, err := conversationItem(&c)
		if err != nil {
			return err
		}
		it[aVersion] = nv(1)
		e := newExpr()
		err = s.transact(ctx, []types.TransactWriteItem{condPut(it, notExists(e), e), countUpdate(c.OwnerID, 1, topLevel(&c))})
		if contended(err) {
			return errRetry
		}
		if r := cancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
			return fmt.Errorf("conversation %s: %w", c.ID, acs.ErrConflict)
		}
		return err
	})
}

// GetConversation implements acs.Store.
func (s *Store) GetConversation(ctx context.Context, id string) (acs.Conversation, error) {
	var c acs.Conversation
	it, err := s.getItem(ctx, key(pConv+id, sRecord))
	if err != nil {
		return c, err
	}
	if it == nil {
		return c, notFound("conversation", id)
	}
	return c, decode(it, &c, "conversation", id)
}

// UpdateConversation implements acs.Store. The id, owner and creation time
// are not updatable. The indexes (owner, sandbox) follow the item; when the
// conversation becomes or stops being a sub-conversation, the owner's
// counters change in the same transaction.
func (s *Store) UpdateConversation(ctx context.Context, id string, fn func(*acs.Conversation) error) (acs.Conversation, error) {
	var c acs.Conversation
	_, err := s.update(ctx, "conversation", id, key(pConv+id, sRecord), false, func(cur item) (writePlan, error) {
		c = acs.Conversation{}
		if err := decode(cur, &c, "conversation", id); err != nil {
			return writePlan{}, err
		}
		owner, created, oldTop := c.OwnerID, c.CreatedAt, topLevel(&c)
		if err := fn(&c); err != nil {
			return writePlan{}, err
		}
		c.ID, c.OwnerID, c.CreatedAt = id, owner, created
		it, err := conversationItem(&c)
		p := writePlan{item: it}
		if top := topLevel(&c); top != oldTop {
			p.extra = append(p.extra, countUpdate(owner, 0, top-oldTop))
		}
		return p, err
	})
	if err != nil {
		return acs.Conversation{}, err
	}
	return c, nil
}

// convQuery is the query of an owner's conversations matching f on GSI1:
// the created range in the key condition, the rest in the filter.
func convQuery(owner string, f acs.ConversationFilter) *rangeQuery {
	e := newExpr()
	q := &rangeQuery{index: idxGSI1, pkAttr: aGSI1PK, skAttr: aGSI1SK, pk: pConvsOwner + owner, desc: true, e: e}
	if f.CreatedGTE != nil {
		q.lo = timeKey(*f.CreatedGTE)
	}
	if f.CreatedLT != nil {
		q.hi = timeKey(*f.CreatedLT) // entries at CreatedLT sort after it ("#id")
	}
	if !f.IncludeSubConversations {
		q.filter = append(q.filter, fmt.Sprintf("attribute_not_exists(%s)", e.n(aSub)))
	}
	if f.TitleContains != "" {
		q.filter = append(q.filter, fmt.Sprintf("contains(%s, %s)", e.n(aTitle),
			e.v(sv(strings.ToValidUTF8(strings.ToLower(f.TitleContains), "\uFFFD")))))
	}
	if f.UpdatedGTE != nil {
		q.filter = append(q.filter, fmt.Sprintf("%s >= %s", e.n(aUpdated), e.v(sv(timeKey(*f.UpdatedGTE)))))
	}
	if f.UpdatedLT != nil {
		q.filter = append(q.filter, fmt.Sprintf("%s < %s", e.n(aUpdated), e.v(sv(timeKey(*f.UpdatedLT)))))
	}
	if f.SandboxID != "" {
		q.filter = append(q.filter, fmt.Sprintf("%s = %s", e.n(aSandbox), e.v(sv(f.SandboxID))))
	}
	return q
}

// SearchConversations implements acs.Store: GSI1 newest first, pages read
// until limit matches (or the end).
func (s *Store) SearchConversations(ctx context.Context, ownerID string, f acs.ConversationFilter, opts acs.ListOptions) (acs.Page[acs.Conversation], error) {
	var page acs.Page[acs.Conversation]
	last, err := decodeToken(opts.PageToken, tagConversations, ownerID, validTimeIDKey)
	if err != nil {
		return page, err
	}
	limit := clamp(opts.Limit)
	q := convQuery(ownerID, f)
	q.lo, q.hi = after(q.lo, q.hi, last, true)
	items, err := s.collect(ctx, q, limit, last)
	if err != nil {
		return page, err
	}
	if len(items) > limit {
		items = items[:limit]
		page.Next = encodeToken(tagConversations, ownerID, str(items[limit-1], aGSI1SK))
	}
	page.Items = make([]acs.Conversation, len(items))
	for i, it := range items {
		if err := decode(it, &page.Items[i], "conversation", str(it, aPK)); err != nil {
			return page, err
		}
	}
	return page, nil
}

// CountConversations implements acs.Store: the owner's counters without a
// filter, a Select COUNT query of GSI1 with one.
func (s *Store) CountConversations(ctx context.Context, ownerID string, f acs.ConversationFilter) (int, error) {
	if f.TitleContains == "" && f.CreatedGTE == nil && f.CreatedLT == nil && f.UpdatedGTE == nil &&
		f.UpdatedLT == nil && f.SandboxID == "" {
		it, err := s.getItem(ctx, key(pUser+ownerID, sConvCount))
		if err != nil {
			return 0, err
		}
		if f.IncludeSubConversations {
			return int(num(it, aCountAll)), nil
		}
		return int(num(it, aCountTop)), nil
	}
	return s.count(ctx, convQuery(ownerID, f))
}

// ListConversationsBySandbox implements acs.Store: GSI3 (KEYS_ONLY), then
// the records, which must still name the sandbox (the index lags).
func (s *Store) ListConversationsBySandbox(ctx context.Context, sandboxID string) ([]acs.Conversation, error) {
	if sandboxID == "" {
		return nil, nil
	}
	keys, err := s.collect(ctx, &rangeQuery{index: idxGSI3, pkAttr: aGSI3PK, skAttr: aGSI3SK, pk: pConvsSbx + sandboxID}, -1, "")
	if err != nil {
		return nil, err
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []acs.Conversation
	for _, k := range keys {
		it := got[str(k, aPK)+"\x00"+str(k, aSK)]
		if it == nil {
			continue
		}
		var c acs.Conversation
		if err := decode(it, &c, "conversation", str(k, aPK)); err != nil {
			return nil, err
		}
		if c.SandboxID == sandboxID {
			out = append(out, c)
		}
	}
	return out, nil
}

// DeleteConversation implements acs.Store: the record and the owner's
// counters in one transaction.
func (s *Store) DeleteConversation(ctx context.Context, id string) error {
	return s.retry(ctx, "delete conversation "+id, func() error {
		it, err := s.getItem(ctx, key(pConv+id, sRecord))
		if err != nil {
			return err
		}
		if it == nil {
			return notFound("conversation", id)
		}
		var c acs.Conversation
		if err := decode(it, &c, "conversation", id); err != nil {
			return err
		}
		e := newExpr()
		err = s.transact(ctx, []types.TransactWriteItem{
			condDelete(key(pConv+id, sRecord), versionIs(e, num(it, aVersion)), e),
			countUpdate(c.OwnerID, -1, -topLevel(&c))})
		if lostRace(err) {
			return errRetry
		}
		return err
	})
}
