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
