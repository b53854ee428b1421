package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// Key prefixes (see the package documentation).
const (
	pUser        = "USER#"         // + user id: the user's partition
	sUser        = "USER"          // the user record
	sKeyPrefix   = "KEY#"          // + key id: the user's API keys
	sSettings    = "SETTINGS"      //
	sQuota       = "QUOTA"         //
	sSecret      = "SECRET#"       // + name
	sConvCount   = "CONVCOUNT"     // the user's conversation counters
	pAPIKey      = "APIKEY#"       // + key id: the key's id guard
	pKeyHash     = "KEYHASH#"      // + hash: lookup (a copy of the key)
	pTask        = "TASK#"         // + id
	pTasksOwner  = "TASKS#"        // gsi1pk: + owner
	pTasksUpd    = "TASKSUPDATED#" // gsi2pk: + owner
	pOpenTasks   = "OPENTASKS#"    // gsi4pk: + shard (unfinished tasks)
	pSandbox     = "SANDBOX#"      // + id
	pSandboxes   = "SANDBOXES#"    // gsi3pk: + owner
	pAllSandbox  = "ALLSANDBOXES#" // gsi4pk: + shard
	pSessionHash = "SESSIONKEY#"   // + hash: lookup (the sandbox id)
	pConv        = "CONV#"         // + id
	pConvsOwner  = "CONVS#"        // gsi1pk: + owner
	pConvsSbx    = "CONVSBYSANDBOX#"
	pEvents      = "EVENTS#" // + conversation id
	pPending     = "PENDING#"
	sRecord      = "#" // the sort key of single-item records
)

// writePlan is what an update stores: the record's new item (the store adds
// its version, write token and condition) and, when other items change with
// it, those items (written in the same TransactWriteItems).
type writePlan struct {
	item  item
	extra []types.TransactWriteItem
	// extraFailed maps a failed condition of extra[i] to the error to return
	// (nil: retry).
	extraFailed func(i int) error
}

// create stores a new single-item record; ErrConflict when its key exists
// (and is not expired). A write token tells a create that the SDK retried
// after a lost response from a real conflict.
func (s *Store) create(ctx context.Context, it item, what, id string) error {
	w := writeToken()
	it[aVersion], it[aWrite] = nv(1), sv(w)
	e := newExpr()
	cond := fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", e.n(aPK), e.n(aExpires), e.v(nv(s.now().Unix())))
	err := s.putItem(ctx, &dynamodb.PutItemInput{Item: it, ConditionExpression: &cond,
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap()})
	if isCondFailed(err) {
		cur, gerr := s.getItem(ctx, item{aPK: it[aPK], aSK: it[aSK]})
		if gerr == nil && cur != nil && str(cur, aWrite) == w {
			return nil
		}
		return fmt.Errorf("%s %s: %w", what, id, acs.ErrConflict)
	}
	return err
}

// update runs the optimistic update of the record at k: read it (strongly
// consistent), let plan build the new item from it, write it on the
// condition that its version did not change, and start again when it did.
// cur is nil for an absent record (only when absentOK; otherwise
// ErrNotFound). Expired records are absent.
func (s *Store) update(ctx context.Context, what, id string, k item, absentOK bool, plan func(cur item) (writePlan, error)) (item, error) {
	var written item
	lastW := ""
	err := s.retry(ctx, what+" "+id, func() error {
		cur, err := s.getItem(ctx, k)
		if err != nil {
			return err
		}
		if cur != nil && s.expired(cur) {
			cur = nil
		}
		if cur != nil && lastW != "" && str(cur, aWrite) == lastW {
			return nil // the previous attempt was stored after all (an SDK retry)
		}
		if cur == nil && !absentOK {
			return notFound(what, id)
		}
		p, err := plan(cur)
		if err != nil {
			return err
		}
		e := newExpr()
		var cond string
		if cur == nil {
			cond = fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", e.n(aPK), e.n(aExpires), e.v(nv(s.now().Unix())))
			p.item[aVersion] = nv(1)
		} else {
			v := num(cur, aVersion)
			cond = fmt.Sprintf("%s = %s", e.n(aVersion), e.v(nv(v)))
			p.item[aVersion] = nv(v + 1)
		}
		lastW = writeToken()
		p.item[aWrite] = sv(lastW)
		written = p.item
		if len(p.extra) == 0 {
			err := s.putItem(ctx, &dynamodb.PutItemInput{Item: p.item, ConditionExpression: &cond,
				ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap()})
			if isCondFailed(err) || contended(err) {
				return errRetry
			}
			return err
		}
		items := append([]types.TransactWriteItem{{Put: &types.Put{Item: p.item, ConditionExpression: &cond,
			ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap()}}}, p.extra...)
		err = s.transact(ctx, items)
		if err == nil {
			return nil
		}
		if contended(err) {
			return errRetry
		}
		reasons := cancelReasons(err)
		if len(reasons) == len(items) {
			for i, r := range reasons {
				if r != "ConditionalCheckFailed" {
					continue
				}
				if i == 0 || p.extraFailed == nil {
					return errRetry
				}
				if ferr := p.extraFailed(i - 1); ferr != nil {
					return ferr
				}
				return errRetry
			}
		} else if reasons != nil {
			return errRetry
		}
		return err
	})
	return written, err
}

// condPut, condDelete and condUpdate build transaction items.
func condPut(it item, cond string, e *expr) types.TransactWriteItem {
	p := &types.Put{Item: it}
	if cond != "" {
		p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues = &cond, e.nameMap(), e.valueMap()
	}
	return types.TransactWriteItem{Put: p}
}

func condDelete(k item, cond string, e *expr) types.TransactWriteItem {
	d := &types.Delete{Key: k}
	if cond != "" {
		d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues = &cond, e.nameMap(), e.valueMap()
	}
	return types.TransactWriteItem{Delete: d}
}

func condUpdate(k item, update, cond string, e *expr) types.TransactWriteItem {
	u := &types.Update{Key: k, UpdateExpression: &update, ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap()}
	if cond != "" {
		u.ConditionExpression = &cond
	}
	return types.TransactWriteItem{Update: u}
}

// notExists is the condition "no such item" on e.
func notExists(e *expr) string { return fmt.Sprintf("attribute_not_exists(%s)", e.n(aPK)) }

// versionIs is the condition "the item is at version v" on e.
func versionIs(e *expr, v int64) string { return fmt.Sprintf("%s = %s", e.n(aVersion), e.v(nv(v))) }

func record(pk, sk string, v any) (item, error) {
	if !storable(pk, sk) {
		return nil, fmt.Errorf("key %q %q: %w", truncate(pk, 64), truncate(sk, 64), acs.ErrInvalid)
	}
	raw, err := storerecord.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", pk, err)
	}
	it := key(pk, sk)
	it[aData] = bv(raw)
	return it, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ---- users and API keys

// CreateUser implements acs.Store.
func (s *Store) CreateUser(ctx context.Context, u acs.User) error {
	if u.ID == "" {
		return fmt.Errorf("user without an id: %w", acs.ErrInvalid)
	}
	it, err := record(pUser+u.ID, sUser, u)
	if err != nil {
		return err
	}
	return s.create(ctx, it, "user", u.ID)
}

// GetUser implements acs.Store.
func (s *Store) GetUser(ctx context.Context, id string) (acs.User, error) {
	var u acs.User
	it, err := s.getItem(ctx, key(pUser+id, sUser))
	if err != nil {
		return u, err
	}
	if it == nil {
		return u, notFound("user", id)
	}
	return u, decode(it, &u, "user", id)
}

// CreateAPIKey implements acs.Store: the id guard, the hash lookup (a copy
// of the key) and the user's copy, in one transaction.
func (s *Store) CreateAPIKey(ctx context.Context, k acs.APIKey) error {
	if k.ID == "" {
		return fmt.Errorf("api key without an id: %w", acs.ErrInvalid)
	}
	guard, err := record(pAPIKey+k.ID, sRecord, k)
	if err != nil {
		return err
	}
	lookup, err := record(pKeyHash+k.Hash, sRecord, k)
	if err != nil {
		return err
	}
	mine, err := record(pUser+k.UserID, sKeyPrefix+k.ID, k)
	if err != nil {
		return err
	}
	e1, e2, e3 := newExpr(), newExpr(), newExpr()
	err = s.transact(ctx, []types.TransactWriteItem{
		condPut(guard, notExists(e1), e1), condPut(lookup, notExists(e2), e2), condPut(mine, notExists(e3), e3)})
	for _, r := range cancelReasons(err) {
		if r == "ConditionalCheckFailed" {
			return fmt.Errorf("api key %s: %w", k.ID, acs.ErrConflict)
		}
	}
	return err
}

// GetAPIKeyByHash implements acs.Store: one read of the hash lookup.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (acs.APIKey, error) {
	var k acs.APIKey
	it, err := s.getItem(ctx, key(pKeyHash+hash, sRecord))
	if err != nil {
		return k, err
	}
	if it == nil {
		return k, notFound("api key", "by hash")
	}
	return k, decode(it, &k, "api key", "by hash")
}

// ListAPIKeys implements acs.Store: the user's partition.
func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]acs.APIKey, error) {
	items, err := s.collect(ctx, &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pUser + userID,
		lo: sKeyPrefix, hi: sKeyPrefix + "\U0010FFFF", consistent: true}, -1, "")
	if err != nil {
		return nil, err
	}
	var out []acs.APIKey
	for _, it := range items {
		var k acs.APIKey
		if err := decode(it, &k, "api key", str(it, aSK)); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// DeleteAPIKey implements acs.Store.
func (s *Store) DeleteAPIKey(ctx context.Context, userID, id string) error {
	it, err := s.getItem(ctx, key(pAPIKey+id, sRecord))
	if err != nil {
		return err
	}
	var k acs.APIKey
	if it == nil {
		return notFound("api key", id)
	}
	if err := decode(it, &k, "api key", id); err != nil {
		return err
	}
	if k.UserID != userID {
		return notFound("api key", id)
	}
	e := newExpr()
	err = s.transact(ctx, []types.TransactWriteItem{
		condDelete(key(pAPIKey+id, sRecord), fmt.Sprintf("attribute_exists(%s)", e.n(aPK)), e),
		condDelete(key(pKeyHash+k.Hash, sRecord), "", nil),
		condDelete(key(pUser+k.UserID, sKeyPrefix+id), "", nil)})
	if len(cancelReasons(err)) > 0 && cancelReasons(err)[0] == "ConditionalCheckFailed" {
		return notFound("api key", id)
	}
	return err
}

// ---- settings, quotas, secrets: items of the user's partition

// GetSettings implements acs.Store.
func (s *Store) GetSettings(ctx context.Context, userID string) (acs.Settings, error) {
	var st acs.Settings
	it, err := s.getItem(ctx, key(pUser+userID, sSettings))
	if err != nil {
		return st, err
	}
	if it == nil {
		return st, notFound("settings of user", userID)
	}
	return st, decode(it, &st, "settings of user", userID)
}

// PutSettings implements acs.Store.
func (s *Store) PutSettings(ctx context.Context, st acs.Settings) error {
	if st.UserID == "" {
		return fmt.Errorf("settings without a user: %w", acs.ErrInvalid)
	}
	it, err := record(pUser+st.UserID, sSettings, st)
	if err != nil {
		return err
	}
	return s.putItem(ctx, &dynamodb.PutItemInput{Item: it})
}

// UpdateQuota implements acs.Store (optimistic, like the other updates).
func (s *Store) UpdateQuota(ctx context.Context, userID string, fn func(*acs.Quota) error) (acs.Quota, error) {
	if userID == "" {
		return acs.Quota{}, fmt.Errorf("quota without a user: %w", acs.ErrInvalid)
	}
	var q acs.Quota
	_, err := s.update(ctx, "quota of", userID, key(pUser+userID, sQuota), true, func(cur item) (writePlan, error) {
		q = acs.Quota{}
		if cur != nil {
			if err := decode(cur, &q, "quota of", userID); err != nil {
				return writePlan{}, err
			}
		}
		q.UserID = userID
		if q.Claims == nil {
			q.Claims = map[string]time.Time{}
		}
		if err := fn(&q); err != nil {
			return writePlan{}, err
		}
		q.UserID = userID
		it, err := record(pUser+userID, sQuota, q)
		return writePlan{item: it}, err
	})
	return q, err
}

func checkSecretKey(owner, name string) error {
	if owner == "" || name == "" {
		return fmt.Errorf("secret %q of %q: %w", name, owner, acs.ErrInvalid)
	}
	return nil
}

// PutSecret implements acs.Store.
func (s *Store) PutSecret(ctx context.Context, sec acs.Secret) error {
	if err := checkSecretKey(sec.OwnerID, sec.Name); err != nil {
		return err
	}
	it, err := record(pUser+sec.OwnerID, sSecret+sec.Name, sec)
	if err != nil {
		return err
	}
	return s.putItem(ctx, &dynamodb.PutItemInput{Item: it})
}

// GetSecret implements acs.Store.
func (s *Store) GetSecret(ctx context.Context, ownerID, name string) (acs.Secret, error) {
	var sec acs.Secret
	if checkSecretKey(ownerID, name) != nil {
		return sec, notFound("secret", name)
	}
	it, err := s.getItem(ctx, key(pUser+ownerID, sSecret+name))
	if err != nil {
		return sec, err
	}
	if it == nil {
		return sec, notFound("secret", name)
	}
	return sec, decode(it, &sec, "secret", name)
}

// ListSecrets implements acs.Store: the user's partition, by name.
func (s *Store) ListSecrets(ctx context.Context, ownerID string) ([]acs.Secret, error) {
	if ownerID == "" {
		return nil, nil
	}
	items, err := s.collect(ctx, &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pUser + ownerID,
		lo: sSecret, hi: sSecret + "\U0010FFFF", consistent: true}, -1, "")
	if err != nil {
		return nil, err
	}
	var out []acs.Secret
	for _, it := range items {
		var sec acs.Secret
		if err := decode(it, &sec, "secret", str(it, aSK)); err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, nil
}

// DeleteSecret implements acs.Store.
func (s *Store) DeleteSecret(ctx context.Context, ownerID, name string) error {
	if checkSecretKey(ownerID, name) != nil {
		return notFound("secret", name)
	}
	out, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pUser+ownerID, sSecret+name),
		ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return err
	}
	if len(out.Attributes) == 0 {
		return notFound("secret", name)
	}
	return nil
}
