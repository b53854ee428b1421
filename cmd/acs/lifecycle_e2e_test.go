package main_test

// End-to-end tests of the sandbox lifecycle through `acs serve`: pause,
// resume, transparent resume, deletion of shared sandboxes and of a
// sandbox's last conversation, the read-only states (MISSING, ERROR), the
// PAUSED reading while the agent waits (confirmation, LLM rate limit), the
// idle reconciler and the per-user cap on running sandboxes.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// lcBind returns s reporting to t (so a subtest's failures stop the
// subtest, not its parent), with its own record of the last status.
func lcBind(s *acsServe, t *testing.T) *acsServe {
	c := *s
	c.t = t
	c.status = &lastStatus{} // parallel subtests must not read each other's answers
	return &c
}

// lcServe starts `acs serve` with its own scripted LLM; the LLM outlives the
// server.
func lcServe(t *testing.T, replies []llmtest.Reply, env ...string) (*acsServe, *llmtest.Server, string) {
	t.Helper()
	llm := llmtest.New(replies...)
	t.Cleanup(llm.Close)
	dataDir := t.TempDir()
	s := startServe(t, dataDir, llm.URL, env...)
	return lcBind(s, t), llm, dataDir
}

// lcWriteThenFinish scripts a conversation whose message contains tag: the
// agent creates name (relative to its working directory) with content, then
// finishes.
func lcWriteThenFinish(tag, name, content string) []llmtest.Reply {
	return []llmtest.Reply{
		{MatchText: tag, Respond: func(req *llmtest.Request) llmtest.Reply {
			path := filepath.Join("/missing-working-directory", name)
			if wd := workDirRE.FindStringSubmatch(req.SystemText()); wd != nil {
				path = filepath.Join(wd[1], name)
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
				"command": "create", "path": path, "file_text": content}}}}
		}},
		{MatchText: tag, ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Wrote " + name}}}},
	}
}

// lcSay scripts a plain answer (which finishes the run) to every message
// containing tag.
func lcSay(tag string) llmtest.Reply {
	return llmtest.Reply{MatchText: tag, Text: "Noted: " + tag, Repeat: true}
}

// lcSubmit submits a start request and returns the start task id.
func lcSubmit(s *acsServe, key, text string) string {
	s.t.Helper()
	tk, err := s.api(key).StartConversation(s.t.Context(), startBody(s.t, map[string]any{"initial_message": msg(text)}))
	s.ok(err, 200, "start")
	return tk.ID
}

// lcReady waits for a start task to be READY and returns its conversation
// and sandbox ids.
func lcReady(s *acsServe, key, taskID string) (convID, sandboxID string) {
	s.t.Helper()
	tk := s.waitTask(key, taskID)
	if tk.Status != "READY" || tk.AppConversationID == nil || tk.SandboxID == nil {
		s.t.Fatalf("start task %s: %s (%s)\n%s", taskID, tk.Status, deref(tk.Detail), s.log)
	}
	return *tk.AppConversationID, *tk.SandboxID
}

// lcStart starts a conversation with text as its initial message and waits
// for it to be READY.
func lcStart(s *acsServe, key, text string) (convID, sandboxID string) {
	s.t.Helper()
	return lcReady(s, key, lcSubmit(s, key, text))
}

func lcExec(c *convInfo) string { return deref(c.ExecutionStatus) }

// lcWaitFinished waits for a conversation's agent to finish.
func lcWaitFinished(s *acsServe, key, id string) *convInfo {
	s.t.Helper()
	return s.waitConv(key, id, "finished", func(c *convInfo) bool { return lcExec(c) == "finished" })
}

// lcWaitSandbox polls a sandbox until its status is want.
func lcWaitSandbox(s *acsServe, key, id, want string, timeout time.Duration) *sandboxInfo {
	s.t.Helper()
	var sb *sandboxInfo
	if !testwait.Until(timeout, func() bool {
		sb = s.sandbox(key, id)
		return sb != nil && sb.Status == want && (want != "RUNNING" || (sb.SessionAPIKey != nil && len(sb.ExposedURLs) == 1))
	}) {
		s.t.Fatalf("sandbox %s never became %s (last %+v)\n%s", id, want, sb, s.log)
	}
	return sb
}

// lcUser creates a user as the admin and returns its key.
func lcUser(s *acsServe, name string) string {
	s.t.Helper()
	key := s.newUser(name)
	if key == "" {
		s.t.Fatalf("no key for user %s", name)
	}
	return key
}

// lcSuccess expects {"success": true}.
func lcSuccess(s *acsServe, r resp) {
	s.t.Helper()
	var out map[string]any
	r.into(&out)
	if out["success"] != true {
		s.t.Fatalf("want {\"success\":true}, got %s", r.body)
	}
}

// lcDetail expects status code with a non-empty string detail, which it
// returns. It reads a raw answer on purpose: the body's shape is what it
// checks (the typed client would accept any error shape).
func lcDetail(s *acsServe, r resp, code int, what string) string {
	s.t.Helper()
	if r.status != code {
		s.t.Fatalf("%s: HTTP %d, want %d: %s", what, r.status, code, r.body)
	}
	var out struct {
		Detail any `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		s.t.Fatalf("%s: body is not JSON: %s", what, r.body)
	}
	d, ok := out.Detail.(string)
	if !ok || strings.TrimSpace(d) == "" {
		s.t.Fatalf("%s: want a {\"detail\": \"...\"} body, got %s", what, r.body)
	}
	return d
}

// lcAgent calls an agent server directly with a session key.
func lcAgent(baseURL, key, path string) (int, []byte, error) {
	req, _ := http.NewRequest("GET", baseURL+path, nil)
	if key != "" {
		req.Header.Set("X-Session-API-Key", key)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, nil
}

// lcSandboxDir is a local sandbox's directory.
func lcSandboxDir(dataDir, sandboxID string) string {
	return filepath.Join(dataDir, "sandboxes", sandboxID)
}

// lcPid reads a local sandbox's agent-server pid (0 when the pid file is
// absent).
func lcPid(t testing.TB, dataDir, sandboxID string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(lcSandboxDir(dataDir, sandboxID), "agent.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("agent.pid %q: %v", b, err)
	}
	return pid
}

// lcAlive reports whether a process exists (a zombie counts).
func lcAlive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// lcEvents reads every V1 event of a conversation (pages of 100), each
// as its wire JSON object.
func lcEvents(s *acsServe, key, convID string) []map[string]any {
	s.t.Helper()
	var out []map[string]any
	for ev, err := range s.api(key).Events(s.t.Context(), convID, client.Filter{"limit": {"100"}}) {
		if err != nil {
			s.t.Fatalf("events of %s: %v", convID, err)
		}
		b, err := events.Encode(ev)
		if err != nil {
			s.t.Fatalf("encode event: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			s.t.Fatalf("event %s: %v", b, err)
		}
		out = append(out, m)
	}
	return out
}

// lcEventCount reads the V1 event count of a conversation.
func lcEventCount(s *acsServe, key, convID string) int {
	s.t.Helper()
	n, err := s.api(key).CountEvents(s.t.Context(), convID, nil)
	s.ok(err, 200, "count events of "+convID)
	return n
}

// lcSend sends a user message as key and returns the answer.
func lcSend(s *acsServe, key, convID, text string, run bool) v1wire.SendMessageResponse {
	s.t.Helper()
	out, err := s.api(key).SendMessage(s.t.Context(), convID, &v1wire.SendMessageRequest{Role: "user",
		Content: []events.Content{&events.TextContent{Text: text}}, Run: run})
	s.ok(err, 200, "send-message to "+convID)
	return out
}

// lcRead reads a workspace file of a conversation as key.
func lcRead(s *acsServe, key, convID, path string) string {
	s.t.Helper()
	content, err := s.api(key).ReadFile(s.t.Context(), convID, path)
	s.ok(err, 200, "read "+path)
	return content
}

// lcSandboxes lists the user's sandboxes (one page).
func lcSandboxes(s *acsServe, key string) []v1wire.Sandbox {
	s.t.Helper()
	page, err := s.api(key).SearchSandboxes(s.t.Context(), nil)
	s.ok(err, 200, "search sandboxes")
	return page.Items
}

// lcCreateSandbox creates a sandbox as key.
func lcCreateSandbox(s *acsServe, key string) v1wire.Sandbox {
	s.t.Helper()
	sb, err := s.api(key).CreateSandbox(s.t.Context(), "")
	s.ok(err, 200, "create sandbox")
	return sb
}

// lcSettled waits until the control plane stores every event the agent
// server has for a running conversation, and returns their number.
func lcSettled(s *acsServe, key, convID string) int {
	s.t.Helper()
	c := s.conv(key, convID)
	if c == nil || c.ConversationURL == nil || c.SessionAPIKey == nil {
		s.t.Fatalf("conversation %s is not running: %+v", convID, c)
	}
	base := strings.TrimSuffix(*c.ConversationURL, "/api/conversations/"+convID)
	path := "/api/conversations/" + convID + "/events/count"
	n := 0
	testwait.For(s.t, 10*time.Second, "the webhook to deliver every event", func() bool {
		code, body, err := lcAgent(base, *c.SessionAPIKey, path)
		if err != nil || code != 200 {
			s.t.Fatalf("agent server events count: %d %s %v", code, body, err)
		}
		n, _ = strconv.Atoi(strings.TrimSpace(string(body)))
		return n > 0 && lcEventCount(s, key, convID) == n
	})
	return n
}

// lcSawMessage reports whether the scripted LLM received a request whose
// last user message contains text.
func lcSawMessage(llm *llmtest.Server, text string) bool {
	for _, r := range llm.Requests() {
		if strings.Contains(r.LastUserText(), text) {
			return true
		}
	}
	return false
}

// Rules 1, 2, 5 and 12: pause releases the processes and keeps the
// workspace; resume rotates the session key and keeps the conversations;
// messages and file reads resume a paused sandbox transparently; another
// user cannot touch the sandbox.
func TestLifecyclePauseResume(t *testing.T) {
	t.Parallel()
	replies := append(lcWriteThenFinish("tag-pause-resume", "kept/notes.txt", "kept across pause\n"),
		lcSay("follow-up-after-pause"))
	s, llm, dataDir := lcServe(t, replies)
	convID, sbID := lcStart(s, apiKey, "tag-pause-resume: write kept/notes.txt")
	lcWaitFinished(s, apiKey, convID)
	wsFile := filepath.Join(lcSandboxDir(dataDir, sbID), "workspace", "kept", "notes.txt")
	if b, err := os.ReadFile(wsFile); err != nil || string(b) != "kept across pause\n" {
		t.Fatalf("the agent's file: %q %v", b, err)
	}
	before := lcWaitSandbox(s, apiKey, sbID, "RUNNING", 10*time.Second)
	oldKey, oldURL := *before.SessionAPIKey, before.ExposedURLs[0].URL
	eventsBefore := lcSettled(s, apiKey, convID)

	t.Run("pause releases the processes and keeps the workspace", func(t *testing.T) {
		s := lcBind(s, t)
		pid := lcPid(t, dataDir, sbID)
		if !lcAlive(pid) {
			t.Fatalf("agent server pid %d not running before the pause", pid)
		}
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil))
		sb := s.sandbox(apiKey, sbID)
		if sb.Status != "PAUSED" || sb.SessionAPIKey != nil || len(sb.ExposedURLs) != 0 {
			t.Fatalf("paused sandbox reads %+v", sb)
		}
		if p := lcPid(t, dataDir, sbID); p != 0 {
			t.Fatalf("pid file still there after the pause (pid %d)", p)
		}
		if lcAlive(pid) {
			t.Fatalf("agent server pid %d still runs after the pause", pid)
		}
		if _, _, err := lcAgent(oldURL, oldKey, "/alive"); err == nil {
			t.Fatalf("the old agent URL %s still answers after the pause", oldURL)
		}
		if b, err := os.ReadFile(wsFile); err != nil || string(b) != "kept across pause\n" {
			t.Fatalf("workspace file after the pause: %q %v", b, err)
		}
		c := s.conv(apiKey, convID)
		if c.SandboxStatus != "PAUSED" || c.ConversationURL != nil || c.SessionAPIKey != nil {
			t.Fatalf("conversation of a paused sandbox: %+v", c)
		}
		// Pausing a paused sandbox is a no-op.
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil))
		if sb := s.sandbox(apiKey, sbID); sb.Status != "PAUSED" {
			t.Fatalf("second pause: %+v", sb)
		}
	})

	var newKey, newURL string
	t.Run("resume rotates the session key and keeps the conversations", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/resume", nil))
		sb := lcWaitSandbox(s, apiKey, sbID, "RUNNING", 20*time.Second)
		newKey, newURL = *sb.SessionAPIKey, sb.ExposedURLs[0].URL
		if newKey == oldKey {
			t.Fatal("the session key was not rotated by the resume")
		}
		path := "/api/conversations/" + convID + "/events/count"
		testwait.For(t, 10*time.Second, "the resumed agent server to answer", func() bool {
			code, _, err := lcAgent(newURL, newKey, "/alive")
			return err == nil && code == 200
		})
		if code, body, err := lcAgent(newURL, oldKey, path); err != nil || code != 401 {
			t.Fatalf("old session key on the resumed agent server: %d %s %v", code, body, err)
		}
		code, body, err := lcAgent(newURL, newKey, path)
		if err != nil || code != 200 {
			t.Fatalf("events count on the resumed agent server: %d %s %v", code, body, err)
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(string(body))); n == 0 {
			t.Fatalf("the resumed agent server lost the conversation's events: %s", body)
		}
		if evs := lcEvents(s, apiKey, convID); len(evs) < eventsBefore || len(evs) == 0 {
			t.Fatalf("V1 events after resume: %d, before pause %d", len(evs), eventsBefore)
		}
		c := s.conv(apiKey, convID)
		if c.SandboxStatus != "RUNNING" || c.ConversationURL == nil || c.SessionAPIKey == nil || *c.SessionAPIKey != newKey ||
			!strings.HasPrefix(*c.ConversationURL, newURL+"/") {
			t.Fatalf("conversation after resume: %+v (agent %s)", c, newURL)
		}
	})

	t.Run("another user's sandbox is not found", func(t *testing.T) {
		s := lcBind(s, t)
		bob := lcUser(s, "bob")
		for _, r := range []resp{
			s.do("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil, bob),
			s.do("POST", "/api/v1/sandboxes/"+sbID+"/resume", nil, bob),
			s.do("DELETE", "/api/v1/sandboxes/"+sbID, nil, bob),
			s.do("DELETE", "/api/v1/sandboxes?sandbox_id="+sbID, nil, bob),
		} {
			lcDetail(s, r, 404, "bob on the admin's sandbox")
		}
		got, err := s.api(bob).GetSandboxes(t.Context(), sbID)
		s.ok(err, 200, "bob gets the sandbox")
		if len(got) != 1 || got[0] != nil {
			t.Fatalf("bob reads the admin's sandbox: %+v", got)
		}
		sb := s.sandbox(apiKey, sbID)
		if sb.Status != "RUNNING" || sb.SessionAPIKey == nil || *sb.SessionAPIKey != newKey {
			t.Fatalf("the admin's sandbox changed after bob's attempts: %+v", sb)
		}
	})

	t.Run("send-message resumes a paused sandbox", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil))
		out := lcSend(s, apiKey, convID, "follow-up-after-pause", true)
		if !out.Success || out.SandboxStatus != "RUNNING" {
			t.Fatalf("send-message on a paused sandbox: %+v", out)
		}
		testwait.For(t, 20*time.Second, "the LLM to receive the follow-up", func() bool { return lcSawMessage(llm, "follow-up-after-pause") })
		if sb := s.sandbox(apiKey, sbID); sb.Status != "RUNNING" {
			t.Fatalf("sandbox after a transparent resume: %+v", sb)
		}
		lcWaitFinished(s, apiKey, convID)
	})

	t.Run("file reads resume a paused sandbox", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil))
		// A file the test writes into the paused workspace.
		testFile := filepath.Join(lcSandboxDir(dataDir, sbID), "workspace", "written-by-test.txt")
		if err := os.WriteFile(testFile, []byte("from the test\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		content := lcRead(s, apiKey, convID, "kept/notes.txt")
		if content != "kept across pause\n" {
			t.Fatalf("file read on a paused sandbox: %q", content)
		}
		if sb := s.sandbox(apiKey, sbID); sb.Status != "RUNNING" {
			t.Fatalf("sandbox after a file read: %+v", sb)
		}
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil))
		content = lcRead(s, apiKey, convID, "written-by-test.txt")
		if content != "from the test\n" {
			t.Fatalf("test-written file read on a paused sandbox: %q", content)
		}
		if c := s.conv(apiKey, convID); c.SandboxStatus != "RUNNING" {
			t.Fatalf("conversation after a file read: %+v", c)
		}
	})
}

// Rules 3 and 4: pausing or deleting a shared sandbox affects every
// conversation on it; deleting a conversation deletes its sandbox only when
// it was the last one.
func TestLifecycleSharedSandbox(t *testing.T) {
	t.Parallel()
	s, _, dataDir := lcServe(t, []llmtest.Reply{lcSay("tag-shared-"), lcSay("tag-alone")})
	carol := lcUser(s, "carol")
	addToAny := acs.GroupingStrategy("ADD_TO_ANY")
	settings, err := s.api(carol).UpdateSettings(t.Context(), &v1wire.SettingsRequest{SandboxGroupingStrategy: &addToAny})
	s.ok(err, 200, "update settings")
	if settings.SandboxGroupingStrategy != "ADD_TO_ANY" {
		t.Fatalf("settings: %+v", settings)
	}
	// Carol's three conversations share one sandbox; the admin (no grouping)
	// has one of their own.
	var tasks []string
	for _, x := range []string{"a", "b", "c"} {
		tasks = append(tasks, lcSubmit(s, carol, "tag-shared-"+x))
	}
	aloneTask := lcSubmit(s, apiKey, "tag-alone")
	var convs []string
	sbID := ""
	for _, id := range tasks {
		c, sb := lcReady(s, carol, id)
		if sbID != "" && sb != sbID {
			t.Fatalf("ADD_TO_ANY placed conversations in %s and %s", sbID, sb)
		}
		sbID = sb
		convs = append(convs, c)
	}
	alone, aloneSB := lcReady(s, apiKey, aloneTask)
	for _, c := range convs {
		lcWaitFinished(s, carol, c)
		lcSettled(s, carol, c)
	}
	lcWaitFinished(s, apiKey, alone)
	if sb := s.sandbox(carol, sbID); sb.Status != "RUNNING" || sb.Conversations != 3 {
		t.Fatalf("shared sandbox: %+v", sb)
	}

	t.Run("deleting one of several conversations keeps the sandbox", func(t *testing.T) {
		s := lcBind(s, t)
		sb := s.sandbox(carol, sbID)
		lcSuccess(s, s.do("DELETE", "/api/v1/app-conversations/"+convs[2], nil, carol))
		if c := s.conv(carol, convs[2]); c != nil {
			t.Fatalf("deleted conversation still reads %+v", c)
		}
		after := s.sandbox(carol, sbID)
		if after == nil || after.Status != "RUNNING" || after.Conversations != 2 {
			t.Fatalf("sandbox after deleting one of three conversations: %+v", after)
		}
		code, body, err := lcAgent(sb.ExposedURLs[0].URL, *sb.SessionAPIKey, "/api/conversations/"+convs[2])
		if err != nil || code != 404 {
			t.Fatalf("the agent server still has the deleted conversation: %d %s %v", code, body, err)
		}
		for _, c := range convs[:2] {
			if cv := s.conv(carol, c); cv == nil || cv.SandboxStatus != "RUNNING" {
				t.Fatalf("remaining conversation %s: %+v", c, cv)
			}
		}
	})

	t.Run("pausing a shared sandbox pauses every conversation", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.do("POST", "/api/v1/sandboxes/"+sbID+"/pause", nil, carol))
		for _, c := range convs[:2] {
			if cv := s.conv(carol, c); cv.SandboxStatus != "PAUSED" || cv.ConversationURL != nil || cv.SessionAPIKey != nil {
				t.Fatalf("conversation %s on the paused shared sandbox: %+v", c, cv)
			}
		}
		if p := lcPid(t, dataDir, sbID); p != 0 {
			t.Fatalf("the shared sandbox's agent server (pid %d) survived the pause", p)
		}
	})

	t.Run("deleting a shared sandbox makes every conversation MISSING", func(t *testing.T) {
		s := lcBind(s, t)
		counts := map[string]int{}
		for _, c := range convs[:2] {
			counts[c] = lcEventCount(s, carol, c)
		}
		lcSuccess(s, s.do("DELETE", "/api/v1/sandboxes/"+sbID, nil, carol))
		if sb := s.sandbox(carol, sbID); sb == nil || sb.Status != "MISSING" {
			t.Fatalf("deleted sandbox reads %+v", sb)
		}
		for _, c := range convs[:2] {
			cv := s.conv(carol, c)
			if cv == nil || cv.SandboxStatus != "MISSING" || cv.ConversationURL != nil {
				t.Fatalf("conversation %s on a deleted sandbox: %+v", c, cv)
			}
			if evs := lcEvents(s, carol, c); len(evs) == 0 || len(evs) != counts[c] {
				t.Fatalf("transcript of %s after the sandbox delete: %d events, %d before", c, len(evs), counts[c])
			}
		}
		if _, err := os.Stat(lcSandboxDir(dataDir, sbID)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the deleted sandbox's directory is still there: %v", err)
		}
		// Deleting it again is harmless.
		lcSuccess(s, s.do("DELETE", "/api/v1/sandboxes/"+sbID, nil, carol))
	})

	t.Run("deleting the last conversation of a deleted sandbox removes it", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.do("DELETE", "/api/v1/app-conversations/"+convs[0], nil, carol))
		if sb := s.sandbox(carol, sbID); sb == nil || sb.Conversations != 1 {
			t.Fatalf("sandbox with one conversation left: %+v", sb)
		}
		lcSuccess(s, s.do("DELETE", "/api/v1/app-conversations/"+convs[1], nil, carol))
		if sb := s.sandbox(carol, sbID); sb != nil {
			t.Fatalf("sandbox without conversations still reads %+v", sb)
		}
	})

	t.Run("deleting a sandbox's only conversation deletes the sandbox", func(t *testing.T) {
		s := lcBind(s, t)
		pid := lcPid(t, dataDir, aloneSB)
		if sb := s.sandbox(apiKey, aloneSB); sb == nil || sb.Status != "RUNNING" || sb.Conversations != 1 {
			t.Fatalf("sandbox of a lone conversation: %+v", sb)
		}
		lcSuccess(s, s.admin("DELETE", "/api/v1/app-conversations/"+alone, nil))
		got, err := s.api(apiKey).GetSandboxes(t.Context(), aloneSB)
		s.ok(err, 200, "get the sandbox")
		if len(got) != 1 || got[0] != nil {
			t.Fatalf("the sandbox of a deleted last conversation still reads %s", mustLCJSON(got))
		}
		if lcAlive(pid) {
			t.Fatalf("its agent server (pid %d) still runs", pid)
		}
		if _, err := os.Stat(lcSandboxDir(dataDir, aloneSB)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("its directory is still there: %v", err)
		}
	})
}

func mustLCJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Rules 8 and 9: a MISSING or ERROR sandbox makes its conversations
// read-only: messages, resume and workspace access are refused (410, 503)
// while the transcript stays readable.
func TestLifecycleReadOnly(t *testing.T) {
	t.Parallel()
	s, _, dataDir := lcServe(t, []llmtest.Reply{lcSay("tag-missing"), lcSay("tag-error")})
	missingTask := lcSubmit(s, apiKey, "tag-missing")
	errorTask := lcSubmit(s, apiKey, "tag-error")
	missing, missingSB := lcReady(s, apiKey, missingTask)
	broken, brokenSB := lcReady(s, apiKey, errorTask)
	lcWaitFinished(s, apiKey, missing)
	lcWaitFinished(s, apiKey, broken)
	lcSettled(s, apiKey, missing)
	lcSettled(s, apiKey, broken)

	send := func(s *acsServe, id string) resp {
		return s.admin("POST", "/api/v1/app-conversations/"+id+"/send-message",
			map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": "are you there?"}}, "run": true})
	}
	// readsWork checks that a read-only conversation's transcript is served.
	readsWork := func(s *acsServe, id, status string) {
		s.t.Helper()
		page, err := s.api(apiKey).SearchConversations(s.t.Context(), nil)
		s.ok(err, 200, "search conversations")
		found := false
		for _, c := range page.Items {
			if c.ID == id {
				found = true
				if c.SandboxStatus != status || c.ExecutionStatus != nil || c.ConversationURL != nil {
					s.t.Fatalf("search lists %+v", c)
				}
			}
		}
		if !found {
			s.t.Fatalf("search does not list %s", id)
		}
		if c := s.conv(apiKey, id); c == nil || c.SandboxStatus != status {
			s.t.Fatalf("get by id: %+v", c)
		}
		evs := lcEvents(s, apiKey, id)
		n := lcEventCount(s, apiKey, id)
		if n == 0 || len(evs) != n {
			s.t.Fatalf("events search %d, count %d", len(evs), n)
		}
		zipped, err := s.api(apiKey).DownloadConversation(s.t.Context(), id)
		s.ok(err, 200, "download "+id)
		zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
		if err != nil {
			s.t.Fatalf("download is not a zip: %v", err)
		}
		var names []string
		meta := false
		for _, f := range zr.File {
			if f.Name == "meta.json" {
				rc, _ := f.Open()
				var m convInfo
				err := json.NewDecoder(rc).Decode(&m)
				rc.Close()
				if err != nil || m.ID != id || m.SandboxStatus != status {
					s.t.Fatalf("meta.json: %+v %v", m, err)
				}
				meta = true
				continue
			}
			names = append(names, f.Name)
		}
		if !meta || len(names) != len(evs) {
			s.t.Fatalf("download holds meta.json=%v and %d events, want %d: %v", meta, len(names), len(evs), names)
		}
		sort.Strings(names)
		for i, ev := range evs {
			if want := fmt.Sprintf("event_%06d_%s.json", i, ev["id"]); names[i] != want {
				s.t.Fatalf("download entry %d is %s, want %s", i, names[i], want)
			}
		}
	}
	// workspaceRefused checks every workspace route answers code.
	workspaceRefused := func(s *acsServe, id string, code int) {
		s.t.Helper()
		for _, p := range []string{"/file?file_path=notes.txt", "/git/changes", "/git/diff?path=notes.txt", "/skills", "/hooks"} {
			lcDetail(s, s.admin("GET", "/api/v1/app-conversations/"+id+p, nil), code, "GET "+p)
		}
	}

	t.Run("MISSING is read-only", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.admin("DELETE", "/api/v1/sandboxes?sandbox_id="+missingSB, nil))
		if sb := s.sandbox(apiKey, missingSB); sb == nil || sb.Status != "MISSING" {
			t.Fatalf("deleted sandbox: %+v", sb)
		}
		if _, err := os.Stat(filepath.Join(lcSandboxDir(dataDir, missingSB), "workspace")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("workspace still on disk: %v", err)
		}
		lcDetail(s, send(s, missing), 410, "send-message")
		lcDetail(s, s.admin("POST", "/api/v1/sandboxes/"+missingSB+"/resume", nil), 410, "resume")
		workspaceRefused(s, missing, 410)
		readsWork(s, missing, "MISSING")
		if sb := s.sandbox(apiKey, missingSB); sb.Status != "MISSING" {
			t.Fatalf("sandbox after the refused calls: %+v", sb)
		}
	})

	t.Run("ERROR is read-only", func(t *testing.T) {
		s := lcBind(s, t)
		// A crash loop (one crash is restarted: TestAgentServerCrashIsRestarted).
		pid := rsCrashLoop(s, t, dataDir, brokenSB)
		sb := lcWaitSandbox(s, apiKey, brokenSB, "ERROR", 30*time.Second)
		if sb.SessionAPIKey != nil || len(sb.ExposedURLs) != 0 {
			t.Fatalf("ERROR sandbox: %+v", sb)
		}
		lcDetail(s, send(s, broken), 503, "send-message")
		lcDetail(s, s.admin("POST", "/api/v1/sandboxes/"+brokenSB+"/pause", nil), 503, "pause")
		workspaceRefused(s, broken, 503)
		readsWork(s, broken, "ERROR")
		if sb := s.sandbox(apiKey, brokenSB); sb.Status != "ERROR" {
			t.Fatalf("sandbox after the refused calls: %+v", sb)
		}
		if p := lcPid(t, dataDir, brokenSB); p != pid {
			t.Fatalf("a new agent server (pid %d) was started for an ERROR sandbox", p)
		}
	})
}

// Rule 9, the moment after a crash: the control plane has not looked at the
// sandbox since its agent server died, so its record still says RUNNING.
// The runtime restarts the agent server by itself (issue 11): the resume
// succeeds and starts no second one, and the sandbox comes back RUNNING.
func TestLifecycleResumeRightAfterCrash(t *testing.T) {
	t.Parallel()
	s, llm, dataDir := lcServe(t, []llmtest.Reply{lcSay("tag-crash")})
	conv, sbID := lcStart(s, apiKey, "tag-crash")
	lcWaitFinished(s, apiKey, conv)
	pid := rsKill(t, dataDir, sbID)
	lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+sbID+"/resume", nil))
	if sb := s.sandbox(apiKey, sbID); sb.Status == "ERROR" {
		t.Fatalf("resume of a crashed sandbox left it ERROR")
	}
	testwait.For(t, 60*time.Second, "the agent server to be restarted", func() bool {
		p := rsPid(dataDir, sbID)
		return p != 0 && p != pid && lcAlive(p) && s.sandbox(apiKey, sbID).Status == "RUNNING"
	})
	if !lcSend(s, apiKey, conv, "tag-crash again", true).Success {
		t.Fatal("send-message after the restart failed")
	}
	testwait.For(t, 60*time.Second, "the agent to run the new message", func() bool { return lcSawMessage(llm, "tag-crash again") })
}

// Rules 6 and 7: with the sandbox running, a conversation reads PAUSED while
// its agent waits for confirmation or backs off an LLM rate limit.
func TestLifecyclePausedWhileAgentWaits(t *testing.T) {
	t.Parallel()
	replies := []llmtest.Reply{
		{MatchText: "tag-confirm", ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo ran-without-confirmation > ran.txt", "security_risk": "LOW", "summary": "write ran.txt"}}}},
		{MatchText: "tag-rate-limit", Status: 429, RetryAfter: 1, Error: "Rate limit reached; retry later"},
		{MatchText: "tag-rate-limit", Text: "Done after the rate limit."},
	}
	s, llm, dataDir := lcServe(t, replies)

	t.Run("waiting for confirmation", func(t *testing.T) {
		t.Parallel()
		s := lcBind(s, t)
		dave := lcUser(s, "dave")
		_, err := s.api(dave).UpdateSettings(t.Context(), &v1wire.SettingsRequest{ConfirmationPolicy: client.Set(map[string]any{"kind": "AlwaysConfirm"})})
		s.ok(err, 200, "update settings")
		conv, sbID := lcStart(s, dave, "tag-confirm: run a command")
		c := s.waitConv(dave, conv, "waiting_for_confirmation", func(c *convInfo) bool { return lcExec(c) == "waiting_for_confirmation" })
		sb := s.sandbox(dave, sbID)
		if c.SandboxStatus != "PAUSED" || sb.Status != "RUNNING" {
			t.Fatalf("waiting for confirmation: conversation reads %s, sandbox %s (want PAUSED, RUNNING)", c.SandboxStatus, sb.Status)
		}
		key := *sb.SessionAPIKey
		// Workspace reads work.
		if err := os.WriteFile(filepath.Join(lcSandboxDir(dataDir, sbID), "workspace", "waiting.txt"), []byte("still here\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if content := lcRead(s, dave, conv, "waiting.txt"); content != "still here\n" {
			t.Fatalf("file read while waiting for confirmation: %q", content)
		}
		// Messages reach the agent (run=false keeps the pending action pending).
		if !lcSend(s, dave, conv, "note-while-waiting", false).Success {
			t.Fatal("send-message while waiting for confirmation failed")
		}
		code, body, err := lcAgent(sb.ExposedURLs[0].URL, key, "/api/conversations/"+conv+"/events/search?kind=MessageEvent&body=note-while-waiting")
		if err != nil || code != 200 || !strings.Contains(string(body), "note-while-waiting") {
			t.Fatalf("the agent server does not have the message: %d %s %v", code, body, err)
		}
		c = s.conv(dave, conv)
		sb = s.sandbox(dave, sbID)
		if lcExec(c) != "waiting_for_confirmation" || c.SandboxStatus != "PAUSED" || sb.Status != "RUNNING" || *sb.SessionAPIKey != key {
			t.Fatalf("after the message and the read: conversation %s/%s, sandbox %+v", lcExec(c), c.SandboxStatus, sb)
		}
		if _, err := os.Stat(filepath.Join(lcSandboxDir(dataDir, sbID), "workspace", "ran.txt")); err == nil {
			t.Fatal("the action ran without confirmation")
		}
	})

	t.Run("LLM rate limit", func(t *testing.T) {
		t.Parallel()
		s := lcBind(s, t)
		conv, sbID := lcStart(s, apiKey, "tag-rate-limit")
		c := s.waitConv(apiKey, conv, "PAUSED for the rate limit", func(c *convInfo) bool { return c.SandboxStatus == "PAUSED" })
		if sb := s.sandbox(apiKey, sbID); sb.Status != "RUNNING" {
			t.Fatalf("sandbox while rate limited: %+v", sb)
		}
		if lcExec(c) == "finished" {
			t.Fatalf("rate limited conversation: %+v", c)
		}
		c = s.waitConv(apiKey, conv, "finished after the rate limit", func(c *convInfo) bool { return lcExec(c) == "finished" })
		if c.SandboxStatus != "RUNNING" {
			t.Fatalf("after the rate limit: %+v", c)
		}
		n := 0
		for _, r := range llm.Requests() {
			if strings.Contains(r.LastUserText(), "tag-rate-limit") {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("the LLM saw %d requests for the conversation, want 2 (429, then success)", n)
		}
		lcSettled(s, apiKey, conv)
		marked := false
		for _, ev := range lcEvents(s, apiKey, conv) {
			if ev["kind"] == "ConversationStateUpdateEvent" && ev["key"] == "agent_state" {
				if v, ok := ev["value"].(map[string]any); ok && v["llm_rate_limited_until"] != nil {
					marked = true
				}
			}
		}
		if !marked {
			t.Fatal("no agent_state update carried llm_rate_limited_until")
		}
	})
}

// Rule 10: an idle sandbox is paused, then cleaned up: its workspace is
// archived internally and deleted, and the transcript stays.
func TestLifecycleIdleTimeout(t *testing.T) {
	t.Parallel()
	s, _, dataDir := lcServe(t, lcWriteThenFinish("tag-idle", "idle/work.txt", "archived content\n"),
		"ACS_IDLE_PAUSE_AFTER=1s", "ACS_IDLE_CLEANUP_AFTER=3s", "ACS_RECONCILE_INTERVAL=200ms")
	conv, sbID := lcStart(s, apiKey, "tag-idle: write idle/work.txt")
	lcWaitFinished(s, apiKey, conv)
	finished := time.Now()
	events := lcSettled(s, apiKey, conv)

	lcWaitSandbox(s, apiKey, sbID, "PAUSED", 15*time.Second)
	paused := time.Now()
	if c := s.conv(apiKey, conv); c.SandboxStatus != "PAUSED" {
		t.Fatalf("conversation of an idle-paused sandbox: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(lcSandboxDir(dataDir, sbID), "workspace", "idle", "work.txt")); err != nil {
		t.Fatalf("the workspace of a paused sandbox: %v", err)
	}
	lcWaitSandbox(s, apiKey, sbID, "MISSING", 20*time.Second)
	missing := time.Now()
	if d := missing.Sub(paused); d < 2*time.Second {
		t.Fatalf("cleaned up %s after the pause, want about 3s", d)
	}
	t.Logf("finished → paused %s, paused → missing %s", paused.Sub(finished).Round(10*time.Millisecond), missing.Sub(paused).Round(10*time.Millisecond))

	if c := s.conv(apiKey, conv); c.SandboxStatus != "MISSING" {
		t.Fatalf("conversation of a cleaned-up sandbox: %+v", c)
	}
	if evs := lcEvents(s, apiKey, conv); len(evs) == 0 || len(evs) != events {
		t.Fatalf("transcript after cleanup: %d events, %d before", len(evs), events)
	}
	// The sandbox may read MISSING while the cleanup is still removing its
	// directory (the runtime reports MISSING once its metadata is gone).
	testwait.For(t, 5*time.Second, "the workspace to be removed", func() bool {
		_, err := os.Stat(filepath.Join(lcSandboxDir(dataDir, sbID), "workspace"))
		return errors.Is(err, os.ErrNotExist)
	})
	archives, _ := filepath.Glob(filepath.Join(dataDir, "blobs", "archives", sbID, "*.tar.gz"))
	if len(archives) != 1 {
		t.Fatalf("archives of %s: %v", sbID, archives)
	}
	f, err := os.Open(archives[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("archive is not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read archive: %v", err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
	if files["idle/work.txt"] != "archived content\n" {
		t.Fatalf("archive entries: %v", files)
	}
	// The archive is internal: nothing in the API serves it, and the
	// workspace stays refused.
	lcDetail(s, s.admin("GET", "/api/v1/app-conversations/"+conv+"/file?file_path=idle/work.txt", nil), 410, "file after cleanup")
}

// Rule 11: a per-user cap on running sandboxes refuses new ones (429) and
// never pauses a running sandbox to make room.
func TestLifecycleRunningCap(t *testing.T) {
	t.Parallel()
	s, _, dataDir := lcServe(t, []llmtest.Reply{lcSay("tag-cap")}, "ACS_MAX_RUNNING_SANDBOXES=1")
	first, firstSB := lcStart(s, apiKey, "tag-cap first")
	lcWaitFinished(s, apiKey, first)
	pid := lcPid(t, dataDir, firstSB)
	stillRunning := func(s *acsServe) {
		s.t.Helper()
		if sb := s.sandbox(apiKey, firstSB); sb.Status != "RUNNING" || !lcAlive(pid) || lcPid(s.t, dataDir, firstSB) != pid {
			s.t.Fatalf("the first sandbox was disturbed: %+v (pid %d alive %v)", sb, pid, lcAlive(pid))
		}
	}
	capped := func(s *acsServe, r resp, what string) {
		s.t.Helper()
		d := lcDetail(s, r, 429, what)
		if r.header.Get("Retry-After") == "" {
			s.t.Fatalf("%s: 429 without Retry-After", what)
		}
		if !strings.Contains(strings.ToLower(d), "running sandboxes") {
			s.t.Fatalf("%s: unclear detail %q", what, d)
		}
	}

	t.Run("at the cap new sandboxes are refused", func(t *testing.T) {
		s := lcBind(s, t)
		capped(s, s.admin("POST", "/api/v1/app-conversations", map[string]any{"initial_message": msg("tag-cap second")}), "second start")
		capped(s, s.admin("POST", "/api/v1/sandboxes", nil), "create sandbox")
		stillRunning(s)
		if sbs := lcSandboxes(s, apiKey); len(sbs) != 1 {
			t.Fatalf("refused starts left sandboxes behind: %+v", sbs)
		}
	})

	// One subtest: refusing a resume past the cap needs the state that
	// freeing a place leaves (the first sandbox paused, a second running).
	t.Run("a paused sandbox frees its place; resuming past the cap is refused", func(t *testing.T) {
		s := lcBind(s, t)
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+firstSB+"/pause", nil))
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+firstSB+"/resume", nil))
		lcWaitSandbox(s, apiKey, firstSB, "RUNNING", 20*time.Second)
		pid = lcPid(t, dataDir, firstSB)
		lcSuccess(s, s.admin("POST", "/api/v1/sandboxes/"+firstSB+"/pause", nil))
		secondSB := lcCreateSandbox(s, apiKey).ID
		lcWaitSandbox(s, apiKey, secondSB, "RUNNING", 20*time.Second)

		capped(s, s.admin("POST", "/api/v1/sandboxes/"+firstSB+"/resume", nil), "resume")
		capped(s, s.admin("POST", "/api/v1/app-conversations/"+first+"/send-message",
			map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": "tag-cap again"}}, "run": true}), "send-message (transparent resume)")
		if sb := s.sandbox(apiKey, firstSB); sb.Status != "PAUSED" {
			t.Fatalf("first sandbox after refused resumes: %+v", sb)
		}
		if sb := s.sandbox(apiKey, secondSB); sb.Status != "RUNNING" {
			t.Fatalf("the running sandbox was disturbed by a refused resume: %+v", sb)
		}
	})
}

// Rule 11 under concurrency: the cap holds when several sandboxes are
// requested at once.
func TestLifecycleRunningCapConcurrent(t *testing.T) {
	t.Parallel()
	s, _, _ := lcServe(t, nil, "ACS_MAX_RUNNING_SANDBOXES=1")
	const n = 4
	codes := make(chan int, n)
	for range n {
		go func() {
			req, _ := http.NewRequest("POST", s.url+"/api/v1/sandboxes", nil)
			req.Header.Set("Authorization", "Bearer "+apiKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			res.Body.Close()
			codes <- res.StatusCode
		}()
	}
	got := map[int]int{}
	for range n {
		got[<-codes]++
	}
	sbs := lcSandboxes(s, apiKey)
	if got[200] != 1 || got[429] != n-1 || len(sbs) != 1 {
		t.Fatalf("%d concurrent creates with a cap of 1: statuses %v, %d sandboxes", n, got, len(sbs))
	}
}

// Rule 11, issue 11: deleting a conversation deletes its sandbox, and the
// sandbox's place under the cap comes back at once (it was held for the
// claim's ten minutes, though no sandbox was left).
func TestLifecycleRunningCapDeletedConversationFreesSlot(t *testing.T) {
	t.Parallel()
	s, _, _ := lcServe(t, []llmtest.Reply{lcSay("tag-capdel")}, "ACS_MAX_RUNNING_SANDBOXES=1")
	noGrouping := acs.GroupingStrategy("NO_GROUPING")
	_, err := s.api(apiKey).UpdateSettings(t.Context(), &v1wire.SettingsRequest{SandboxGroupingStrategy: &noGrouping})
	s.ok(err, 200, "update settings")
	conv, _ := lcStart(s, apiKey, "tag-capdel first")
	lcDetail(s, s.admin("POST", "/api/v1/sandboxes", nil), 429, "create a sandbox at the cap")

	lcSuccess(s, s.admin("DELETE", "/api/v1/app-conversations/"+conv, nil))
	if sbs := lcSandboxes(s, apiKey); len(sbs) != 0 {
		t.Fatalf("the conversation's sandbox outlived it: %+v", sbs)
	}
	sb := lcCreateSandbox(s, apiKey)
	lcWaitSandbox(s, apiKey, sb.ID, "RUNNING", 20*time.Second)
	// The cap still holds: the new sandbox took the place.
	lcDetail(s, s.admin("POST", "/api/v1/sandboxes", nil), 429, "create a second sandbox")
}

// Rule 10's counterpart: a sandbox whose agent is working (here waiting for
// an LLM answer the test holds back) is not idle and must not be paused
// under it, however late the agent server's reports of the run arrive;
// once the agent has finished, the sandbox is idle and paused.
//
// The test asserts an order, not a speed: the answer is held until the
// reconciler has shown that it runs and pauses idle sandboxes (a canary
// sandbox created after the working one's last activity is paused), and
// every reading of the working sandbox until then must be RUNNING. After
// the answer, the sandbox may be paused only after the run's end is stored.
func TestLifecycleIdleSparesWorkingAgent(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	s, llm, _ := lcServe(t, []llmtest.Reply{{MatchText: "tag-slow", Respond: func(*llmtest.Request) llmtest.Reply {
		<-gate
		return llmtest.Reply{Text: "A slow answer."}
	}}}, "ACS_IDLE_PAUSE_AFTER=1s", "ACS_IDLE_CLEANUP_AFTER=0", "ACS_RECONCILE_INTERVAL=200ms")
	t.Cleanup(release) // before the LLM server closes
	conv, sbID := lcStart(s, apiKey, "tag-slow")
	running := func(what string) {
		t.Helper()
		if sb := s.sandbox(apiKey, sbID); sb.Status != "RUNNING" {
			t.Fatalf("the sandbox was %s while its agent was working (%s)\n%s", sb.Status, what, s.log)
		}
	}
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := llm.WaitRequests(wctx, 1); err != nil {
		t.Fatalf("the agent never called the LLM: %v", err)
	}
	running("calling the LLM")
	// Every event of the run so far is stored: the working sandbox's last
	// activity (a webhook) is behind us, and the agent sends nothing while
	// it waits for the answer.
	testwait.For(t, 60*time.Second, "the webhook to deliver every event", func() bool {
		running("waiting for its events")
		c := s.conv(apiKey, conv)
		base := strings.TrimSuffix(*c.ConversationURL, "/api/conversations/"+conv)
		code, body, err := lcAgent(base, *c.SessionAPIKey, "/api/conversations/"+conv+"/events/count")
		if err != nil || code != 200 {
			t.Fatalf("agent server events count: %d %s %v", code, body, err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(body)))
		return n > 0 && lcEventCount(s, apiKey, conv) == n
	})
	canary := lcCreateSandbox(s, apiKey)
	testwait.For(t, 60*time.Second, "the reconciler to pause an idle canary sandbox", func() bool {
		running("the canary waits to be paused")
		return s.sandbox(apiKey, canary.ID).Status == "PAUSED"
	})
	running("the canary was paused")

	release()
	lcWaitSandbox(s, apiKey, sbID, "PAUSED", 60*time.Second)
	answered := false
	for _, ev := range lcEvents(s, apiKey, conv) {
		if b, _ := json.Marshal(ev); ev["source"] == "agent" && strings.Contains(string(b), "A slow answer.") {
			answered = true
		}
	}
	if !answered {
		t.Fatalf("the sandbox was paused before the agent's answer was stored\n%s", s.log)
	}
}
