package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/acs-project/acs/sandbox/agentwire"
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

// InstallSkill installs a skill on the agent server (409 when installed
// and not Force, 400 when the source cannot be fetched, 422 without a valid
// SKILL.md). It is never retried.
func (a *Agent) InstallSkill(ctx context.Context, req agentwire.InstallSkillRequest) (agentwire.InstalledSkill, error) {
	var out agentwire.InstalledSkill
	body, err := json.Marshal(req)
	if err != nil {
		return out, err
	}
	err = a.t.call(ctx, request{method: http.MethodPost, path: "/api/skills/install", body: json.RawMessage(body)}, &out)
	return out, err
}

// InstalledSkills lists the installed skills, sorted by name.
func (a *Agent) InstalledSkills(ctx context.Context) ([]agentwire.InstalledSkill, error) {
	var out struct {
		Skills []agentwire.InstalledSkill `json:"skills"`
	}
	err := a.get(ctx, "/api/skills/installed", nil, &out)
	return out.Skills, err
}

// InstalledSkill returns one installed skill (404 when not installed).
func (a *Agent) InstalledSkill(ctx context.Context, name string) (agentwire.InstalledSkill, error) {
	var out agentwire.InstalledSkill
	err := a.get(ctx, "/api/skills/installed/"+escape(name), nil, &out)
	return out, err
}

// SetSkillEnabled enables or disables an installed skill (404 when not
// installed).
func (a *Agent) SetSkillEnabled(ctx context.Context, name string, enabled bool) error {
	return a.t.call(ctx, request{method: http.MethodPatch, path: "/api/skills/installed/" + escape(name),
		body: json.RawMessage(fmt.Sprintf(`{"enabled":%t}`, enabled)), idempotent: true}, nil)
}

// UninstallSkill removes an installed skill (404 when not installed).
func (a *Agent) UninstallSkill(ctx context.Context, name string) error {
	return a.t.call(ctx, request{method: http.MethodDelete, path: "/api/skills/installed/" + escape(name)}, nil)
}

// RefreshSkill fetches an installed skill again from its source and
// returns it as now installed (404 when not installed).
func (a *Agent) RefreshSkill(ctx context.Context, name string) (agentwire.InstalledSkill, error) {
	var out struct {
		Skill agentwire.InstalledSkill `json:"skill"`
	}
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/skills/installed/" + escape(name) + "/refresh"}, &out)
	return out.Skill, err
}
