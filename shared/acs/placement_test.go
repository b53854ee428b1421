package acs_test

import (
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

func TestPlace(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sb := func(id string, status acs.SandboxStatus, age, idle time.Duration, slots int) acs.Sandbox {
		s := acs.Sandbox{ID: id, OwnerID: "alice", Status: status, CreatedAt: t0.Add(-age), LastUsedAt: t0.Add(-idle)}
		for i := range slots {
			s.Slots = append(s.Slots, id+"-"+string(rune('a'+i)))
		}
		return s
	}
	// Newest first, as the store lists them.
	mixed := []acs.Sandbox{
		sb("new", acs.SandboxRunning, 1*time.Hour, 1*time.Minute, 3),
		sb("mid", acs.SandboxStarting, 2*time.Hour, 30*time.Minute, 1),
		sb("old", acs.SandboxRunning, 3*time.Hour, 10*time.Minute, 2),
		sb("paused", acs.SandboxPaused, 4*time.Hour, 5*time.Hour, 0),
		sb("failed", acs.SandboxError, 5*time.Hour, 6*time.Hour, 0),
		sb("gone", acs.SandboxMissing, 6*time.Hour, 7*time.Hour, 0),
	}
	tie := []acs.Sandbox{
		sb("first", acs.SandboxRunning, 1*time.Hour, 10*time.Minute, 1),
		sb("second", acs.SandboxRunning, 2*time.Hour, 10*time.Minute, 1),
	}
	set := func(g acs.GroupingStrategy, max int) acs.Settings {
		return acs.Settings{UserID: "alice", SandboxGroupingStrategy: g, MaxConversationsPerSandbox: max}
	}
	alice := acs.PlaceRequest{Owner: "alice"}
	explicit := func(id string) acs.PlaceRequest { return acs.PlaceRequest{Owner: "alice", SandboxID: id} }
	for _, tc := range []struct {
		name      string
		settings  acs.Settings
		cands     []acs.Sandbox
		req       acs.PlaceRequest
		want      string // the chosen sandbox, "" for a new one
		reason    string
		refusal   string
		needsRoom bool
		max       int
	}{
		{"no grouping", set(acs.NoGrouping, 0), mixed, alice, "", "NO_GROUPING: a new sandbox for this conversation", "", true, 20},
		{"no strategy saved", set("", 0), mixed, alice, "", "NO_GROUPING: a new sandbox for this conversation", "", true, 20},
		{"group by newest", set(acs.GroupByNewest, 10), mixed, alice, "new",
			"GROUP_BY_NEWEST: the newest available sandbox (created 2026-01-02T02:04:05Z)", "", false, 10},
		{"least recently used", set(acs.LeastRecentlyUsed, 10), mixed, alice, "mid",
			"LEAST_RECENTLY_USED: the least recently used available sandbox (last used 2026-01-02T02:34:05Z)", "", false, 10},
		{"fewest conversations", set(acs.FewestConversations, 10), mixed, alice, "mid",
			"FEWEST_CONVERSATIONS: the available sandbox with the fewest conversations (1)", "", false, 10},
		{"add to any", set(acs.AddToAny, 10), mixed, alice, "new", "ADD_TO_ANY: the first available sandbox (1 of 3)", "", false, 10},
		{"full sandboxes are skipped", set(acs.GroupByNewest, 2), mixed, alice, "mid",
			"GROUP_BY_NEWEST: the newest available sandbox (created 2026-01-02T01:04:05Z)", "", false, 2},
		{"all full", set(acs.AddToAny, 1), mixed, alice, "",
			"ADD_TO_ANY: no RUNNING sandbox with fewer than 1 conversations; a new sandbox", "", true, 1},
		{"the default cap", set(acs.AddToAny, 0), []acs.Sandbox{sb("busy", acs.SandboxRunning, time.Hour, time.Hour, 20)}, alice, "",
			"ADD_TO_ANY: no RUNNING sandbox with fewer than 20 conversations; a new sandbox", "", true, 20},
		{"no cap", set(acs.AddToAny, -1), []acs.Sandbox{sb("busy", acs.SandboxRunning, time.Hour, time.Hour, 50)}, alice, "busy",
			"ADD_TO_ANY: the first available sandbox (1 of 1)", "", false, -1},
		{"paused, errored and missing are not grouped", set(acs.AddToAny, 10), mixed[3:], alice, "",
			"ADD_TO_ANY: no RUNNING sandbox with fewer than 10 conversations; a new sandbox", "", true, 10},
		{"no sandboxes", set(acs.FewestConversations, 10), nil, alice, "",
			"FEWEST_CONVERSATIONS: no RUNNING sandbox with fewer than 10 conversations; a new sandbox", "", true, 10},
		{"a least recently used tie keeps the store's order", set(acs.LeastRecentlyUsed, 10), tie, alice, "first",
			"LEAST_RECENTLY_USED: the least recently used available sandbox (last used 2026-01-02T02:54:05Z)", "", false, 10},
		{"a fewest conversations tie keeps the store's order", set(acs.FewestConversations, 10), tie, alice, "first",
			"FEWEST_CONVERSATIONS: the available sandbox with the fewest conversations (1)", "", false, 10},
		{"explicit running", set(acs.NoGrouping, 1), mixed, explicit("new"), "new", "explicit sandbox_id (no capacity check)", "", false, 0},
		{"explicit ignores the cap", set(acs.AddToAny, 1), mixed, explicit("old"), "old", "explicit sandbox_id (no capacity check)", "", false, 0},
		{"explicit paused", set(acs.AddToAny, 10), mixed, explicit("paused"), "paused", "explicit sandbox_id (no capacity check)", "", true, 0},
		{"explicit errored", set(acs.AddToAny, 10), mixed, explicit("failed"), "", "",
			"Sandbox failed is ERROR and not startable; choose another sandbox or start without sandbox_id", false, 0},
		{"explicit missing status", set(acs.AddToAny, 10), mixed, explicit("gone"), "", "",
			"Sandbox gone is MISSING and not startable; choose another sandbox or start without sandbox_id", false, 0},
		{"explicit not found", set(acs.AddToAny, 10), mixed, explicit("nope"), "", "", "Sandbox not found: nope", false, 0},
		{"explicit another owner's", set(acs.AddToAny, 10), mixed, acs.PlaceRequest{Owner: "bob", SandboxID: "new"}, "", "",
			"Sandbox not found: new", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := acs.Place(tc.settings, tc.cands, tc.req)
			got := ""
			if d.Sandbox != nil {
				got = d.Sandbox.ID
			}
			if got != tc.want || d.Reason != tc.reason || d.Refusal != tc.refusal || d.NeedsRoom() != tc.needsRoom || d.Max != tc.max {
				t.Errorf("Place = {sandbox %q, reason %q, refusal %q, needs room %v, max %d}\nwant   {sandbox %q, reason %q, refusal %q, needs room %v, max %d}",
					got, d.Reason, d.Refusal, d.NeedsRoom(), d.Max, tc.want, tc.reason, tc.refusal, tc.needsRoom, tc.max)
			}
			if wantGrouping := tc.settings.SandboxGroupingStrategy.Groups(); d.Grouping != wantGrouping || d.Explicit != (tc.req.SandboxID != "") {
				t.Errorf("grouping %v explicit %v, want %v %v", d.Grouping, d.Explicit, wantGrouping, tc.req.SandboxID != "")
			}
		})
	}
}
