package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/acs"
)

// TestWebhookUserMessageMarksSandboxUsed: a user message sent straight to
// the agent server reaches the control plane only through the events
// webhook, and it is a use of the sandbox (LEAST_RECENTLY_USED placement
// reads last_used_at); agent events and other user events are activity,
// not use.
func TestWebhookUserMessageMarksSandboxUsed(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	seeded := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := events.At(time.Now().UTC()).String()
	message := func(id, source, role string) string {
		return `{"kind":"MessageEvent","id":"` + id + `","timestamp":"` + ts + `","source":"` + source +
			`","llm_message":{"role":"` + role + `","content":[{"type":"text","text":"hi"}]}}`
	}
	state := func(id string) string {
		return `{"kind":"ConversationStateUpdateEvent","id":"` + id + `","timestamp":"` + ts + `","key":"execution_status","value":"running"}`
	}
	cases := []struct {
		name  string
		batch string
		used  bool
	}{
		{"user message", `[` + message("m1", "user", "user") + `]`, true},
		{"user message among agent events", `[` + state("s1") + `,` + message("m1", "user", "user") + `,` + message("m2", "agent", "assistant") + `]`, true},
		{"agent message and state", `[` + message("m1", "agent", "assistant") + `,` + state("s1") + `]`, false},
		{"user pause", `[{"kind":"PauseEvent","id":"p1","timestamp":"` + ts + `","source":"user"}]`, false},
		{"empty batch", `[]`, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sbID, key, conv := fmt.Sprintf("sb-touch-%d", i), fmt.Sprintf("touch-key-%d", i), fmt.Sprintf("%032x", i+1)
			if err := e.store.CreateSandbox(ctx, acs.Sandbox{ID: sbID, OwnerID: "alice", Status: acs.SandboxRunning,
				SessionKeyHash: acs.HashKey(key), CreatedAt: seeded, LastUsedAt: seeded, LastActivityAt: seeded}); err != nil {
				t.Fatal(err)
			}
			if err := e.store.CreateConversation(ctx, acs.Conversation{ID: conv, OwnerID: "alice", SandboxID: sbID, CreatedAt: seeded}); err != nil {
				t.Fatal(err)
			}
			r := e.do("POST", "/api/v1/webhooks/events/"+conv, tc.batch, map[string]string{"X-Session-API-Key": key, "Content-Type": "application/json"})
			if r.status != 200 {
				t.Fatalf("ingest: %d %s", r.status, r.body)
			}
			var got []struct {
				LastUsedAt string `json:"last_used_at"`
			}
			e.as(aliceKey, "GET", "/api/v1/sandboxes?id="+sbID, "").json(t, &got)
			if len(got) != 1 {
				t.Fatalf("sandbox %s: %+v", sbID, got)
			}
			moved := got[0].LastUsedAt != events.At(seeded).String()
			if moved != tc.used {
				t.Fatalf("last_used_at %s (seeded %s): moved %v, want %v", got[0].LastUsedAt, events.At(seeded), moved, tc.used)
			}
		})
	}
}
