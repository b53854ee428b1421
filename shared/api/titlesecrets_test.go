package api_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sealbox"
)

// TestTitleRefusesSecretValues: a title is stored, listed, searched and
// downloaded as it is, so a title holding a secret's value is refused with
// 422 at the title, as an initial message is — at the start (the
// request's secrets and the stored ones, also a suggested task's title)
// and in PATCH (the conversation's secrets: stored ones and its start
// request's) — and nothing holding the value is stored.
func TestTitleRefusesSecretValues(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	if r := e.as(aliceKey, "POST", "/api/v1/secrets", `{"name":"GH_TOKEN","value":"ghp-stored-0123"}`); r.status != 201 {
		t.Fatalf("store secret: %d %s", r.status, r.body)
	}
	// A started conversation whose start request carried a secret.
	const conv = "0000000000000000000000000000ac1d"
	sealed, err := sealbox.FromPassphrase("api test passphrase").Seal("req-secret-4567")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := e.store.CreateStartTask(ctx, acs.StartTask{ID: "task-secret", OwnerID: "alice", Status: acs.TaskReady, ConversationID: conv,
		Request: []byte(`{}`), SealedSecrets: map[string]string{"DEPLOY_KEY": sealed}, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	title := "Before"
	if err := e.store.CreateConversation(ctx, acs.Conversation{ID: conv, OwnerID: "alice", SandboxID: "sb-gone", Title: &title,
		StartTaskID: "task-secret", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, body, loc, secret, value string
	}{
		{"start title, request secret", "POST", "/api/v1/app-conversations",
			`{"secrets":{"API_TOKEN":"sk-request-9876"},"title":"deploy with sk-request-9876"}`, "body.title", "API_TOKEN", "sk-request-9876"},
		{"start title, stored secret", "POST", "/api/v1/app-conversations",
			`{"title":"push ghp-stored-0123"}`, "body.title", "GH_TOKEN", "ghp-stored-0123"},
		{"stream-start title, stored secret", "POST", "/api/v1/app-conversations/stream-start",
			`{"title":"ghp-stored-0123"}`, "body.title", "GH_TOKEN", "ghp-stored-0123"},
		{"suggested task title, stored secret", "POST", "/api/v1/app-conversations",
			`{"suggested_task":{"task_type":"OPEN_ISSUE","repo":"acme/app","issue_number":7,"title":"leak ghp-stored-0123"}}`,
			"body.suggested_task.title", "GH_TOKEN", "ghp-stored-0123"},
		{"PATCH title, stored secret", "PATCH", "/api/v1/app-conversations/" + conv,
			`{"title":"ghp-stored-0123 in a title"}`, "body.title", "GH_TOKEN", "ghp-stored-0123"},
		{"PATCH title, the start request's secret", "PATCH", "/api/v1/app-conversations/" + conv,
			`{"title":"key req-secret-4567"}`, "body.title", "DEPLOY_KEY", "req-secret-4567"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := taskCount(t, e, aliceKey)
			var r resp
			if tc.method == "PATCH" {
				r = e.as(aliceKey, tc.method, tc.path, tc.body)
			} else {
				r = startOnce(t, e, aliceKey, tc.path, tc.body)
			}
			assert422(t, r, tc.loc)
			if strings.Contains(string(r.body), tc.value) {
				t.Errorf("the refusal repeats the secret value: %s", r.body)
			}
			if !strings.Contains(string(r.body), tc.secret) {
				t.Errorf("the refusal does not name the secret: %s", r.body)
			}
			if after := taskCount(t, e, aliceKey); after != before {
				t.Errorf("a refused start created a task: %s tasks, then %s", before, after)
			}
			if c, err := e.store.GetConversation(ctx, conv); err != nil || c.Title == nil || *c.Title != "Before" {
				t.Errorf("the conversation's title became %v (%v)", c.Title, err)
			}
			if r := e.as(aliceKey, "GET", "/api/v1/app-conversations/count?title__contains="+url.QueryEscape(tc.value), ""); string(r.body) != "0" {
				t.Errorf("a title holding the value is searchable: %s", r.body)
			}
		})
	}
	// Titles without a secret's value still pass.
	if r := startOnce(t, e, aliceKey, "/api/v1/app-conversations", `{"title":"uses $GH_TOKEN"}`); r.status != 200 {
		t.Fatalf("start with a clean title: %d %s", r.status, r.body)
	}
	if r := e.as(aliceKey, "PATCH", "/api/v1/app-conversations/"+conv, `{"title":"uses $DEPLOY_KEY"}`); r.status != 200 {
		t.Fatalf("PATCH with a clean title: %d %s", r.status, r.body)
	}
}
