package main_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// newUser makes a user through the API (as the admin) and returns its key.
func (s *acsServe) newUser(name string) string {
	s.t.Helper()
	out, err := s.api(apiKey).CreateUser(s.t.Context(), name)
	s.ok(err, 201, "create user "+name)
	return out.Key.Key
}

// settings sets the user's grouping strategy and per-sandbox cap.
func (s *acsServe) settings(key, strategy string, max int) {
	s.t.Helper()
	gs := acs.GroupingStrategy(strategy)
	_, err := s.api(key).UpdateSettings(s.t.Context(), &v1wire.SettingsRequest{SandboxGroupingStrategy: &gs, MaxConversationsPerSandbox: &max})
	s.ok(err, 200, "update settings")
}

// newSandbox creates a sandbox and waits until it runs.
func (s *acsServe) newSandbox(key string) string {
	s.t.Helper()
	sb, err := s.api(key).CreateSandbox(s.t.Context(), "")
	if err != nil {
		s.t.Fatalf("create sandbox: %v", err)
	}
	if !testwait.Until(30*time.Second, func() bool {
		got := s.sandbox(key, sb.ID)
		return got != nil && got.Status == "RUNNING"
	}) {
		s.t.Fatalf("sandbox %s did not run", sb.ID)
	}
	return sb.ID
}

func (s *acsServe) mustStart(key string, body any) taskInfo {
	s.t.Helper()
	tk := s.start(key, body)
	if tk.Status != "READY" {
		s.t.Fatalf("start: %s %s", tk.Status, deref(tk.Detail))
	}
	return tk
}

// TestPlacement checks the five grouping strategies, the per-sandbox cap,
// per-conversation working directories, explicit placement (the spec's
// flow, a paused sandbox, a deleted one) and parent conversations.
func TestPlacement(t *testing.T) {
	llm := llmtest.New(llmtest.Reply{Repeat: true, Text: "ok"})
	defer llm.Close()
	dataDir := t.TempDir()
	s := startServe(t, dataDir, llm.URL)
	settings := func(key, strategy string, max int) {
		s.settings(key, strategy, max)
	}
	workDirOf := func(tk taskInfo) string {
		return filepath.Join(dataDir, "sandboxes", *tk.SandboxID, "workspace", *tk.AppConversationID)
	}

	t.Run("NO_GROUPING gives each conversation its own sandbox and the sandbox's workspace", func(t *testing.T) {
		key := s.newUser("no-grouping")
		a, b := s.mustStart(key, map[string]any{}), s.mustStart(key, map[string]any{})
		if *a.SandboxID == *b.SandboxID || !strings.HasPrefix(deref(a.Placement), "NO_GROUPING") {
			t.Fatalf("sandboxes %s %s (%s)", *a.SandboxID, *b.SandboxID, deref(a.Placement))
		}
		if _, err := os.Stat(workDirOf(a)); err == nil {
			t.Fatal("without grouping there is no per-conversation directory")
		}
	})

	t.Run("GROUP_BY_NEWEST picks the newest sandbox; each conversation gets its own directory", func(t *testing.T) {
		key := s.newUser("newest")
		settings(key, "GROUP_BY_NEWEST", 5)
		first := s.mustStart(key, map[string]any{})
		newest := s.newSandbox(key)
		tk := s.mustStart(key, map[string]any{})
		if *tk.SandboxID != newest || *first.SandboxID == newest {
			t.Fatalf("placed on %s, newest is %s (%s)", *tk.SandboxID, newest, deref(tk.Placement))
		}
		if st, err := os.Stat(workDirOf(tk)); err != nil || !st.IsDir() {
			t.Fatalf("per-conversation working directory: %v", err)
		}
	})

	t.Run("LEAST_RECENTLY_USED is truly least recently used", func(t *testing.T) {
		key := s.newUser("lru")
		settings(key, "LEAST_RECENTLY_USED", 5)
		older := s.mustStart(key, map[string]any{}) // sandbox A, created first
		b := s.newSandbox(key)                      // sandbox B, created later
		// Legitimate sleep: A's use must come measurably after B's creation.
		time.Sleep(20 * time.Millisecond)
		// Use A after B was created: B is now the least recently used,
		// although A is the oldest.
		_, err := s.api(key).SendMessage(t.Context(), *older.AppConversationID, &v1wire.SendMessageRequest{Role: "user", Content: []events.Content{&events.TextContent{Text: "still here"}}, Run: true})
		s.ok(err, 200, "send message")
		tk := s.mustStart(key, map[string]any{})
		if *tk.SandboxID != b {
			t.Fatalf("placed on %s, want the least recently used %s (%s)", *tk.SandboxID, b, deref(tk.Placement))
		}
	})

	t.Run("FEWEST_CONVERSATIONS", func(t *testing.T) {
		key := s.newUser("fewest")
		busy := s.newSandbox(key)
		quiet := s.newSandbox(key)
		for i := 0; i < 2; i++ {
			s.mustStart(key, map[string]any{"sandbox_id": busy})
		}
		s.mustStart(key, map[string]any{"sandbox_id": quiet})
		settings(key, "FEWEST_CONVERSATIONS", 5)
		tk := s.mustStart(key, map[string]any{})
		if *tk.SandboxID != quiet {
			t.Fatalf("placed on %s, want %s (%s)", *tk.SandboxID, quiet, deref(tk.Placement))
		}
	})

	t.Run("ADD_TO_ANY respects max_conversations_per_sandbox", func(t *testing.T) {
		key := s.newUser("any")
		settings(key, "ADD_TO_ANY", 2)
		a := s.mustStart(key, map[string]any{})
		b := s.mustStart(key, map[string]any{})
		c := s.mustStart(key, map[string]any{})
		if *a.SandboxID != *b.SandboxID || *c.SandboxID == *a.SandboxID {
			t.Fatalf("sandboxes %s %s %s", *a.SandboxID, *b.SandboxID, *c.SandboxID)
		}
		if got := s.sandbox(key, *a.SandboxID); got.Conversations != 2 {
			t.Fatalf("conversation count %d", got.Conversations)
		}
	})

	t.Run("explicit sandbox_id: the spec's flow, a paused sandbox, a deleted one", func(t *testing.T) {
		key := s.newUser("explicit")
		settings(key, "ADD_TO_ANY", 1)
		id := s.newSandbox(key)
		for i := 0; i < 3; i++ { // no capacity check on explicit placement
			tk := s.mustStart(key, map[string]any{"sandbox_id": id})
			if *tk.SandboxID != id || !strings.Contains(deref(tk.Placement), "explicit") {
				t.Fatalf("placed on %s (%s)", *tk.SandboxID, deref(tk.Placement))
			}
		}
		s.ok(s.api(key).PauseSandbox(t.Context(), id), 200, "pause")
		if tk := s.mustStart(key, map[string]any{"sandbox_id": id}); *tk.SandboxID != id {
			t.Fatal("a paused sandbox is resumed for the new conversation")
		}
		if got := s.sandbox(key, id); got.Status != "RUNNING" {
			t.Fatalf("sandbox %s after the start", got.Status)
		}
		s.ok(s.api(key).DeleteSandbox(t.Context(), id), 200, "delete")
		if tk := s.start(key, map[string]any{"sandbox_id": id}); tk.Status != "ERROR" || !strings.Contains(deref(tk.Detail), "MISSING") {
			t.Fatalf("a deleted sandbox: %s %s", tk.Status, deref(tk.Detail))
		}
		if tk := s.start(key, map[string]any{"sandbox_id": "nope"}); tk.Status != "ERROR" || !strings.Contains(deref(tk.Detail), "Sandbox not found") {
			t.Fatalf("an unknown sandbox: %s %s", tk.Status, deref(tk.Detail))
		}
	})

	t.Run("a sub-conversation inherits its parent's sandbox", func(t *testing.T) {
		key := s.newUser("parent")
		parent := s.mustStart(key, map[string]any{"llm_model": "openai/parent-model"})
		child := s.mustStart(key, map[string]any{"parent_conversation_id": *parent.AppConversationID})
		c := s.conv(key, *child.AppConversationID)
		if *child.SandboxID != *parent.SandboxID || deref(c.ParentConversationID) != *parent.AppConversationID || deref(c.LLMModel) != "openai/parent-model" {
			t.Fatalf("child %+v of parent on %s", c, *parent.SandboxID)
		}
		api := s.api(key)
		p := s.conv(key, *parent.AppConversationID)
		if len(p.SubConversationIDs) != 1 || p.SubConversationIDs[0] != *child.AppConversationID {
			t.Fatalf("the parent's sub_conversation_ids %v", p.SubConversationIDs)
		}
		page, err := api.SearchConversations(t.Context(), nil)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("search lists %d conversations (sub-conversations are excluded by default): %v", len(page.Items), err)
		}
		page, err = api.SearchConversations(t.Context(), client.Filter{"include_sub_conversations": {"true"}})
		if err != nil || len(page.Items) != 2 {
			t.Fatalf("with sub-conversations: %d %v", len(page.Items), err)
		}
		orphan := strings.Repeat("0", 32)
		_, err = api.StartConversation(t.Context(), &v1wire.StartRequest{ParentConversationID: &orphan})
		var ae *acs.Error
		if client.StatusOf(err) != 422 || !errors.As(err, &ae) || !strings.Contains(fmt.Sprint(ae.Field)+ae.Message, "parent_conversation_id") {
			t.Fatalf("unknown parent: %v", err)
		}
	})
}

// TestConcurrentStarts: 50 concurrent starts never overfill a sandbox and
// never create a duplicate.
func TestConcurrentStarts(t *testing.T) {
	llm := llmtest.New(llmtest.Reply{Repeat: true, Text: "ok"})
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL, "ACS_WORKERS=8")
	key := s.newUser("crowd")
	s.settings(key, "ADD_TO_ANY", 20)
	const n = 50
	ids := make([]string, n)
	errs := make([]error, n)
	api := s.api(key)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := api.StartConversation(t.Context(), &v1wire.StartRequest{})
			ids[i], errs[i] = tk.ID, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	perSandbox := map[string]int{}
	convs := map[string]bool{}
	for _, id := range ids {
		tk := s.waitTask(key, id)
		if tk.Status != "READY" {
			t.Fatalf("start %s: %s", tk.Status, deref(tk.Detail))
		}
		if convs[*tk.AppConversationID] {
			t.Fatalf("duplicate conversation %s", *tk.AppConversationID)
		}
		convs[*tk.AppConversationID] = true
		perSandbox[*tk.SandboxID]++
	}
	for sb, count := range perSandbox {
		got := s.sandbox(key, sb)
		if count > 20 || got.Conversations != count {
			t.Fatalf("sandbox %s: %d placed, record says %d (cap 20)", sb, count, got.Conversations)
		}
	}
	total, err := api.CountConversations(t.Context(), nil)
	if err != nil || total != n {
		t.Fatalf("%d conversations recorded, want %d", total, n)
	}
	t.Logf("%d conversations on %d sandboxes: %v", n, len(perSandbox), perSandbox)
	// Placement under a grouping strategy runs under the owner's placement
	// lock, STARTING sandboxes count as available, and a new sandbox is
	// created only when every one of the owner's has 20: the sandboxes fill
	// up one after the other, 20, 20 and 10.
	var counts []int
	for _, count := range perSandbox {
		counts = append(counts, count)
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{10, 20, 20}) {
		t.Fatalf("%d conversations at 20 per sandbox placed %v (%v), want 20, 20 and 10 on 3 sandboxes", n, counts, perSandbox)
	}
	// No orphans: the user owns exactly the sandboxes used.
	page, err := api.SearchSandboxes(t.Context(), client.Filter{"limit": {"100"}})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, sb := range page.Items {
		listed[sb.ID] = true
	}
	if page.NextPageID != nil || len(page.Items) != len(perSandbox) || len(listed) != len(perSandbox) {
		t.Fatalf("the user has %d sandboxes (more pages: %v), %d used: %+v", len(page.Items), page.NextPageID != nil, len(perSandbox), page.Items)
	}
	for sb := range perSandbox {
		if !listed[sb] {
			t.Fatalf("sandbox %s used but not listed: %+v", sb, page.Items)
		}
	}
}
