package fstools

import (
	"context"

	"github.com/acs-project/acs/events"
)

// GrepGo runs grep with the Go implementation only.
func GrepGo(ctx context.Context, r Root, a *events.GrepAction) (*events.GrepObservation, error) {
	return grepWith(ctx, r, a, "", false)
}

// GrepRipgrep runs grep with the rg binary at rg, without falling back to the
// Go implementation when rg fails.
func GrepRipgrep(ctx context.Context, r Root, a *events.GrepAction, rg string) (*events.GrepObservation, error) {
	return grepWith(ctx, r, a, rg, false)
}
