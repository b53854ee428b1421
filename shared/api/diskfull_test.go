package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/localqueue"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

// TestWritesOnAFullDiskAre507: with the data directory's disk full, the V1
// routes that write (start, rename, settings, the events webhook) answer
// 507 with Retry-After and a JSON detail that says why — not 500 "Internal
// Server Error" (issue 11, defect 7) — and nothing is half stored: once
// space is freed the same requests succeed and the records read back whole.
func TestWritesOnAFullDiskAre507(t *testing.T) {
	dir := diskfulltest.Dir(t, 4<<20)
	storePath, queuePath := filepath.Join(dir, "acs.db"), filepath.Join(dir, "queue.db")
	store, err := boltstore.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The webhook's conversation is on a sandbox of its own: renaming the
	// other reads its sandbox, which the runtime does not know (MISSING).
	const sbKey, conv, hookConv = "full-disk-session-key-0123", "0000000000000000000000000000f011", "0000000000000000000000000000f012"
	now := time.Now().UTC()
	for _, err := range []error{
		store.CreateUser(ctx, acs.User{ID: "alice", Name: "alice"}),
		store.CreateAPIKey(ctx, acs.APIKey{ID: "alice-k", UserID: "alice", Hash: acs.HashKey(aliceKey)}),
		store.CreateSandbox(ctx, acs.Sandbox{ID: "sb-1", OwnerID: "alice", Status: acs.SandboxPaused, CreatedAt: now, LastUsedAt: now, LastActivityAt: now}),
		store.CreateConversation(ctx, acs.Conversation{ID: conv, OwnerID: "alice", SandboxID: "sb-1", CreatedAt: now, UpdatedAt: now}),
		store.CreateSandbox(ctx, acs.Sandbox{ID: "sb-2", OwnerID: "alice", Status: acs.SandboxRunning, SessionKeyHash: acs.HashKey(sbKey),
			CreatedAt: now, LastUsedAt: now, LastActivityAt: now}),
		store.CreateConversation(ctx, acs.Conversation{ID: hookConv, OwnerID: "alice", SandboxID: "sb-2", CreatedAt: now, UpdatedAt: now}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A store in use: other users' settings, conversations and start tasks.
	for i := range 200 {
		u := fmt.Sprintf("user-%03d", i)
		model := "model-" + u
		if err := store.PutSettings(ctx, acs.Settings{UserID: u, LLMModel: &model, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		title := "conversation " + u
		if err := store.CreateConversation(ctx, acs.Conversation{ID: fmt.Sprintf("%032x", i), OwnerID: u, Title: &title, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := store.CreateStartTask(ctx, acs.StartTask{ID: fmt.Sprintf("task%028x", i), OwnerID: u, Status: acs.TaskReady,
			ConversationID: fmt.Sprintf("%032x", i), CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	// A bbolt file reuses the pages its earlier writes freed, so on a full
	// disk a write can still succeed when it fits in them; only one that
	// needs the file to grow finds no space. Compacting leaves two free
	// pages, fewer than any write below needs (each changes several pages
	// of a store this size), so each of them must grow the file.
	compact(t, storePath)
	if store, err = boltstore.Open(storePath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	queue, err := localqueue.Open(queuePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { queue.Close() })
	rt, err := procsandbox.New(procsandbox.Config{Binary: "/nonexistent/acs", Root: filepath.Join(t.TempDir(), "sandboxes")})
	if err != nil {
		t.Fatal(err)
	}
	v1 := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue, Runtime: rt,
		Flow:   startflow.Config{Sandboxes: sandboxes.Config{Specs: []acs.SandboxSpec{{ID: "acs-local"}}}},
		Sealer: sealbox.FromPassphrase("api test passphrase")})})
	srv := httptest.NewServer(v1.Handler())
	t.Cleanup(srv.Close)
	e := &env{t: t, store: store, srv: srv}

	user := map[string]string{"Authorization": "Bearer " + aliceKey, "Content-Type": "application/json"}
	sandbox := map[string]string{"X-Session-API-Key": sbKey, "Content-Type": "application/json"}
	event := `[{"kind":"MessageEvent","id":"msg-on-full-disk","timestamp":"` + events.At(now).String() +
		`","source":"agent","llm_message":{"role":"assistant","content":[{"type":"text","text":"written on a full disk"}]}}]`
	writes := []struct {
		name, method, path, body string
		headers                  map[string]string
	}{
		{"start", "POST", "/api/v1/app-conversations", `{"title":"started on a full disk"}`, user},
		{"rename", "PATCH", "/api/v1/app-conversations/" + conv, `{"title":"renamed on a full disk"}`, user},
		{"settings", "POST", "/api/v1/settings", `{"llm_model":"model-on-a-full-disk"}`, user},
		{"events webhook", "POST", "/api/v1/webhooks/events/" + hookConv, event, sandbox},
	}
	free := diskfulltest.Fill(t, dir)
	for _, w := range writes {
		r := e.do(w.method, w.path, w.body, w.headers)
		var body struct {
			Detail string `json:"detail"`
		}
		if r.status != 507 || json.Unmarshal(r.body, &body) != nil || !strings.Contains(body.Detail, "disk is full") {
			t.Errorf("%s on a full disk: %d %s; want 507 with a detail saying the disk is full", w.name, r.status, r.body)
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s on a full disk: no Retry-After", w.name)
		}
	}
	free()
	for _, w := range writes {
		if r := e.do(w.method, w.path, w.body, w.headers); r.status != 200 {
			t.Errorf("%s after freeing space: %d %s", w.name, r.status, r.body)
		}
	}
	c, err := store.GetConversation(ctx, conv)
	if err != nil || c.Title == nil || *c.Title != "renamed on a full disk" {
		t.Fatalf("conversation after freeing space: %+v, %v", c, err)
	}
	if got, err := store.GetEvents(ctx, hookConv, []string{"msg-on-full-disk"}); err != nil || got[0] == nil {
		t.Fatalf("event after freeing space: %v", err)
	}
}

// compact rewrites the bbolt file at path without free pages.
func compact(t *testing.T, path string) {
	t.Helper()
	src, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := bolt.Open(path+".compact", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bolt.Compact(dst, src, 0); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".compact", path); err != nil {
		t.Fatal(err)
	}
}
