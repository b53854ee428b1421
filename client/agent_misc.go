package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// GetBashEvents returns the bash events with the given ids (32 hex digits
// or dashed UUIDs) in the order asked, nil for an id that names no event;
// each is the event's JSON (BashCommand, BashOutput or BashError). At most
// 100 ids per call (more is a 422 *Error).
func (a *Agent) GetBashEvents(ctx context.Context, ids ...string) ([]json.RawMessage, error) {
	if ids == nil {
		ids = []string{}
	}
	var raw []json.RawMessage
	if err := a.t.call(ctx, request{method: http.MethodGet, path: "/api/bash/bash_events/", body: ids, idempotent: true}, &raw); err != nil {
		return nil, err
	}
	for i, b := range raw {
		if string(b) == "null" {
			raw[i] = nil
		}
	}
	return raw, nil
}

// DownloadTrajectory returns a conversation's trajectory: a zip of its
// persisted record (meta.json, state.json, events/event-NNNNN-<id>.json),
// its secrets masked. An unknown conversation is an *Error with status 404.
func (a *Agent) DownloadTrajectory(ctx context.Context, convID string) ([]byte, error) {
	return a.t.bytes(ctx, request{method: http.MethodGet, path: "/api/file/download-trajectory/" + escape(convID), idempotent: true})
}
