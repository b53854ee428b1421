package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sealbox"
)

// TestWebhookTitleMasksSecretValues: the control plane does not trust a
// sandbox. A title a sandbox reports (the conversations webhook) is stored
// with the value of every secret of the conversation masked as
// <secret-hidden>: the owner's stored secrets and its start request's. A
// first message that holds one titles nothing. So the V1 title, the title
// search and the download's meta.json never hold a value.
func TestWebhookTitleMasksSecretValues(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	const (
		stored  = "ghp-stored-0123"
		request = "req-secret-4567"
		hidden  = "<secret-hidden>"
	)
	if r := e.as(aliceKey, "POST", "/api/v1/secrets", `{"name":"GH_TOKEN","value":"`+stored+`"}`); r.status != 201 {
		t.Fatalf("store secret: %d %s", r.status, r.body)
	}
	sealed, err := sealbox.FromPassphrase("api test passphrase").Seal(request)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := e.store.CreateStartTask(ctx, acs.StartTask{ID: "task-titles", OwnerID: "alice", Status: acs.TaskReady,
		Request: []byte(`{}`), SealedSecrets: map[string]string{"DEPLOY_KEY": sealed}, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	hdr := hookSandbox(t, e, "sb-titles", "titles-key-0123456789", "0000000000000000000000000000717e", acs.SandboxRunning)
	// conversation makes a conversation of the sandbox, started with the
	// start request's secret.
	conversation := func(id string) {
		t.Helper()
		fallback := acs.FallbackTitle(id)
		if err := e.store.CreateConversation(ctx, acs.Conversation{ID: id, OwnerID: "alice", SandboxID: "sb-titles",
			Title: &fallback, StartTaskID: "task-titles", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name, conv, title, want string
		values                  []string
	}{
		{"stored secret", "00000000000000000000000000007101", "push " + stored + " now", "push " + hidden + " now", []string{stored}},
		{"the start request's secret", "00000000000000000000000000007102", "key " + request, "key " + hidden, []string{request}},
		{"both, one twice", "00000000000000000000000000007103", stored + "/" + request + "/" + stored, hidden + "/" + hidden + "/" + hidden, []string{stored, request}},
		{"no secret", "00000000000000000000000000007104", "Plain title", "Plain title", nil},
	}
	// Every report is made first: reading a conversation through V1 finds
	// the seeded sandbox missing from the runtime, which ends its webhooks.
	for _, tc := range cases {
		conversation(tc.conv)
		body := `{"id":"` + acs.Dashed(tc.conv) + `","execution_status":"idle","title":"` + tc.title + `"}`
		if r := e.do("POST", "/api/v1/webhooks/conversations", body, hdr); r.status != 200 {
			t.Fatalf("%s: report: %d %s", tc.name, r.status, r.body)
		}
	}
	// A first message sent straight to the agent server titles an untitled
	// conversation, unless the title would hold a secret's value.
	const first = "0000000000000000000000000000f1a7"
	conversation(first)
	batch := `[{"kind":"MessageEvent","id":"first","timestamp":"` + events.At(now).String() + `","source":"user",` +
		`"llm_message":{"role":"user","content":[{"type":"text","text":"deploy with ` + request + `"}]}}]`
	if r := e.do("POST", "/api/v1/webhooks/events/"+first, batch, hdr); r.status != 200 {
		t.Fatalf("first message: %d %s", r.status, r.body)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c := record(t, e, tc.conv); c.Title == nil || *c.Title != tc.want {
				t.Fatalf("stored title %v, want %q", c.Title, tc.want)
			}
			got := e.as(aliceKey, "GET", "/api/v1/app-conversations?ids="+tc.conv, "")
			if got.status != 200 || !strings.Contains(string(got.body), `"title":"`+tc.want+`"`) {
				t.Fatalf("V1 conversation: %d %s, want title %q", got.status, got.body, tc.want)
			}
			meta := downloadMeta(t, e, tc.conv)
			if !strings.Contains(meta, `"title":"`+tc.want+`"`) {
				t.Fatalf("download meta.json %s, want title %q", meta, tc.want)
			}
			for _, v := range tc.values {
				if r := e.as(aliceKey, "GET", "/api/v1/app-conversations/count?title__contains="+url.QueryEscape(v), ""); string(r.body) != "0" {
					t.Errorf("a title holding %q is searchable: %s", v, r.body)
				}
				if strings.Contains(string(got.body)+meta, v) {
					t.Errorf("the value %q is served", v)
				}
			}
		})
	}
	t.Run("first message", func(t *testing.T) {
		if c := record(t, e, first); c.Title == nil || strings.Contains(*c.Title, request) {
			t.Fatalf("title %v holds the start request's secret", c.Title)
		}
		if meta := downloadMeta(t, e, first); strings.Contains(meta, request) {
			t.Fatalf("download meta.json %s holds the start request's secret", meta)
		}
	})
}

// downloadMeta returns the meta.json of the conversation's download.
func downloadMeta(t *testing.T, e *env, conv string) string {
	t.Helper()
	r := e.as(aliceKey, "GET", "/api/v1/app-conversations/"+conv+"/download", "")
	if r.status != 200 {
		t.Fatalf("download: %d %s", r.status, r.body)
	}
	zr, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatalf("download is not a zip: %v", err)
	}
	for _, f := range zr.File {
		if f.Name != "meta.json" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		return string(b)
	}
	t.Fatal("the download has no meta.json")
	return ""
}
