package client

import (
	"context"
	"net/http"
)

// Pause asks the agent of a conversation to stop at its next step
// boundary (the status becomes paused); a no-op unless it is idle or
// running. It is never retried.
func (a *Agent) Pause(ctx context.Context, convID string) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/pause"}, nil)
}

// Run starts (or continues, after a pause) the agent of a conversation; a
// 409 (ECONFLICT) when it is already running. It is never retried.
func (a *Agent) Run(ctx context.Context, convID string) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/run"}, nil)
}
