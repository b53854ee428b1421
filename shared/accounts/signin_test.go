package accounts_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
)

const iss = "https://idp.example.com"

func TestSignInWithOIDC(t *testing.T) {
	ctx := context.Background()
	open := accounts.SignInPolicy{CreateUsers: true}
	for _, tc := range []struct {
		name   string
		policy accounts.SignInPolicy
		id     accounts.OIDCIdentity
		// want is "" for a sign-in, else the error's code and a part of
		// its message.
		want    acs.Code
		message string
	}{
		{"AnyIdentityWithoutAllowLists", open, accounts.OIDCIdentity{Issuer: iss, Subject: "s1"}, "", ""},
		{"AllowedDomain", accounts.SignInPolicy{CreateUsers: true, AllowedDomains: []string{"example.com"}},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "Ada@Example.com", EmailVerified: true}, "", ""},
		{"AllowedEmail", accounts.SignInPolicy{CreateUsers: true, AllowedEmails: []string{"ada@other.org"}},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "ada@other.org", EmailVerified: true}, "", ""},
		{"OtherDomain", accounts.SignInPolicy{CreateUsers: true, AllowedDomains: []string{"example.com"}},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "eve@evil.example.org", EmailVerified: true}, acs.EFORBIDDEN, "is not allowed to sign in"},
		{"SubdomainIsNotTheDomain", accounts.SignInPolicy{CreateUsers: true, AllowedDomains: []string{"example.com"}},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "eve@sub.example.com", EmailVerified: true}, acs.EFORBIDDEN, "is not allowed"},
		{"UnverifiedEmail", accounts.SignInPolicy{CreateUsers: true, AllowedDomains: []string{"example.com"}},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "ada@example.com"}, acs.EFORBIDDEN, "verified e-mail"},
		{"NoEmail", accounts.SignInPolicy{CreateUsers: true, AllowedEmails: []string{"ada@example.com"}},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", EmailVerified: true}, acs.EFORBIDDEN, "verified e-mail"},
		{"UnknownIdentityWithoutCreatingUsers", accounts.SignInPolicy{},
			accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "ada@example.com", EmailVerified: true}, acs.EFORBIDDEN, "ACS_OIDC_CREATE_USERS=false"},
		{"NoSubject", open, accounts.OIDCIdentity{Issuer: iss}, acs.EUNAUTHORIZED, "names no user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newService(t)
			ns, u, err := s.SignInWithOIDC(ctx, tc.id, tc.policy, "")
			if tc.want != "" {
				if acs.ErrorCode(err) != tc.want || !strings.Contains(acs.ErrorMessage(err), tc.message) {
					t.Fatalf("got %v (%s), want %s with %q", err, acs.ErrorCode(err), tc.want, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.ID == "" || u.Admin || ns.UserID != u.ID || ns.Method != acs.SignInByOIDC || ns.ID == "" || ns.Hash != acs.HashKey(ns.ID) {
				t.Fatalf("signed in as %+v with %+v", u, ns)
			}
			got, _, err := s.Session(ctx, ns.ID)
			if err != nil || got.ID != u.ID {
				t.Fatalf("the session is %+v, %v", got, err)
			}
			// The identity is the same user next time, even when users are
			// no longer created.
			_, again, err := s.SignInWithOIDC(ctx, tc.id, accounts.SignInPolicy{AllowedDomains: tc.policy.AllowedDomains, AllowedEmails: tc.policy.AllowedEmails}, "")
			if err != nil || again.ID != u.ID {
				t.Fatalf("a second sign-in: %+v, %v", again, err)
			}
		})
	}
}

// A signed-in user's first sign-in with an identity links it to them, even
// when users are not created; a linked identity stays with its user.
func TestOIDCSignInLinksToTheSignedInUser(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	admin := acs.User{ID: "root", Admin: true}
	if err := s.Store.CreateUser(ctx, admin); err != nil {
		t.Fatal(err)
	}
	alice, _, _ := s.CreateUser(ctx, admin, "alice")
	bob, _, _ := s.CreateUser(ctx, admin, "bob")
	id := accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "alice@example.com", EmailVerified: true}
	closed := accounts.SignInPolicy{}
	if _, _, err := s.SignInWithOIDC(ctx, id, closed, ""); !errors.Is(err, acs.ErrForbidden) {
		t.Fatalf("an unknown identity without creating users: %v", err)
	}
	if _, u, err := s.SignInWithOIDC(ctx, id, closed, alice.ID); err != nil || u.ID != alice.ID {
		t.Fatalf("alice linking her identity: %+v, %v", u, err)
	}
	for _, signedIn := range []string{"", bob.ID} {
		if _, u, err := s.SignInWithOIDC(ctx, id, closed, signedIn); err != nil || u.ID != alice.ID {
			t.Fatalf("the linked identity (signed in as %q): %+v, %v", signedIn, u, err)
		}
	}
}

func TestConcurrentFirstOIDCSignInsMakeOneUser(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	id := accounts.OIDCIdentity{Issuer: iss, Subject: "s1", Email: "ada@example.com", EmailVerified: true}
	users := make(chan string, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, u, err := s.SignInWithOIDC(ctx, id, accounts.SignInPolicy{CreateUsers: true}, "")
			if err != nil {
				t.Error(err)
			}
			users <- u.ID
		}()
	}
	wg.Wait()
	close(users)
	seen := map[string]bool{}
	for u := range users {
		seen[u] = true
	}
	if len(seen) != 1 {
		t.Fatalf("concurrent first sign-ins made users %v", seen)
	}
}

func TestSignInWithTokenAndKey(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	admin := acs.User{ID: "root", Admin: true}
	if err := s.Store.CreateUser(ctx, admin); err != nil {
		t.Fatal(err)
	}
	u, key, err := s.CreateUser(ctx, admin, "alice")
	if err != nil {
		t.Fatal(err)
	}
	token, err := s.IssueSignInToken(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := accounts.SignInPolicy{SessionTTL: time.Hour}
	for _, tc := range []struct {
		name   string
		signIn func() (accounts.NewSession, acs.User, error)
		want   error // nil: signed in as alice
	}{
		{"Token", func() (accounts.NewSession, acs.User, error) { return s.SignInWithToken(ctx, token, p) }, nil},
		{"TokenAgain", func() (accounts.NewSession, acs.User, error) { return s.SignInWithToken(ctx, token, p) }, accounts.ErrBadSignInLink},
		{"UnknownToken", func() (accounts.NewSession, acs.User, error) { return s.SignInWithToken(ctx, "nope", p) }, accounts.ErrBadSignInLink},
		{"EmptyToken", func() (accounts.NewSession, acs.User, error) { return s.SignInWithToken(ctx, "", p) }, accounts.ErrBadSignInLink},
		{"Key", func() (accounts.NewSession, acs.User, error) { return s.SignInWithAPIKey(ctx, " "+key.Key+"\n", p) }, nil},
		{"WrongKey", func() (accounts.NewSession, acs.User, error) { return s.SignInWithAPIKey(ctx, key.Key+"x", p) }, accounts.ErrInvalidKey},
		{"EmptyKey", func() (accounts.NewSession, acs.User, error) { return s.SignInWithAPIKey(ctx, " ", p) }, acs.ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, got, err := tc.signIn()
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil || got.ID != u.ID {
				t.Fatalf("signed in as %+v: %v", got, err)
			}
			if d := ns.ExpiresAt.Sub(ns.CreatedAt); d != time.Hour {
				t.Fatalf("session lasts %v, want the policy's hour", d)
			}
		})
	}
}

func TestSignOutAndRevokeSessions(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	admin := acs.User{ID: "root", Admin: true}
	if err := s.Store.CreateUser(ctx, admin); err != nil {
		t.Fatal(err)
	}
	alice, aliceKey, _ := s.CreateUser(ctx, admin, "alice")
	bob, bobKey, _ := s.CreateUser(ctx, admin, "bob")
	session := func(key string) string {
		ns, _, err := s.SignInWithAPIKey(ctx, key, accounts.SignInPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		return ns.ID
	}
	valid := func(id string) bool { _, _, err := s.Session(ctx, id); return err == nil }

	a1, a2, b1 := session(aliceKey.Key), session(aliceKey.Key), session(bobKey.Key)
	if err := s.SignOut(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if valid(a1) || !valid(a2) || !valid(b1) {
		t.Fatal("signing out ended the wrong sessions")
	}
	if _, _, err := s.Session(ctx, a1); !errors.Is(err, accounts.ErrNoSession) {
		t.Fatalf("an ended session: %v", err)
	}
	// Bob may not revoke Alice's; an admin may not name an unknown user.
	if _, err := s.RevokeSessions(ctx, bob, alice.ID); !errors.Is(err, acs.ErrForbidden) {
		t.Fatalf("bob revoking alice's sessions: %v", err)
	}
	if _, err := s.RevokeSessions(ctx, admin, "nobody"); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("revoking an unknown user's sessions: %v", err)
	}
	if n, err := s.RevokeSessions(ctx, admin, alice.ID); err != nil || n != 1 {
		t.Fatalf("the admin revoked %d of alice's sessions (%v), want 1", n, err)
	}
	if valid(a2) || !valid(b1) {
		t.Fatal("revoking alice's sessions ended the wrong ones")
	}
	if n, err := s.RevokeSessions(ctx, bob, "me"); err != nil || n != 1 || valid(b1) {
		t.Fatalf("bob revoking his own: %d, %v", n, err)
	}
}

// TestKeySessionsEndWithTheirKey: a session made with an API key ends when
// the key is revoked, whether its sessions were deleted with it or the
// key just vanished; sessions of other keys and of links go on.
func TestKeySessionsEndWithTheirKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		revoke func(s *accounts.Service, userID string, k accounts.NewKey) error
	}{
		{"Revoked", func(s *accounts.Service, userID string, k accounts.NewKey) error {
			return s.DeleteKey(ctx, userID, k.ID)
		}},
		{"GoneFromTheStore", func(s *accounts.Service, userID string, k accounts.NewKey) error {
			return s.Store.DeleteAPIKey(ctx, userID, k.ID)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newService(t)
			admin := acs.User{ID: "root", Admin: true}
			if err := s.Store.CreateUser(ctx, admin); err != nil {
				t.Fatal(err)
			}
			alice, first, err := s.CreateUser(ctx, admin, "alice")
			if err != nil {
				t.Fatal(err)
			}
			second, err := s.CreateKey(ctx, alice.ID, "second")
			if err != nil {
				t.Fatal(err)
			}
			token, err := s.IssueSignInToken(ctx, alice.ID)
			if err != nil {
				t.Fatal(err)
			}
			p := accounts.SignInPolicy{}
			byFirst, _, err := s.SignInWithAPIKey(ctx, first.Key, p)
			if err != nil {
				t.Fatal(err)
			}
			bySecond, _, err := s.SignInWithAPIKey(ctx, second.Key, p)
			if err != nil {
				t.Fatal(err)
			}
			byLink, _, err := s.SignInWithToken(ctx, token, p)
			if err != nil {
				t.Fatal(err)
			}
			if byFirst.KeyHash != acs.HashKey(first.Key) || byLink.KeyHash != "" {
				t.Fatalf("sessions record key hashes %q and %q", byFirst.KeyHash, byLink.KeyHash)
			}
			if err := tc.revoke(s, alice.ID, first); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Session(ctx, byFirst.ID); !errors.Is(err, accounts.ErrNoSession) {
				t.Fatalf("the revoked key's session: %v, want ErrNoSession", err)
			}
			for name, ns := range map[string]accounts.NewSession{"another key's": bySecond, "a link's": byLink} {
				if u, _, err := s.Session(ctx, ns.ID); err != nil || u.ID != alice.ID {
					t.Fatalf("%s session: %+v %v", name, u, err)
				}
			}
		})
	}
}
