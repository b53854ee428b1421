// Package accounts is the accounts service: users and their API keys
// (authentication, issue, list, revoke, the admin's bootstrap key), a
// user's settings and a user's stored secrets. It holds the rules; the V1
// handlers in shared/api only decode a request, call one method and encode
// its answer.
package accounts

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Service provides users, keys, settings and secrets over a store.
type Service struct {
	Store Store
	// Sealer seals stored secrets and LLM keys (only the settings and
	// secrets writes use it).
	Sealer acs.Sealer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Store is what the service keeps: users with their keys, browser
// sessions and linked identities, each user's settings and secrets, and
// the sandboxes whose session keys it resolves.
type Store interface {
	acs.UserStore
	acs.SessionStore
	acs.IdentityStore
	acs.SettingsStore
	acs.SecretStore
	acs.SandboxStore
}

// CallerStore is what resolving a user's credentials reads: users with
// their keys, and browser sessions.
type CallerStore interface {
	acs.UserStore
	acs.SessionStore
}

// ErrInvalidKey refuses an API key that names no key (or a deleted user's).
var ErrInvalidKey = &acs.Error{Code: acs.EUNAUTHORIZED, Message: "invalid API key", Challenge: "Bearer"}

// New returns the service over store and sealer.
func New(store Store, sealer acs.Sealer, now func() time.Time) *Service {
	return &Service{Store: store, Sealer: sealer, Now: now}
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// Authenticate resolves the value of an Authorization header ("Bearer
// <API_KEY>", the scheme case-insensitive) to its user. A missing,
// malformed or unknown key wraps acs.ErrUnauthorized; a store failure is
// returned as it is.
func Authenticate(ctx context.Context, store acs.UserStore, authorization string) (acs.User, error) {
	scheme, key, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	ok = ok && strings.EqualFold(scheme, "Bearer") // schemes are case-insensitive (RFC 7235)
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return acs.User{}, &acs.Error{Code: acs.EUNAUTHORIZED, Message: "missing Authorization: Bearer <API_KEY>", Challenge: "Bearer"}
	}
	k, err := store.GetAPIKeyByHash(ctx, acs.HashKey(key))
	if errors.Is(err, acs.ErrNotFound) {
		return acs.User{}, ErrInvalidKey
	}
	if err != nil {
		return acs.User{}, err
	}
	u, err := store.GetUser(ctx, k.UserID)
	if errors.Is(err, acs.ErrNotFound) {
		return acs.User{}, ErrInvalidKey
	}
	return u, err
}

// Authenticate is the package function Authenticate over the service's
// store.
func (s *Service) Authenticate(ctx context.Context, authorization string) (acs.User, error) {
	return Authenticate(ctx, s.Store, authorization)
}

// AuthenticateSandbox resolves a sandbox's session key (X-Session-API-Key)
// to the sandbox whose current key it is. An empty, unknown or deleted
// sandbox's key wraps acs.ErrUnauthorized.
func (s *Service) AuthenticateSandbox(ctx context.Context, key string) (acs.Sandbox, error) {
	if key == "" {
		return acs.Sandbox{}, acs.Errorf(acs.EUNAUTHORIZED, "missing X-Session-API-Key")
	}
	sb, err := s.Store.GetSandboxBySessionKeyHash(ctx, acs.HashKey(key))
	if errors.Is(err, acs.ErrNotFound) {
		return acs.Sandbox{}, acs.Errorf(acs.EUNAUTHORIZED, "unknown session key")
	}
	if err != nil {
		return acs.Sandbox{}, err
	}
	if sb.Status == acs.SandboxMissing {
		return acs.Sandbox{}, acs.Errorf(acs.EUNAUTHORIZED, "sandbox deleted")
	}
	return sb, nil
}
