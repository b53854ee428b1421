package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunSettingsStoreTests runs the acs.SettingsStore suite.
func RunSettingsStoreTests(t *testing.T, h Harness[acs.SettingsStore]) {
	runTests(t, h, []Test[acs.SettingsStore]{{"Settings", testSettings}})
}

// RunSecretStoreTests runs the acs.SecretStore suite.
func RunSecretStoreTests(t *testing.T, h Harness[acs.SecretStore]) {
	runTests(t, h, []Test[acs.SecretStore]{{"Secrets", testSecrets}})
}

// RunPendingMessageStoreTests runs the acs.PendingMessageStore suite.
func RunPendingMessageStoreTests(t *testing.T, h Harness[acs.PendingMessageStore]) {
	runTests(t, h, []Test[acs.PendingMessageStore]{
		{"PendingMessages", testPendingMessages},
		{"PendingMessagesNeverOverfill", testPendingCapacity},
	})
}

// RunQuotaStoreTests runs the acs.QuotaStore suite.
func RunQuotaStoreTests(t *testing.T, h Harness[acs.QuotaStore]) {
	runTests(t, h, []Test[acs.QuotaStore]{{"QuotaClaimsAreAtomic", testQuota}})
}

func sameJSON(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	must(t, json.Unmarshal(got, &g))
	must(t, json.Unmarshal(want, &w))
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON %s, want %s", got, want)
	}
}

func testSettings(t *testing.T, s acs.SettingsStore) {
	_, err := s.GetSettings(ctx, "u1")
	wantErr(t, err, acs.ErrNotFound)

	st := acs.DefaultSettings("u1")
	st.SandboxGroupingStrategy = acs.FewestConversations
	st.LLMModel = strp("model-a")
	st.LLMAPIKeySealed = "sealed-key"
	st.ConfirmationPolicy = json.RawMessage(`{"kind":"AlwaysConfirm","note":"a <b> & c"}`)
	st.MaxConversationsPerSandbox = 7
	st.UpdatedAt = at(1)
	st.UI = map[string]json.RawMessage{"language": json.RawMessage(`"fr"`), "mcp_config": json.RawMessage(`{"a":[1,"<x>"]}`)}
	st.AgentSettings = json.RawMessage(`{"llm":{"temperature":0.5},"condenser":{"enabled":false}}`)
	st.ConversationSettings = json.RawMessage(`{"max_iterations":9}`)
	st.SearchAPIKeySealed = "sealed-search"
	st.LLMProfiles = []acs.LLMProfile{{Name: "b", Model: strp("m-b"), APIKeySealed: "sealed-b", Config: json.RawMessage(`{"top_p":1}`)}, {Name: "a", BaseURL: strp("http://a")}}
	st.ActiveLLMProfile = "b"
	st.ProviderTokens = []acs.ProviderToken{{Provider: "github", Host: "github.com", Sealed: "sealed-gh"}}
	must(t, s.PutSettings(ctx, st))
	got, err := s.GetSettings(ctx, "u1")
	must(t, err)
	if got.UserID != "u1" || got.SandboxGroupingStrategy != acs.FewestConversations || got.LLMModel == nil ||
		*got.LLMModel != "model-a" || got.LLMBaseURL != nil || got.LLMAPIKeySealed != "sealed-key" ||
		got.MaxConversationsPerSandbox != 7 || !got.UpdatedAt.Equal(at(1)) {
		t.Fatalf("settings %+v", got)
	}
	sameJSON(t, got.ConfirmationPolicy, st.ConfirmationPolicy)
	sameJSON(t, got.UI["mcp_config"], st.UI["mcp_config"])
	sameJSON(t, got.AgentSettings, st.AgentSettings)
	sameJSON(t, got.ConversationSettings, st.ConversationSettings)
	if len(got.UI) != 2 || string(got.UI["language"]) != `"fr"` || got.SearchAPIKeySealed != "sealed-search" || got.ActiveLLMProfile != "b" ||
		len(got.LLMProfiles) != 2 || got.LLMProfiles[0].Name != "b" || *got.LLMProfiles[0].Model != "m-b" || got.LLMProfiles[0].APIKeySealed != "sealed-b" ||
		got.LLMProfiles[1].BaseURL == nil || *got.LLMProfiles[1].BaseURL != "http://a" ||
		len(got.ProviderTokens) != 1 || got.ProviderTokens[0] != st.ProviderTokens[0] {
		t.Fatalf("web frontend settings %+v", got)
	}
	sameJSON(t, got.LLMProfiles[0].Config, st.LLMProfiles[0].Config)

	// Put replaces the whole record.
	repl := acs.DefaultSettings("u1")
	repl.LLMBaseURL = strp("http://llm.local")
	repl.UpdatedAt = at(2)
	must(t, s.PutSettings(ctx, repl))
	got, err = s.GetSettings(ctx, "u1")
	must(t, err)
	if got.LLMModel != nil || got.LLMBaseURL == nil || *got.LLMBaseURL != "http://llm.local" ||
		got.SandboxGroupingStrategy != acs.NoGrouping || got.LLMAPIKeySealed != "" || len(got.ConfirmationPolicy) != 0 ||
		got.MaxConversationsPerSandbox != acs.DefaultMaxConversationsPerSandbox || !got.UpdatedAt.Equal(at(2)) ||
		got.UI != nil || got.AgentSettings != nil || got.LLMProfiles != nil || got.ProviderTokens != nil || got.SearchAPIKeySealed != "" {
		t.Fatalf("replaced settings %+v", got)
	}
	_, err = s.GetSettings(ctx, "u2")
	wantErr(t, err, acs.ErrNotFound)
	must(t, s.PutSettings(ctx, acs.DefaultSettings("u2")))
	if got, _ := s.GetSettings(ctx, "u1"); got.LLMBaseURL == nil {
		t.Fatal("another user's settings replaced u1's")
	}
}

func secret(owner, name string, i int) acs.Secret {
	return acs.Secret{OwnerID: owner, Name: name, Description: "about " + name, Sealed: "sealed:" + owner + ":" + name,
		CreatedAt: at(i), UpdatedAt: at(i)}
}

func testSecrets(t *testing.T, s acs.SecretStore) {
	for i, name := range []string{"GITHUB_TOKEN", "API_KEY", "SLACK_TOKEN", "AWS_KEY"} {
		must(t, s.PutSecret(ctx, secret("u1", name, i)))
	}
	must(t, s.PutSecret(ctx, secret("u2", "API_KEY", 9)))
	names := func(owner string) string {
		t.Helper()
		list, err := s.ListSecrets(ctx, owner)
		must(t, err)
		var out []string
		for _, sec := range list {
			if sec.OwnerID != owner {
				t.Fatalf("%s's list holds %+v", owner, sec)
			}
			out = append(out, sec.Name)
		}
		return fmt.Sprint(out)
	}
	if got := names("u1"); got != "[API_KEY AWS_KEY GITHUB_TOKEN SLACK_TOKEN]" {
		t.Fatalf("u1 secrets %s", got)
	}
	if got := names("u2"); got != "[API_KEY]" {
		t.Fatalf("u2 secrets %s", got)
	}
	if got := names("nobody"); got != "[]" {
		t.Fatalf("secrets of nobody %s", got)
	}

	got, err := s.GetSecret(ctx, "u1", "API_KEY")
	must(t, err)
	if got.OwnerID != "u1" || got.Name != "API_KEY" || got.Sealed != "sealed:u1:API_KEY" ||
		got.Description != "about API_KEY" || !got.CreatedAt.Equal(at(1)) || !got.UpdatedAt.Equal(at(1)) {
		t.Fatalf("secret %+v", got)
	}
	theirs, err := s.GetSecret(ctx, "u2", "API_KEY")
	must(t, err)
	if theirs.Sealed != "sealed:u2:API_KEY" {
		t.Fatalf("u2's secret %+v", theirs)
	}
	_, err = s.GetSecret(ctx, "u1", "NOPE")
	wantErr(t, err, acs.ErrNotFound)
	_, err = s.GetSecret(ctx, "u3", "API_KEY")
	wantErr(t, err, acs.ErrNotFound)

	// Put replaces by (owner, name).
	repl := secret("u1", "API_KEY", 1)
	repl.Sealed, repl.Description, repl.UpdatedAt = "sealed:new", "rotated", at(20)
	must(t, s.PutSecret(ctx, repl))
	got, err = s.GetSecret(ctx, "u1", "API_KEY")
	must(t, err)
	if got.Sealed != "sealed:new" || got.Description != "rotated" || !got.UpdatedAt.Equal(at(20)) {
		t.Fatalf("replaced secret %+v", got)
	}
	if names("u1") != "[API_KEY AWS_KEY GITHUB_TOKEN SLACK_TOKEN]" {
		t.Fatal("replacing added a secret")
	}
	if theirs, _ := s.GetSecret(ctx, "u2", "API_KEY"); theirs.Sealed != "sealed:u2:API_KEY" {
		t.Fatal("replacing touched another owner's secret")
	}

	must(t, s.DeleteSecret(ctx, "u1", "API_KEY"))
	wantErr(t, s.DeleteSecret(ctx, "u1", "API_KEY"), acs.ErrNotFound)
	wantErr(t, s.DeleteSecret(ctx, "u3", "API_KEY"), acs.ErrNotFound)
	_, err = s.GetSecret(ctx, "u1", "API_KEY")
	wantErr(t, err, acs.ErrNotFound)
	if got := names("u1"); got != "[AWS_KEY GITHUB_TOKEN SLACK_TOKEN]" {
		t.Fatalf("after delete %s", got)
	}
	if got := names("u2"); got != "[API_KEY]" {
		t.Fatalf("delete touched another owner: %s", got)
	}
}

func pending(key, id string, i int) acs.PendingMessage {
	return acs.PendingMessage{ID: id, OwnerID: "u1", Key: key,
		Content: json.RawMessage(fmt.Sprintf(`{"role":"user","text":"message %s <&>"}`, id)), CreatedAt: at(i)}
}

func pendingIDs(t *testing.T, s acs.PendingMessageStore, key string) string {
	t.Helper()
	list, err := s.ListPendingMessages(ctx, key)
	must(t, err)
	var out []string
	for _, m := range list {
		if m.Key != key {
			t.Fatalf("%s's queue holds %+v", key, m)
		}
		out = append(out, m.ID)
	}
	return fmt.Sprint(out)
}

func testPendingMessages(t *testing.T, s acs.PendingMessageStore) {
	const max = 4
	// Queued order is insertion order, not the clock's: created times go
	// backwards here.
	for i, id := range []string{"m1", "m2", "m3"} {
		pos, err := s.AddPendingMessage(ctx, pending("task-t1", id, 10-i), max)
		must(t, err)
		if pos != i+1 {
			t.Fatalf("%s at position %d, want %d", id, pos, i+1)
		}
	}
	pos, err := s.AddPendingMessage(ctx, pending("conv-c1", "m9", 0), max)
	must(t, err)
	if pos != 1 {
		t.Fatalf("another key's first message at position %d", pos)
	}
	if got := pendingIDs(t, s, "task-t1"); got != "[m1 m2 m3]" {
		t.Fatalf("queue %s", got)
	}
	list, err := s.ListPendingMessages(ctx, "task-t1")
	must(t, err)
	want := pending("task-t1", "m1", 10)
	if list[0].OwnerID != "u1" || !list[0].CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("message %+v", list[0])
	}
	sameJSON(t, list[0].Content, want.Content)

	pos, err = s.AddPendingMessage(ctx, pending("task-t1", "m4", 0), max)
	must(t, err)
	if pos != 4 {
		t.Fatalf("m4 at %d", pos)
	}
	_, err = s.AddPendingMessage(ctx, pending("task-t1", "m5", 0), max)
	wantErr(t, err, acs.ErrCapacity)
	if got := pendingIDs(t, s, "task-t1"); got != "[m1 m2 m3 m4]" {
		t.Fatalf("a refused message was queued: %s", got)
	}

	// Deleting frees room; order holds; new messages go last.
	must(t, s.DeletePendingMessage(ctx, "task-t1", "m2"))
	must(t, s.DeletePendingMessage(ctx, "task-t1", "m2"))     // absent: not an error
	must(t, s.DeletePendingMessage(ctx, "conv-c1", "m3"))     // wrong key: nothing happens
	must(t, s.DeletePendingMessage(ctx, "no-such-key", "m1")) // unknown key
	if got := pendingIDs(t, s, "task-t1"); got != "[m1 m3 m4]" {
		t.Fatalf("after delete %s", got)
	}
	pos, err = s.AddPendingMessage(ctx, pending("task-t1", "m5", 99), max)
	must(t, err)
	if pos != 4 {
		t.Fatalf("m5 at %d, want 4", pos)
	}
	if got := pendingIDs(t, s, "task-t1"); got != "[m1 m3 m4 m5]" {
		t.Fatalf("after re-add %s", got)
	}
	must(t, s.DeletePendingMessage(ctx, "task-t1", "m1"))
	pos, err = s.AddPendingMessage(ctx, pending("task-t1", "m6", 0), max)
	must(t, err)
	if pos != 4 {
		t.Fatalf("m6 at %d, want 4", pos)
	}
	if got := pendingIDs(t, s, "task-t1"); got != "[m3 m4 m5 m6]" {
		t.Fatalf("after delete of the head %s", got)
	}
	if got := pendingIDs(t, s, "conv-c1"); got != "[m9]" {
		t.Fatalf("other key %s", got)
	}
	for _, id := range []string{"m3", "m4", "m5", "m6"} {
		must(t, s.DeletePendingMessage(ctx, "task-t1", id))
	}
	if got := pendingIDs(t, s, "task-t1"); got != "[]" {
		t.Fatalf("emptied queue %s", got)
	}
	if got := pendingIDs(t, s, "never-used"); got != "[]" {
		t.Fatalf("unknown key %s", got)
	}
}

func testPendingCapacity(t *testing.T, s acs.PendingMessageStore) {
	const adders = 50
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		positions []int
	)
	for i := 0; i < adders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pos, err := s.AddPendingMessage(ctx, pending("burst", fmt.Sprintf("m%02d", i), i), acs.MaxPendingMessages)
			switch {
			case err == nil:
				mu.Lock()
				positions = append(positions, pos)
				mu.Unlock()
			case !errors.Is(err, acs.ErrCapacity):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	sort.Ints(positions)
	want := make([]int, acs.MaxPendingMessages)
	for i := range want {
		want[i] = i + 1
	}
	if fmt.Sprint(positions) != fmt.Sprint(want) {
		t.Fatalf("%d adds succeeded with positions %v, want %v", len(positions), positions, want)
	}
	list, err := s.ListPendingMessages(ctx, "burst")
	must(t, err)
	if len(list) != acs.MaxPendingMessages {
		t.Fatalf("%d messages queued, max %d", len(list), acs.MaxPendingMessages)
	}
}

// testQuota: a quota record starts empty; updates are atomic, so concurrent
// claims under a cap never exceed it; a failed update stores nothing.
func testQuota(t *testing.T, s acs.QuotaStore) {
	q, err := s.UpdateQuota(ctx, "u1", func(q *acs.Quota) error { return nil })
	must(t, err)
	if q.UserID != "u1" || q.Claims == nil || len(q.Claims) != 0 {
		t.Fatalf("fresh quota %+v", q)
	}
	const limit, contenders = 3, 20
	full := errors.New("full")
	won := contend(t, contenders, full, func(i int) error {
		_, err := s.UpdateQuota(ctx, "u1", func(q *acs.Quota) error {
			if len(q.Claims) >= limit {
				return full
			}
			q.Claims[fmt.Sprintf("sb%d", i)] = at(i)
			return nil
		})
		return err
	})
	q, _ = s.UpdateQuota(ctx, "u1", func(*acs.Quota) error { return nil })
	if won != limit || len(q.Claims) != limit {
		t.Fatalf("%d claims won, %d stored; limit %d", won, len(q.Claims), limit)
	}
	_, err = s.UpdateQuota(ctx, "u1", func(q *acs.Quota) error { q.Claims = nil; return full })
	wantErr(t, err, full)
	q, _ = s.UpdateQuota(ctx, "u2", func(*acs.Quota) error { return nil })
	if len(q.Claims) != 0 {
		t.Fatalf("another user's quota %+v", q)
	}
	q, _ = s.UpdateQuota(ctx, "u1", func(*acs.Quota) error { return nil })
	if len(q.Claims) != limit {
		t.Fatal("a failed update changed the quota")
	}
	// The placement lock is stored with the claims.
	lock := acs.PlacementLock{Task: "t1", Until: at(5), Created: "sb-new"}
	_, err = s.UpdateQuota(ctx, "u1", func(q *acs.Quota) error { q.Placement = &lock; return nil })
	must(t, err)
	q, _ = s.UpdateQuota(ctx, "u1", func(*acs.Quota) error { return nil })
	if q.Placement == nil || q.Placement.Task != lock.Task || !q.Placement.Until.Equal(lock.Until) || q.Placement.Created != lock.Created || len(q.Claims) != limit {
		t.Fatalf("placement lock stored as %+v (claims %d)", q.Placement, len(q.Claims))
	}
}
