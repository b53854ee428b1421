package acs

import "context"

type userKey struct{}

// WithUser returns a context carrying the authenticated user. The V1 API's
// auth middleware (or the Lambda authorizer's context) sets it; handlers
// trust only this.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user, if any.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

type sandboxKey struct{}

// WithSandbox returns a context carrying the sandbox a session key
// authenticated (webhook routes).
func WithSandbox(ctx context.Context, s Sandbox) context.Context {
	return context.WithValue(ctx, sandboxKey{}, s)
}

// SandboxFrom returns the authenticated sandbox, if any.
func SandboxFrom(ctx context.Context) (Sandbox, bool) {
	s, ok := ctx.Value(sandboxKey{}).(Sandbox)
	return s, ok
}

type authMethodKey struct{}

// AuthMethod is how a request's user was authenticated.
type AuthMethod string

// The authentication methods of user requests.
const (
	// AuthByAPIKey: Authorization: Bearer <API key>.
	AuthByAPIKey AuthMethod = "api_key"
	// AuthBySession: a browser session's cookie. State-changing requests
	// authenticated this way must come from ACS's own origin (CSRF).
	AuthBySession AuthMethod = "session"
)

// WithAuthMethod returns a context saying how its user was authenticated.
func WithAuthMethod(ctx context.Context, m AuthMethod) context.Context {
	return context.WithValue(ctx, authMethodKey{}, m)
}

// AuthMethodFrom returns how the request's user was authenticated
// (AuthByAPIKey when nothing says otherwise).
func AuthMethodFrom(ctx context.Context) AuthMethod {
	if m, ok := ctx.Value(authMethodKey{}).(AuthMethod); ok && m != "" {
		return m
	}
	return AuthByAPIKey
}
