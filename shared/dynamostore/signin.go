package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
)

// Browser sessions, one-time sign-in tokens and OpenID Connect identities.
// Sessions and tokens carry expires_at (the table's time to live removes
// them some time after; reads treat them as absent at once).
const (
	pBrowserSession = "BSESSION#" // + hash: the session
	sBrowserSession = "BSESSION#" // + hash: the user's copy (revocation)
	pSignInToken    = "SIGNIN#"   // + hash
	pIdentity       = "IDENTITY#" // + sha256(issuer \0 subject)
)

func expiresAt(it item, t time.Time) item {
	it[aExpires] = nv(t.Unix())
	return it
}

// CreateSession implements acs.SessionStore: the session and the user's
// copy, in one transaction.
func (s *Store) CreateSession(ctx context.Context, bs acs.BrowserSession) error {
	if bs.Hash == "" || bs.UserID == "" {
		return fmt.Errorf("session without a hash or a user: %w", acs.ErrInvalid)
	}
	it, err := record(pBrowserSession+bs.Hash, sRecord, bs)
	if err != nil {
		return err
	}
	mine, err := record(pUser+bs.UserID, sBrowserSession+bs.Hash, bs)
	if err != nil {
		return err
	}
	e1 := newExpr()
	cond := fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", e1.n(aPK), e1.n(aExpires), e1.v(nv(s.now().Unix())))
	err = s.transact(ctx, []types.TransactWriteItem{condPut(expiresAt(it, bs.ExpiresAt), cond, e1), condPut(expiresAt(mine, bs.ExpiresAt), "", nil)})
	for _, r := range cancelReasons(err) {
		if r == "ConditionalCheckFailed" {
			return fmt.Errorf("session: %w", acs.ErrConflict)
		}
	}
	return err
}

// GetSession implements acs.SessionStore: one read.
func (s *Store) GetSession(ctx context.Context, hash string) (acs.BrowserSession, error) {
	var bs acs.BrowserSession
	it, err := s.getItem(ctx, key(pBrowserSession+hash, sRecord))
	if err != nil {
		return bs, err
	}
	if it == nil || s.expired(it) {
		return bs, notFound("session", "by hash")
	}
	return bs, decode(it, &bs, "session", "by hash")
}

// DeleteSession implements acs.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	out, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pBrowserSession+hash, sRecord), ReturnValues: types.ReturnValueAllOld})
	if err != nil || len(out.Attributes) == 0 {
		return err
	}
	var bs acs.BrowserSession
	if err := decode(out.Attributes, &bs, "session", "by hash"); err != nil {
		return err
	}
	_, err = s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pUser+bs.UserID, sBrowserSession+hash)})
	return err
}

// DeleteUserSessions implements acs.SessionStore: the user's copies name
// every session.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	return s.deleteSessions(ctx, userID, nil)
}

// DeleteKeySessions implements acs.SessionStore: the user's copies hold
// each session's key hash.
func (s *Store) DeleteKeySessions(ctx context.Context, userID, keyHash string) (int, error) {
	if keyHash == "" {
		return 0, fmt.Errorf("sessions of a key without a hash: %w", acs.ErrInvalid)
	}
	return s.deleteSessions(ctx, userID, func(bs acs.BrowserSession) bool { return bs.KeyHash == keyHash })
}

// deleteSessions removes the user's sessions that only accepts (every one
// when only is nil), each with its copy, and counts the unexpired ones.
func (s *Store) deleteSessions(ctx context.Context, userID string, only func(acs.BrowserSession) bool) (int, error) {
	items, err := s.collect(ctx, &rangeQuery{pkAttr: aPK, skAttr: aSK, pk: pUser + userID,
		lo: sBrowserSession, hi: sBrowserSession + "\U0010FFFF", consistent: true}, -1, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range items {
		var bs acs.BrowserSession
		if err := decode(it, &bs, "session", str(it, aSK)); err != nil {
			return n, err
		}
		if only != nil && !only(bs) {
			continue
		}
		out, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pBrowserSession+bs.Hash, sRecord), ReturnValues: types.ReturnValueAllOld})
		if err != nil {
			return n, err
		}
		if len(out.Attributes) > 0 && !s.expired(out.Attributes) {
			n++
		}
		if _, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pUser+userID, str(it, aSK))}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// CreateSignInToken implements acs.SessionStore.
func (s *Store) CreateSignInToken(ctx context.Context, t acs.SignInToken) error {
	if t.Hash == "" || t.UserID == "" {
		return fmt.Errorf("sign-in token without a hash or a user: %w", acs.ErrInvalid)
	}
	it, err := record(pSignInToken+t.Hash, sRecord, t)
	if err != nil {
		return err
	}
	// create's condition lets an expired token's hash be reused.
	return s.create(ctx, expiresAt(it, t.ExpiresAt), "sign-in token", "by hash")
}

// ConsumeSignInToken implements acs.SessionStore: one conditional
// DeleteItem, so one caller at most gets the token.
func (s *Store) ConsumeSignInToken(ctx context.Context, hash string) (acs.SignInToken, error) {
	var t acs.SignInToken
	if !storable(pSignInToken+hash, sRecord) {
		return t, notFound("sign-in token", "by hash")
	}
	e := newExpr()
	cond := fmt.Sprintf("attribute_exists(%s)", e.n(aPK))
	out, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(pSignInToken+hash, sRecord), ReturnValues: types.ReturnValueAllOld,
		ConditionExpression: &cond, ExpressionAttributeNames: e.nameMap()})
	if isCondFailed(err) {
		return t, notFound("sign-in token", "by hash")
	}
	if err != nil {
		return t, err
	}
	if len(out.Attributes) == 0 || s.expired(out.Attributes) {
		return t, notFound("sign-in token", "by hash")
	}
	return t, decode(out.Attributes, &t, "sign-in token", "by hash")
}

func identityPK(issuer, subject string) string {
	return pIdentity + acs.HashKey(issuer+"\x00"+subject)
}

// CreateUserWithIdentity implements acs.IdentityStore: the user and the
// identity, each on the condition that it is new, in one transaction.
func (s *Store) CreateUserWithIdentity(ctx context.Context, u acs.User, id acs.Identity) error {
	if u.ID == "" || id.UserID != u.ID || id.Issuer == "" || id.Subject == "" {
		return fmt.Errorf("identity of user %q: %w", u.ID, acs.ErrInvalid)
	}
	user, err := record(pUser+u.ID, sUser, u)
	if err != nil {
		return err
	}
	user[aVersion], user[aWrite] = nv(1), sv(writeToken())
	link, err := record(identityPK(id.Issuer, id.Subject), sRecord, id)
	if err != nil {
		return err
	}
	e1, e2 := newExpr(), newExpr()
	err = s.transact(ctx, []types.TransactWriteItem{condPut(user, notExists(e1), e1), condPut(link, notExists(e2), e2)})
	for _, r := range cancelReasons(err) {
		if r == "ConditionalCheckFailed" {
			return fmt.Errorf("user %s or its identity: %w", u.ID, acs.ErrConflict)
		}
	}
	return err
}

// LinkIdentity implements acs.IdentityStore: one conditional put.
func (s *Store) LinkIdentity(ctx context.Context, id acs.Identity) error {
	if id.UserID == "" || id.Issuer == "" || id.Subject == "" {
		return fmt.Errorf("identity of user %q: %w", id.UserID, acs.ErrInvalid)
	}
	link, err := record(identityPK(id.Issuer, id.Subject), sRecord, id)
	if err != nil {
		return err
	}
	e := newExpr()
	cond := notExists(e)
	err = s.putItem(ctx, &dynamodb.PutItemInput{Item: link, ConditionExpression: &cond, ExpressionAttributeNames: e.nameMap()})
	if isCondFailed(err) {
		return fmt.Errorf("identity %s: %w", id.Subject, acs.ErrConflict)
	}
	return err
}

// GetIdentity implements acs.IdentityStore: one read.
func (s *Store) GetIdentity(ctx context.Context, issuer, subject string) (acs.Identity, error) {
	var id acs.Identity
	it, err := s.getItem(ctx, key(identityPK(issuer, subject), sRecord))
	if err != nil {
		return id, err
	}
	if it == nil {
		return id, notFound("identity", subject)
	}
	return id, decode(it, &id, "identity", subject)
}
