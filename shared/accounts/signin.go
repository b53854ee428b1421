package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Browser sign-in: sessions (the cookie's random id, stored only as its
// SHA-256, with an expiry), one-time sign-in tokens and OpenID Connect
// identities linked to users.

// SignInTokenTTL is how long a one-time sign-in link works.
const SignInTokenTTL = 15 * time.Minute

// DefaultSessionTTL is a session's lifetime when the policy sets none.
const DefaultSessionTTL = 168 * time.Hour

// NewSession is a session as made: the stored session and, this once, its
// id (the cookie's value).
type NewSession struct {
	acs.BrowserSession
	ID string
}

// SignInPolicy is who may sign in from a browser and for how long.
type SignInPolicy struct {
	// SessionTTL is a session's lifetime (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// AllowedDomains and AllowedEmails restrict OpenID Connect sign-ins by
	// verified e-mail address (lower case); both empty allow every
	// identity.
	AllowedDomains, AllowedEmails []string
	// CreateUsers creates a user on an identity's first sign-in; false
	// refuses identities not linked to a user.
	CreateUsers bool
}

// OIDCIdentity is what a verified ID token says about who signs in.
type OIDCIdentity struct {
	Issuer, Subject string
	Email           string
	EmailVerified   bool
	// Name is the display name (the name claim), may be empty.
	Name string
}

// The sign-in refusals (their messages are shown on the sign-in page).
var (
	ErrBadSignInLink = acs.Errorf(acs.EUNAUTHORIZED, "This sign-in link is invalid, has expired or was used already. Ask for a new one (acs serve prints one when it starts).")
	ErrNoSession     = &acs.Error{Code: acs.EUNAUTHORIZED, Message: "not signed in (or the session expired): sign in again, or use Authorization: Bearer <API_KEY>", Challenge: "Bearer"}
)

// IssueSignInToken makes a one-time sign-in token for the user, valid for
// SignInTokenTTL, and returns its value (only its hash is stored).
func (s *Service) IssueSignInToken(ctx context.Context, userID string) (string, error) {
	token := acs.NewSecret(43)
	now := s.now()
	t := acs.SignInToken{Hash: acs.HashKey(token), UserID: userID, CreatedAt: now, ExpiresAt: now.Add(SignInTokenTTL)}
	if err := s.Store.CreateSignInToken(ctx, t); err != nil {
		return "", fmt.Errorf("store the sign-in token: %w", err)
	}
	return token, nil
}

// SignInWithToken consumes a one-time sign-in token and opens a session
// for its user. A token that is unknown, expired or consumed before is
// ErrBadSignInLink; so is one whose user was deleted.
func (s *Service) SignInWithToken(ctx context.Context, token string, p SignInPolicy) (NewSession, acs.User, error) {
	if token == "" {
		return NewSession{}, acs.User{}, ErrBadSignInLink
	}
	t, err := s.Store.ConsumeSignInToken(ctx, acs.HashKey(token))
	if errors.Is(err, acs.ErrNotFound) {
		return NewSession{}, acs.User{}, ErrBadSignInLink
	}
	if err != nil {
		return NewSession{}, acs.User{}, fmt.Errorf("consume the sign-in token: %w", err)
	}
	u, err := s.Store.GetUser(ctx, t.UserID)
	if errors.Is(err, acs.ErrNotFound) {
		return NewSession{}, acs.User{}, ErrBadSignInLink
	}
	if err != nil {
		return NewSession{}, acs.User{}, fmt.Errorf("read the user of a sign-in token: %w", err)
	}
	ns, err := s.openSession(ctx, u.ID, acs.SignInByToken, "", p)
	return ns, u, err
}

// SignInWithAPIKey opens a session for the user of an API key, valid only
// while the key is. An empty or unknown key is ErrInvalidKey.
func (s *Service) SignInWithAPIKey(ctx context.Context, key string, p SignInPolicy) (NewSession, acs.User, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return NewSession{}, acs.User{}, acs.Errorf(acs.EUNAUTHORIZED, "Enter an API key")
	}
	u, err := Authenticate(ctx, s.Store, "Bearer "+key)
	if err != nil {
		return NewSession{}, acs.User{}, err
	}
	ns, err := s.openSession(ctx, u.ID, acs.SignInByAPIKey, acs.HashKey(key), p)
	return ns, u, err
}

// SignInWithOIDC opens a session for the user linked to a verified
// identity. An identity not linked yet is linked to signedIn (the user ID
// of the browser's current session, "" for none) when there is one, else
// to a new user when the policy creates users. It is acs.ErrForbidden, with
// a message saying why, when the e-mail address is not verified, when the
// policy's allow-lists do not name it, and when the identity is unknown,
// nobody is signed in and users are not created. Concurrent first sign-ins
// of one identity make one user.
func (s *Service) SignInWithOIDC(ctx context.Context, id OIDCIdentity, p SignInPolicy, signedIn string) (NewSession, acs.User, error) {
	if id.Issuer == "" || id.Subject == "" {
		return NewSession{}, acs.User{}, acs.Errorf(acs.EUNAUTHORIZED, "The identity provider's answer names no user")
	}
	if err := allowed(id, p); err != nil {
		return NewSession{}, acs.User{}, err
	}
	u, err := s.identityUser(ctx, id, p, signedIn)
	if err != nil {
		return NewSession{}, acs.User{}, err
	}
	ns, err := s.openSession(ctx, u.ID, acs.SignInByOIDC, "", p)
	return ns, u, err
}

// allowed applies the policy's allow-lists to a verified e-mail address.
func allowed(id OIDCIdentity, p SignInPolicy) error {
	if len(p.AllowedDomains) == 0 && len(p.AllowedEmails) == 0 {
		return nil
	}
	email := strings.ToLower(strings.TrimSpace(id.Email))
	if email == "" || !id.EmailVerified {
		return acs.Errorf(acs.EFORBIDDEN, "Your identity provider did not confirm a verified e-mail address, which this ACS requires to sign in.")
	}
	_, domain, _ := strings.Cut(email, "@")
	if slices.Contains(p.AllowedEmails, email) || (domain != "" && slices.Contains(p.AllowedDomains, domain)) {
		return nil
	}
	return acs.Errorf(acs.EFORBIDDEN, "%s is not allowed to sign in to this ACS. Ask its admin to add the address or its domain to ACS_OIDC_ALLOWED_EMAILS or ACS_OIDC_ALLOWED_DOMAINS.", email)
}

// identityUser returns the user linked to id, linking a new one when the
// policy allows.
func (s *Service) identityUser(ctx context.Context, id OIDCIdentity, p SignInPolicy, signedIn string) (acs.User, error) {
	for attempt := 0; ; attempt++ {
		link, err := s.Store.GetIdentity(ctx, id.Issuer, id.Subject)
		switch {
		case err == nil:
			u, err := s.Store.GetUser(ctx, link.UserID)
			if errors.Is(err, acs.ErrNotFound) {
				return acs.User{}, acs.Errorf(acs.EFORBIDDEN, "The ACS user linked to this identity no longer exists.")
			}
			return u, err
		case !errors.Is(err, acs.ErrNotFound):
			return acs.User{}, fmt.Errorf("read the identity: %w", err)
		case attempt > 0:
			return acs.User{}, fmt.Errorf("link the identity: it was linked and then vanished")
		}
		now := s.now().Truncate(time.Microsecond)
		newLink := acs.Identity{Issuer: id.Issuer, Subject: id.Subject, UserID: signedIn, Email: id.Email, CreatedAt: now}
		if signedIn != "" {
			u, err := s.Store.GetUser(ctx, signedIn)
			if err != nil {
				return acs.User{}, fmt.Errorf("read the signed-in user: %w", err)
			}
			err = s.Store.LinkIdentity(ctx, newLink)
			if err == nil {
				return u, nil
			}
			if !errors.Is(err, acs.ErrConflict) {
				return acs.User{}, fmt.Errorf("link the identity: %w", err)
			}
			continue // linked meanwhile: its user
		}
		if !p.CreateUsers {
			return acs.User{}, acs.Errorf(acs.EFORBIDDEN, "No ACS user is linked to this identity (%s), and this ACS does not create users on first sign-in (ACS_OIDC_CREATE_USERS=false). Ask its admin for access, or sign in another way first (a one-time link or an API key), then with the identity provider to link it to your ACS user.", or(id.Email, id.Subject))
		}
		u := acs.User{ID: acs.NewID(), Name: or(id.Email, or(id.Name, id.Subject)), CreatedAt: now}
		newLink.UserID = u.ID
		err = s.Store.CreateUserWithIdentity(ctx, u, newLink)
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, acs.ErrConflict) {
			return acs.User{}, fmt.Errorf("create the user of an identity: %w", err)
		}
		// Another sign-in linked it first: use its user.
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// openSession stores a new session of the user, made with the API key
// whose hash is keyHash ("" for none).
func (s *Service) openSession(ctx context.Context, userID string, m acs.SignInMethod, keyHash string, p SignInPolicy) (NewSession, error) {
	ttl := p.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	id := acs.NewSecret(43)
	now := s.now()
	bs := acs.BrowserSession{Hash: acs.HashKey(id), UserID: userID, Method: m, KeyHash: keyHash, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.Store.CreateSession(ctx, bs); err != nil {
		return NewSession{}, fmt.Errorf("store the session: %w", err)
	}
	return NewSession{BrowserSession: bs, ID: id}, nil
}

// Session resolves a session id (the cookie's value) to its user. An
// empty, unknown, expired or revoked session, a deleted user's, or one made
// with an API key that was revoked since, is ErrNoSession.
func (s *Service) Session(ctx context.Context, id string) (acs.User, acs.BrowserSession, error) {
	return SessionUser(ctx, s.Store, id)
}

// SessionUser is Service.Session over a store (the Lambda authorizer
// calls it).
func SessionUser(ctx context.Context, store CallerStore, id string) (acs.User, acs.BrowserSession, error) {
	if id == "" {
		return acs.User{}, acs.BrowserSession{}, ErrNoSession
	}
	bs, err := store.GetSession(ctx, acs.HashKey(id))
	if errors.Is(err, acs.ErrNotFound) {
		return acs.User{}, acs.BrowserSession{}, ErrNoSession
	}
	if err != nil {
		return acs.User{}, acs.BrowserSession{}, fmt.Errorf("read the session: %w", err)
	}
	if bs.KeyHash != "" {
		k, err := store.GetAPIKeyByHash(ctx, bs.KeyHash)
		if errors.Is(err, acs.ErrNotFound) || (err == nil && k.UserID != bs.UserID) {
			return acs.User{}, acs.BrowserSession{}, ErrNoSession
		}
		if err != nil {
			return acs.User{}, acs.BrowserSession{}, fmt.Errorf("read the session's API key: %w", err)
		}
	}
	u, err := store.GetUser(ctx, bs.UserID)
	if errors.Is(err, acs.ErrNotFound) {
		return acs.User{}, acs.BrowserSession{}, ErrNoSession
	}
	if err != nil {
		return acs.User{}, acs.BrowserSession{}, fmt.Errorf("read the session's user: %w", err)
	}
	return u, bs, nil
}

// SignOut ends the session with this id (an unknown one is not an error).
func (s *Service) SignOut(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if err := s.Store.DeleteSession(ctx, acs.HashKey(id)); err != nil {
		return fmt.Errorf("delete the session: %w", err)
	}
	return nil
}

// RevokeSessions ends every browser session of the user userID on behalf
// of caller (the user themself, or an admin: acs.ErrForbidden otherwise)
// and returns how many it ended. An admin naming an unknown user gets
// acs.ErrNotFound.
func (s *Service) RevokeSessions(ctx context.Context, caller acs.User, userID string) (int, error) {
	if userID == "me" {
		userID = caller.ID
	}
	if userID != caller.ID {
		if !caller.Admin {
			return 0, acs.Errorf(acs.EFORBIDDEN, "Only an admin can revoke another user's sessions")
		}
		if _, err := s.Store.GetUser(ctx, userID); errors.Is(err, acs.ErrNotFound) {
			return 0, acs.Errorf(acs.ENOTFOUND, "User not found: %s", userID)
		} else if err != nil {
			return 0, fmt.Errorf("read the user: %w", err)
		}
	}
	n, err := s.Store.DeleteUserSessions(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("revoke the sessions: %w", err)
	}
	return n, nil
}
