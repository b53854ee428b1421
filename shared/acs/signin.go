package acs

import (
	"context"
	"time"
)

// Browser sign-in: sessions, one-time sign-in tokens and the OpenID
// Connect identities linked to users.

// SignInMethod says how a browser session was created.
type SignInMethod string

// The sign-in methods.
const (
	// SignInByToken: a one-time sign-in link (acs serve prints one at start).
	SignInByToken SignInMethod = "token"
	// SignInByAPIKey: an API key pasted into the sign-in page.
	SignInByAPIKey SignInMethod = "api_key"
	// SignInByOIDC: an OpenID Connect issuer's identity.
	SignInByOIDC SignInMethod = "oidc"
)

// BrowserSession is a signed-in browser. Its id (the cookie's value) is
// random and never stored: only its SHA-256 (HashKey) is.
type BrowserSession struct {
	Hash   string
	UserID string
	Method SignInMethod
	// KeyHash is the SHA-256 (HashKey) of the API key the session was
	// made with, "" for a session made another way. A session with a
	// KeyHash is valid only while that key is.
	KeyHash   string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SignInToken is a one-time sign-in link's token: single-use and
// short-lived; only its SHA-256 (HashKey) is stored.
type SignInToken struct {
	Hash      string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Identity links an OpenID Connect identity (issuer and subject) to a
// user: later sign-ins with the same identity are that user.
type Identity struct {
	Issuer  string
	Subject string
	UserID  string
	// Email is the verified address the identity had when it was linked.
	Email     string
	CreatedAt time.Time
}

// SessionStore keeps browser sessions and one-time sign-in tokens, by the
// hash of their values. A session or token whose ExpiresAt has passed is
// absent for every method (adapters may remove it later).
type SessionStore interface {
	// CreateSession stores a session; ErrConflict when its hash exists,
	// ErrInvalid without a hash or a user.
	CreateSession(ctx context.Context, s BrowserSession) error
	// GetSession returns the unexpired session with this hash;
	// ErrNotFound when none has it.
	GetSession(ctx context.Context, hash string) (BrowserSession, error)
	// DeleteSession removes a session (absent is not an error).
	DeleteSession(ctx context.Context, hash string) error
	// DeleteUserSessions removes every session of the user and returns how
	// many unexpired ones it removed.
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	// DeleteKeySessions removes every session of the user made with the
	// API key whose hash is keyHash and returns how many unexpired ones it
	// removed; ErrInvalid when keyHash is empty.
	DeleteKeySessions(ctx context.Context, userID, keyHash string) (int, error)
	// CreateSignInToken stores a token; ErrConflict when its hash exists,
	// ErrInvalid without a hash or a user.
	CreateSignInToken(ctx context.Context, t SignInToken) error
	// ConsumeSignInToken removes the unexpired token with this hash and
	// returns it; ErrNotFound when none has it (never stored, expired, or
	// consumed before). Of concurrent calls with one hash, exactly one
	// succeeds.
	ConsumeSignInToken(ctx context.Context, hash string) (SignInToken, error)
}

// IdentityStore keeps the OpenID Connect identities linked to users.
type IdentityStore interface {
	// CreateUserWithIdentity stores a new user and the identity linked to
	// it, both or neither; ErrConflict when the user's id exists or the
	// identity is linked already (to any user). id.UserID must be u.ID
	// (ErrInvalid otherwise, and without issuer or subject).
	CreateUserWithIdentity(ctx context.Context, u User, id Identity) error
	// LinkIdentity links an identity to an existing user (id.UserID);
	// ErrConflict when the identity is linked already (to any user),
	// ErrInvalid without issuer, subject or user.
	LinkIdentity(ctx context.Context, id Identity) error
	// GetIdentity returns the identity issuer and subject name;
	// ErrNotFound when it is linked to no user.
	GetIdentity(ctx context.Context, issuer, subject string) (Identity, error)
}
