package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// newUser makes a user through the API (as the admin) and returns its key.
func (s *acsServe) newUser(name string) string {
	s.t.Helper()
	var out struct {
		Key struct {
			Key string `json:"key"`
		} `json:"key"`
	}
	s.admin("POST", "/api/v1/users", map[string]any{"name": name}).want(201).into(&out)
	return out.Key.Key
}

// newSandbox creates a sandbox and waits until it runs.
func (s *acsServe) newSandbox(key string) string {
	s.t.Helper()
	var sb sandboxInfo
	s.do("POST", "/api/v1/sandboxes", nil, key).into(&sb)
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
		s.do("POST", "/api/v1/settings", map[string]any{"sandbox_grouping_strategy": strategy, "max_conversations_per_sandbox": max}, key).want(200)
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
		s.do("POST", "/api/v1/app-conversations/"+*older.AppConversationID+"/send-message", msg("still here"), key).want(200)
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
		s.do("POST", "/api/v1/sandboxes/"+id+"/pause", nil, key).want(200)
		if tk := s.mustStart(key, map[string]any{"sandbox_id": id}); *tk.SandboxID != id {
			t.Fatal("a paused sandbox is resumed for the new conversation")
		}
		if got := s.sandbox(key, id); got.Status != "RUNNING" {
			t.Fatalf("sandbox %s after the start", got.Status)
		}
		s.do("DELETE", "/api/v1/sandboxes/"+id, nil, key).want(200)
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
		var ps []*struct {
			SubConversationIDs []string `json:"sub_conversation_ids"`
		}
		s.do("GET", "/api/v1/app-conversations?ids="+*parent.AppConversationID, nil, key).into(&ps)
		if len(ps[0].SubConversationIDs) != 1 || ps[0].SubConversationIDs[0] != *child.AppConversationID {
			t.Fatalf("the parent's sub_conversation_ids %v", ps[0].SubConversationIDs)
		}
		var page struct {
			Items []convInfo `json:"items"`
		}
		s.do("GET", "/api/v1/app-conversations/search", nil, key).into(&page)
		if len(page.Items) != 1 {
			t.Fatalf("search lists %d conversations (sub-conversations are excluded by default)", len(page.Items))
		}
		s.do("GET", "/api/v1/app-conversations/search?include_sub_conversations=true", nil, key).into(&page)
		if len(page.Items) != 2 {
			t.Fatalf("with sub-conversations: %d", len(page.Items))
		}
		r := s.do("POST", "/api/v1/app-conversations", map[string]any{"parent_conversation_id": strings.Repeat("0", 32)}, key)
		if r.status != 422 || !strings.Contains(string(r.body), "parent_conversation_id") {
			t.Fatalf("unknown parent: %d %s", r.status, r.body)
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
	s.do("POST", "/api/v1/settings", map[string]any{"sandbox_grouping_strategy": "ADD_TO_ANY", "max_conversations_per_sandbox": 20}, key).want(200)
	const n = 50
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tk taskInfo
			s.do("POST", "/api/v1/app-conversations", map[string]any{}, key).into(&tk)
			ids[i] = tk.ID
		}()
	}
	wg.Wait()
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
	var total int
	s.do("GET", "/api/v1/app-conversations/count", nil, key).into(&total)
	if total != n {
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
	var page struct {
		Items      []sandboxInfo `json:"items"`
		NextPageID *string       `json:"next_page_id"`
	}
	s.do("GET", "/api/v1/sandboxes/search?limit=100", nil, key).into(&page)
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
