package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// RunSessionStoreTests runs the acs.SessionStore suite.
func RunSessionStoreTests(t *testing.T, h Harness[acs.SessionStore]) {
	runTests(t, h, sessionStoreTests)
}

// RunIdentityStoreTests runs the acs.IdentityStore suite.
func RunIdentityStoreTests(t *testing.T, h Harness[acs.IdentityStore]) {
	runTests(t, h, identityStoreTests)
}

var sessionStoreTests = []Test[acs.SessionStore]{
	{"CreateAndGetSession", testCreateAndGetSession},
	{"SessionWithATakenHashConflicts", testSessionConflict},
	{"ExpiredSessionIsNotFound", testExpiredSession},
	{"DeleteSession", testDeleteSession},
	{"DeleteUserSessionsRevokesOnlyThatUsers", testDeleteUserSessions},
	{"DeleteKeySessionsRevokesOnlyThatKeys", testDeleteKeySessions},
	{"SessionWithoutHashOrUserIsInvalid", testSessionInvalid},
	{"ConsumeSignInTokenOnce", testConsumeSignInToken},
	{"ConcurrentConsumesOfATokenOneWins", testConsumeSignInTokenConcurrently},
	{"ExpiredSignInTokenIsNotFound", testExpiredSignInToken},
	{"SignInTokenWithATakenHashConflicts", testSignInTokenConflict},
}

// The suite's expiries are relative to the real clock: adapters compare
// ExpiresAt with their own.
func session(id, user string, ttl time.Duration) acs.BrowserSession {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return acs.BrowserSession{Hash: acs.HashKey("session-" + id), UserID: user, Method: acs.SignInByToken,
		CreatedAt: now, ExpiresAt: now.Add(ttl)}
}

func testCreateAndGetSession(t *testing.T, s acs.SessionStore) {
	bs := session("s1", "u1", time.Hour)
	bs.Method = acs.SignInByOIDC
	must(t, s.CreateSession(ctx, bs))
	got, err := s.GetSession(ctx, bs.Hash)
	must(t, err)
	if got.Hash != bs.Hash || got.UserID != "u1" || got.Method != acs.SignInByOIDC || got.KeyHash != "" || !got.CreatedAt.Equal(bs.CreatedAt) || !got.ExpiresAt.Equal(bs.ExpiresAt) {
		t.Fatalf("session %+v, want %+v", got, bs)
	}
	byKey := keySession("s2", "u1", "k1", time.Hour)
	must(t, s.CreateSession(ctx, byKey))
	got, err = s.GetSession(ctx, byKey.Hash)
	must(t, err)
	if got.Method != acs.SignInByAPIKey || got.KeyHash != byKey.KeyHash {
		t.Fatalf("session made with a key %+v, want %+v", got, byKey)
	}
	_, err = s.GetSession(ctx, acs.HashKey("unknown"))
	wantErr(t, err, acs.ErrNotFound)
}

func testSessionConflict(t *testing.T, s acs.SessionStore) {
	bs := session("s1", "u1", time.Hour)
	must(t, s.CreateSession(ctx, bs))
	other := bs
	other.UserID = "u2"
	wantErr(t, s.CreateSession(ctx, other), acs.ErrConflict)
	got, err := s.GetSession(ctx, bs.Hash)
	must(t, err)
	if got.UserID != "u1" {
		t.Fatalf("a conflicting create replaced the session: %+v", got)
	}
}

func testExpiredSession(t *testing.T, s acs.SessionStore) {
	bs := session("s1", "u1", -time.Minute)
	must(t, s.CreateSession(ctx, bs))
	_, err := s.GetSession(ctx, bs.Hash)
	wantErr(t, err, acs.ErrNotFound)
	n, err := s.DeleteUserSessions(ctx, "u1")
	must(t, err)
	if n != 0 {
		t.Fatalf("revoking counted %d expired sessions", n)
	}
}

func testDeleteSession(t *testing.T, s acs.SessionStore) {
	a, b := session("a", "u1", time.Hour), session("b", "u1", time.Hour)
	must(t, s.CreateSession(ctx, a))
	must(t, s.CreateSession(ctx, b))
	must(t, s.DeleteSession(ctx, a.Hash))
	_, err := s.GetSession(ctx, a.Hash)
	wantErr(t, err, acs.ErrNotFound)
	if _, err := s.GetSession(ctx, b.Hash); err != nil {
		t.Fatalf("deleting one session removed another: %v", err)
	}
	must(t, s.DeleteSession(ctx, a.Hash)) // absent: no error
	n, err := s.DeleteUserSessions(ctx, "u1")
	must(t, err)
	if n != 1 {
		t.Fatalf("revoked %d sessions after one was deleted, want 1", n)
	}
}

func testDeleteUserSessions(t *testing.T, s acs.SessionStore) {
	mine := []acs.BrowserSession{session("a", "u1", time.Hour), session("b", "u1", time.Hour), session("c", "u1", 2*time.Hour)}
	theirs := session("d", "u2", time.Hour)
	for _, bs := range append(mine, theirs) {
		must(t, s.CreateSession(ctx, bs))
	}
	n, err := s.DeleteUserSessions(ctx, "u1")
	must(t, err)
	if n != len(mine) {
		t.Fatalf("revoked %d sessions, want %d", n, len(mine))
	}
	for _, bs := range mine {
		_, err := s.GetSession(ctx, bs.Hash)
		wantErr(t, err, acs.ErrNotFound)
	}
	if _, err := s.GetSession(ctx, theirs.Hash); err != nil {
		t.Fatalf("another user's session was revoked: %v", err)
	}
	n, err = s.DeleteUserSessions(ctx, "u1")
	must(t, err)
	if n != 0 {
		t.Fatalf("revoked %d sessions again", n)
	}
	// A session made after a revocation works.
	again := session("e", "u1", time.Hour)
	must(t, s.CreateSession(ctx, again))
	if _, err := s.GetSession(ctx, again.Hash); err != nil {
		t.Fatal(err)
	}
}

// keySession is a session made with the API key named key.
func keySession(id, user, key string, ttl time.Duration) acs.BrowserSession {
	bs := session(id, user, ttl)
	bs.Method, bs.KeyHash = acs.SignInByAPIKey, acs.HashKey(key)
	return bs
}

func testDeleteKeySessions(t *testing.T, s acs.SessionStore) {
	k1 := []acs.BrowserSession{keySession("a", "u1", "k1", time.Hour), keySession("b", "u1", "k1", 2*time.Hour)}
	expired := keySession("c", "u1", "k1", -time.Minute)
	kept := []acs.BrowserSession{keySession("d", "u1", "k2", time.Hour), session("e", "u1", time.Hour),
		keySession("f", "u2", "k1", time.Hour)} // another key, a link, another user
	for _, bs := range append(append(append([]acs.BrowserSession{}, k1...), expired), kept...) {
		must(t, s.CreateSession(ctx, bs))
	}
	n, err := s.DeleteKeySessions(ctx, "u1", acs.HashKey("k1"))
	must(t, err)
	if n != len(k1) {
		t.Fatalf("revoked %d sessions of the key, want %d", n, len(k1))
	}
	for _, bs := range k1 {
		_, err := s.GetSession(ctx, bs.Hash)
		wantErr(t, err, acs.ErrNotFound)
	}
	for _, bs := range kept {
		if _, err := s.GetSession(ctx, bs.Hash); err != nil {
			t.Fatalf("session %+v was revoked: %v", bs, err)
		}
	}
	n, err = s.DeleteKeySessions(ctx, "u1", acs.HashKey("k1"))
	must(t, err)
	if n != 0 {
		t.Fatalf("revoked %d sessions again", n)
	}
	_, err = s.DeleteKeySessions(ctx, "u1", "")
	wantErr(t, err, acs.ErrInvalid)
	// The user's other sessions are still there to revoke.
	n, err = s.DeleteUserSessions(ctx, "u1")
	must(t, err)
	if n != 2 {
		t.Fatalf("revoked %d of the user's other sessions, want 2", n)
	}
}

func testSessionInvalid(t *testing.T, s acs.SessionStore) {
	bs := session("a", "", time.Hour)
	wantErr(t, s.CreateSession(ctx, bs), acs.ErrInvalid)
	bs = session("a", "u1", time.Hour)
	bs.Hash = ""
	wantErr(t, s.CreateSession(ctx, bs), acs.ErrInvalid)
	wantErr(t, s.CreateSignInToken(ctx, acs.SignInToken{Hash: acs.HashKey("x"), ExpiresAt: time.Now().Add(time.Hour)}), acs.ErrInvalid)
}

func signInToken(id, user string, ttl time.Duration) acs.SignInToken {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return acs.SignInToken{Hash: acs.HashKey("token-" + id), UserID: user, CreatedAt: now, ExpiresAt: now.Add(ttl)}
}

func testConsumeSignInToken(t *testing.T, s acs.SessionStore) {
	tok := signInToken("t1", "u1", 15*time.Minute)
	must(t, s.CreateSignInToken(ctx, tok))
	got, err := s.ConsumeSignInToken(ctx, tok.Hash)
	must(t, err)
	if got.UserID != "u1" || got.Hash != tok.Hash || !got.CreatedAt.Equal(tok.CreatedAt) || !got.ExpiresAt.Equal(tok.ExpiresAt) {
		t.Fatalf("token %+v, want %+v", got, tok)
	}
	_, err = s.ConsumeSignInToken(ctx, tok.Hash)
	wantErr(t, err, acs.ErrNotFound)
	_, err = s.ConsumeSignInToken(ctx, acs.HashKey("never stored"))
	wantErr(t, err, acs.ErrNotFound)
}

func testConsumeSignInTokenConcurrently(t *testing.T, s acs.SessionStore) {
	tok := signInToken("t1", "u1", 15*time.Minute)
	must(t, s.CreateSignInToken(ctx, tok))
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := s.ConsumeSignInToken(ctx, tok.Hash); errs <- err }()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		default:
			wantErr(t, err, acs.ErrNotFound)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent consumes succeeded, want exactly 1", won, n)
	}
}

func testExpiredSignInToken(t *testing.T, s acs.SessionStore) {
	tok := signInToken("t1", "u1", -time.Second)
	must(t, s.CreateSignInToken(ctx, tok))
	_, err := s.ConsumeSignInToken(ctx, tok.Hash)
	wantErr(t, err, acs.ErrNotFound)
}

func testSignInTokenConflict(t *testing.T, s acs.SessionStore) {
	tok := signInToken("t1", "u1", time.Minute)
	must(t, s.CreateSignInToken(ctx, tok))
	other := tok
	other.UserID = "u2"
	wantErr(t, s.CreateSignInToken(ctx, other), acs.ErrConflict)
	got, err := s.ConsumeSignInToken(ctx, tok.Hash)
	must(t, err)
	if got.UserID != "u1" {
		t.Fatalf("a conflicting create replaced the token: %+v", got)
	}
}

var identityStoreTests = []Test[acs.IdentityStore]{
	{"CreateUserWithIdentityAndFindIt", testCreateUserWithIdentity},
	{"ALinkedIdentityConflictsAndCreatesNoUser", testIdentityConflict},
	{"ATakenUserIDConflictsAndLinksNothing", testIdentityUserConflict},
	{"IdentityIsPerIssuer", testIdentityPerIssuer},
	{"ConcurrentFirstSignInsMakeOneUser", testIdentityConcurrent},
	{"IdentityWithoutIssuerSubjectOrMatchingUserIsInvalid", testIdentityInvalid},
	{"LinkIdentityToAnExistingUserOnce", testLinkIdentity},
}

func testLinkIdentity(t *testing.T, s acs.IdentityStore) {
	_, id := identity("u1", "sub-1")
	must(t, s.LinkIdentity(ctx, id))
	got, err := s.GetIdentity(ctx, issuer, "sub-1")
	must(t, err)
	if got != id {
		t.Fatalf("identity %+v, want %+v", got, id)
	}
	_, other := identity("u2", "sub-1")
	wantErr(t, s.LinkIdentity(ctx, other), acs.ErrConflict)
	u3, id3 := identity("u3", "sub-1")
	wantErr(t, s.CreateUserWithIdentity(ctx, u3, id3), acs.ErrConflict)
	got, err = s.GetIdentity(ctx, issuer, "sub-1")
	must(t, err)
	if got.UserID != "u1" {
		t.Fatalf("identity relinked: %+v", got)
	}
	_, bad := identity("", "sub-2")
	wantErr(t, s.LinkIdentity(ctx, bad), acs.ErrInvalid)
}

const issuer = "https://issuer.example.com"

func identity(user, subject string) (acs.User, acs.Identity) {
	return acs.User{ID: user, Name: subject + "@example.com", CreatedAt: base},
		acs.Identity{Issuer: issuer, Subject: subject, UserID: user, Email: subject + "@example.com", CreatedAt: base}
}

func testCreateUserWithIdentity(t *testing.T, s acs.IdentityStore) {
	u, id := identity("u1", "sub-1")
	must(t, s.CreateUserWithIdentity(ctx, u, id))
	got, err := s.GetIdentity(ctx, issuer, "sub-1")
	must(t, err)
	if got != id {
		t.Fatalf("identity %+v, want %+v", got, id)
	}
	gotU, err := s.(acs.UserStore).GetUser(ctx, "u1")
	must(t, err)
	if gotU.Name != u.Name {
		t.Fatalf("user %+v", gotU)
	}
	_, err = s.GetIdentity(ctx, issuer, "sub-2")
	wantErr(t, err, acs.ErrNotFound)
}

func testIdentityConflict(t *testing.T, s acs.IdentityStore) {
	u, id := identity("u1", "sub-1")
	must(t, s.CreateUserWithIdentity(ctx, u, id))
	u2, id2 := identity("u2", "sub-1")
	wantErr(t, s.CreateUserWithIdentity(ctx, u2, id2), acs.ErrConflict)
	_, err := s.(acs.UserStore).GetUser(ctx, "u2")
	wantErr(t, err, acs.ErrNotFound)
	got, err := s.GetIdentity(ctx, issuer, "sub-1")
	must(t, err)
	if got.UserID != "u1" {
		t.Fatalf("identity relinked: %+v", got)
	}
}

func testIdentityUserConflict(t *testing.T, s acs.IdentityStore) {
	must(t, s.(acs.UserStore).CreateUser(ctx, acs.User{ID: "u1", Name: "Ada", CreatedAt: base}))
	u, id := identity("u1", "sub-1")
	wantErr(t, s.CreateUserWithIdentity(ctx, u, id), acs.ErrConflict)
	_, err := s.GetIdentity(ctx, issuer, "sub-1")
	wantErr(t, err, acs.ErrNotFound)
}

func testIdentityPerIssuer(t *testing.T, s acs.IdentityStore) {
	u, id := identity("u1", "sub-1")
	must(t, s.CreateUserWithIdentity(ctx, u, id))
	u2, id2 := identity("u2", "sub-1")
	id2.Issuer = "https://other.example.com"
	must(t, s.CreateUserWithIdentity(ctx, u2, id2))
	got, err := s.GetIdentity(ctx, id2.Issuer, "sub-1")
	must(t, err)
	if got.UserID != "u2" {
		t.Fatalf("identity %+v", got)
	}
}

func testIdentityConcurrent(t *testing.T, s acs.IdentityStore) {
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, id := identity(string(rune('a'+i)), "sub-1")
			errs <- s.CreateUserWithIdentity(ctx, u, id)
		}()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		if err == nil {
			won++
		} else {
			wantErr(t, err, acs.ErrConflict)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent first sign-ins linked the identity, want 1", won)
	}
	got, err := s.GetIdentity(ctx, issuer, "sub-1")
	must(t, err)
	for i := range n {
		id := string(rune('a' + i))
		_, err := s.(acs.UserStore).GetUser(ctx, id)
		if id == got.UserID {
			must(t, err)
		} else {
			wantErr(t, err, acs.ErrNotFound)
		}
	}
}

func testIdentityInvalid(t *testing.T, s acs.IdentityStore) {
	u, id := identity("u1", "sub-1")
	id.UserID = "u2"
	wantErr(t, s.CreateUserWithIdentity(ctx, u, id), acs.ErrInvalid)
	u, id = identity("u1", "")
	wantErr(t, s.CreateUserWithIdentity(ctx, u, id), acs.ErrInvalid)
	u, id = identity("u1", "sub-1")
	id.Issuer = ""
	wantErr(t, s.CreateUserWithIdentity(ctx, u, id), acs.ErrInvalid)
}
