package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestStartedConversationsAreTitledByTheirFirstMessage: a conversation
// started with a message is titled by it (acs.TitleFromMessage: its first
// line, cut at a word boundary); an explicit title wins, and a rename
// later; with no message the title is "Conversation <id prefix>" until
// the first message (even one sent straight to the agent server).
func TestStartedConversationsAreTitledByTheirFirstMessage(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t, 3*time.Minute)
	c := client.New(e.url, adminKey)
	explicit := "Chosen by the caller"
	tests := []struct {
		name string
		req  *v1wire.StartRequest
		want func(id string) string
	}{
		{"from the message", startRequest("  Fix the   login bug\nIt fails when the password has a quote."),
			func(string) string { return "Fix the login bug" }},
		{"long message", startRequest("Refactor the billing module so that invoices are generated asynchronously by a worker"),
			func(string) string { return "Refactor the billing module so that invoices are generated…" }},
		{"explicit title", &v1wire.StartRequest{Title: &explicit, InitialMessage: message("Fix the login bug")},
			func(string) string { return explicit }},
		{"no message", &v1wire.StartRequest{}, func(id string) string { return "Conversation " + id[:5] }},
	}
	var first string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task, err := c.StartConversationAndWait(ctx, tc.req, 50*time.Millisecond)
			if err != nil || task.AppConversationID == nil {
				t.Fatalf("start: %+v %v", task, err)
			}
			id := *task.AppConversationID
			conv, err := c.GetConversation(ctx, id)
			if err != nil || conv.Title == nil || *conv.Title != tc.want(id) {
				t.Fatalf("title %v (%v), want %q", deref(conv.Title), err, tc.want(id))
			}
			if first == "" {
				first = id
			}
			if tc.req.InitialMessage != nil {
				return
			}
			// The first message, sent straight to the agent server as the
			// web frontend does, titles it once its event is reported.
			agent, err := client.AgentOf(conv)
			if err != nil {
				t.Fatal(err)
			}
			if err := agent.SendMessage(ctx, id, message("Hello from the frontend\nsecond line")); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 60*time.Second, "the first message to title the conversation", func() bool {
				conv, err = c.GetConversation(ctx, id)
				return err == nil && deref(conv.Title) == "Hello from the frontend"
			})
			if err := agent.SendMessage(ctx, id, message("A second message")); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 60*time.Second, "the second message to be reported", func() bool {
				n, err := c.CountEvents(ctx, id, client.Filter{"kind": {"MessageEvent"}})
				return err == nil && n >= 3
			})
			if conv, err = c.GetConversation(ctx, id); err != nil || deref(conv.Title) != "Hello from the frontend" {
				t.Fatalf("after a second message: %v %v", deref(conv.Title), err)
			}
		})
	}
	// A rename wins over the derived title, and stays.
	up, err := c.UpdateConversation(ctx, first, &v1wire.UpdateRequest{Title: client.Set("Renamed")})
	if err != nil || up.Title == nil || *up.Title != "Renamed" {
		t.Fatalf("rename: %+v %v", up, err)
	}
	if conv, err := c.GetConversation(ctx, first); err != nil || deref(conv.Title) != "Renamed" {
		t.Fatalf("after the rename: %v %v", deref(conv.Title), err)
	}
	page, err := c.SearchConversations(ctx, client.Filter{"title__contains": {"billing"}})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, it := range page.Items {
		titles = append(titles, deref(it.Title))
	}
	if strings.Join(titles, "|") != "Refactor the billing module so that invoices are generated…" {
		t.Fatalf("conversations whose title has \"billing\": %q", titles)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
