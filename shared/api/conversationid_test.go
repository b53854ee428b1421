package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// TestExplicitConversationIDOfAnotherUserRevealsNothing: a start asking
// for the id of another user's conversation gets exactly (status and
// bytes) what the same user gets for an id no conversation has but that
// is refused anyway — here the name of one of alice's own sandboxes, which
// outlived the conversation it was made for — so the answer cannot tell
// that bob's conversation exists. The caller's own conversation gets the
// same answer; a free id is accepted.
func TestExplicitConversationIDOfAnotherUserRevealsNothing(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	now := time.Now().UTC()
	bobsConv, alicesConv := strings.Repeat("b0", 16), strings.Repeat("a0", 16)
	keptSandbox, bobsSandbox := strings.Repeat("a5", 16), strings.Repeat("b5", 16)
	for _, c := range []acs.Conversation{
		{ID: bobsConv, OwnerID: "bob", SandboxID: bobsSandbox, CreatedAt: now},
		{ID: alicesConv, OwnerID: "alice", SandboxID: keptSandbox, CreatedAt: now},
	} {
		if err := e.store.CreateConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// keptSandbox was made for a conversation of that id, since deleted;
	// it goes on serving alicesConv.
	for _, sb := range []acs.Sandbox{
		{ID: keptSandbox, OwnerID: "alice", Status: acs.SandboxPaused, Slots: []string{alicesConv}, CreatedAt: now},
		{ID: bobsSandbox, OwnerID: "bob", Status: acs.SandboxPaused, Slots: []string{bobsConv}, CreatedAt: now},
	} {
		if err := e.store.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	start := func(id string) resp {
		return startOnce(t, e, aliceKey, "/api/v1/app-conversations", `{"conversation_id":"`+id+`"}`)
	}
	reference := start(keptSandbox)
	if reference.status != 409 {
		t.Fatalf("reference (a free id naming a sandbox): %d %s", reference.status, reference.body)
	}
	cases := []struct{ name, id string }{
		{"another user's conversation", bobsConv},
		{"another user's conversation, dashed", acs.Dashed(bobsConv)},
		{"another user's sandbox", bobsSandbox},
		{"the caller's own conversation", alicesConv},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := start(tc.id)
			if r.status != reference.status || string(r.body) != string(reference.body) {
				t.Fatalf("got %d %s\nwant %d %s (as for a free id that is refused)", r.status, r.body, reference.status, reference.body)
			}
		})
	}
	if r := start(strings.Repeat("f0", 16)); r.status != 200 {
		t.Fatalf("a free id: %d %s", r.status, r.body)
	}
}
