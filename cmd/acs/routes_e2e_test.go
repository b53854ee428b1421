package main_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/gittest"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// TestPendingMessages queues messages while a conversation starts (its setup
// script holds the start): they are delivered in order at READY, and an
// 11th is refused with 429.
func TestPendingMessages(t *testing.T) {
	git := gittest.New(t)
	git.Create(t, "acme", "slow", gittest.Repo{Files: map[string]string{".openhands/setup.sh": "sleep 2\n"}})
	llm := llmtest.New(llmtest.Reply{Repeat: true, Text: "noted"})
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL, "ACS_GIT_HOST="+git.URL)
	tk, err := s.api(apiKey).StartConversation(t.Context(), startBody(t, map[string]any{"selected_repository": "acme/slow", "initial_message": msg("message 0")}))
	s.ok(err, 200, "start")
	for i := 1; i <= 10; i++ {
		var r struct {
			ID       string `json:"id"`
			Queued   bool   `json:"queued"`
			Position int    `json:"position"`
		}
		s.admin("POST", "/api/v1/conversations/task-"+tk.ID+"/pending-messages",
			map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": fmt.Sprintf("queued %02d", i)}}}).want(201).into(&r)
		if !r.Queued || r.Position != i {
			t.Fatalf("message %d: %+v", i, r)
		}
	}
	r := s.admin("POST", "/api/v1/conversations/task-"+tk.ID+"/pending-messages", map[string]any{"content": []map[string]any{{"type": "text", "text": "too many"}}})
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("11th message: %d %s", r.status, r.body)
	}
	done := s.waitTask(apiKey, tk.ID)
	if done.Status != "READY" {
		t.Fatalf("start: %s %s", done.Status, deref(done.Detail))
	}
	// The agent saw the initial message, then the ten queued ones in order:
	// the last LLM request holds the whole history.
	var seen []string
	testwait.Until(30*time.Second, func() bool {
		reqs := llm.Requests()
		if len(reqs) == 0 {
			return false
		}
		seen = nil
		for _, m := range reqs[len(reqs)-1].Messages {
			if m.Role == "user" { // consecutive user messages reach the LLM joined
				seen = append(seen, strings.Split(m.Text(), "\n")...)
			}
		}
		return contains(seen, "queued 10")
	})
	want := []string{"message 0"}
	for i := 1; i <= 10; i++ {
		want = append(want, fmt.Sprintf("queued %02d", i))
	}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("messages reached the agent as %v", seen)
	}
	// After READY, a message for the running conversation goes straight in.
	var direct struct {
		Queued bool `json:"queued"`
	}
	s.admin("POST", "/api/v1/conversations/"+*done.AppConversationID+"/pending-messages", map[string]any{"content": []map[string]any{{"type": "text", "text": "direct"}}}).want(201).into(&direct)
	if direct.Queued {
		t.Fatal("a message for a ready conversation is delivered, not queued")
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestUsersAndKeys: users made by the admin, keys shown once and listed
// without values, revocation at once, and isolation between users.
func TestUsersAndKeys(t *testing.T) {
	llm := llmtest.New(llmtest.Reply{Repeat: true, Text: "ok"})
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL)
	bob := s.newUser("bob")
	var me struct {
		Name  string `json:"name"`
		Admin bool   `json:"admin"`
	}
	s.do("GET", "/api/v1/users/me", nil, bob).into(&me)
	if me.Name != "bob" || me.Admin {
		t.Fatalf("me: %+v", me)
	}
	if r := s.do("POST", "/api/v1/users", map[string]any{"name": "mallory"}, bob); r.status != 403 {
		t.Fatalf("a user creating users: %d", r.status)
	}
	var k struct {
		ID, Name, Key string
	}
	s.do("POST", "/api/v1/keys", map[string]any{"name": "ci"}, bob).want(201).into(&k)
	if !strings.HasPrefix(k.Key, "acs_") || k.Name != "ci" {
		t.Fatalf("new key %+v", k)
	}
	r := s.do("GET", "/api/v1/keys", nil, k.Key).want(200)
	if strings.Contains(string(r.body), k.Key) || !strings.Contains(string(r.body), `"prefix"`) {
		t.Fatalf("key listing shows values or lacks prefixes: %s", r.body)
	}
	// Bob's conversation is invisible to the admin.
	tk := s.mustStart(bob, map[string]any{})
	if c := s.conv(apiKey, *tk.AppConversationID); c != nil {
		t.Fatal("another user's conversation is visible")
	}
	if r := s.admin("GET", "/api/v1/conversation/"+*tk.AppConversationID+"/events/search", nil); r.status != 404 {
		t.Fatalf("another user's events: %d", r.status)
	}
	if r := s.admin("POST", "/api/v1/sandboxes/"+*tk.SandboxID+"/pause", nil); r.status != 404 {
		t.Fatalf("another user's sandbox: %d", r.status)
	}
	// Revocation is immediate.
	s.do("DELETE", "/api/v1/keys/"+k.ID, nil, bob).want(200)
	if r := s.do("GET", "/api/v1/users/me", nil, k.Key); r.status != 401 {
		t.Fatalf("a revoked key: %d", r.status)
	}
	if r := s.do("DELETE", "/api/v1/keys/"+k.ID, nil, bob); r.status != 404 {
		t.Fatalf("revoking twice: %d", r.status)
	}
}

// TestSettingsReachTheAgent: the user's model, base URL and key are what
// the agent calls, the key is never returned, and stored secrets are
// listed without values.
func TestSettingsReachTheAgent(t *testing.T) {
	installation := llmtest.New(llmtest.Reply{Repeat: true, Text: "from the installation's LLM"})
	defer installation.Close()
	mine := llmtest.New(llmtest.Reply{Repeat: true, Text: "from my LLM"})
	defer mine.Close()
	s := startServe(t, t.TempDir(), installation.URL)
	var st map[string]any
	s.admin("GET", "/api/v1/settings", nil).into(&st)
	if st["sandbox_grouping_strategy"] != "NO_GROUPING" || st["max_conversations_per_sandbox"] != float64(20) || st["llm_api_key_set"] != false {
		t.Fatalf("defaults %v", st)
	}
	s.admin("POST", "/api/v1/settings", map[string]any{"llm_model": "openai/my-model", "llm_base_url": mine.URL, "llm_api_key": "sk-mine-1234"}).into(&st)
	if st["llm_api_key_set"] != true || strings.Contains(string(mustJSON(st)), "sk-mine-1234") {
		t.Fatalf("settings answer %v", st)
	}
	tk := s.mustStart(apiKey, map[string]any{"initial_message": msg("hi")})
	s.waitConv(apiKey, *tk.AppConversationID, "finished", func(c *convInfo) bool { return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished" })
	if len(mine.Requests()) == 0 || len(installation.Requests()) != 0 || mine.Requests()[0].Model != "my-model" {
		t.Fatalf("the agent called the installation's LLM (%d) instead of the user's (%d)", len(installation.Requests()), len(mine.Requests()))
	}
	// Secrets CRUD never shows values.
	s.admin("POST", "/api/v1/secrets", map[string]any{"name": "NPM_TOKEN", "value": "npm-secret-987", "description": "registry"}).want(201)
	s.admin("POST", "/api/v1/secrets", map[string]any{"name": "NPM_TOKEN", "value": "x-other-value"}).want(409)
	s.admin("PUT", "/api/v1/secrets/NPM_TOKEN", map[string]any{"value": "npm-secret-654"}).want(200)
	for _, p := range []string{"/api/v1/secrets", "/api/v1/secrets/NPM_TOKEN"} {
		if r := s.admin("GET", p, nil).want(200); strings.Contains(string(r.body), "npm-secret") {
			t.Fatalf("%s shows the value: %s", p, r.body)
		}
	}
	s.admin("DELETE", "/api/v1/secrets/NPM_TOKEN", nil).want(200)
	s.admin("GET", "/api/v1/secrets/NPM_TOKEN", nil).want(404)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestConversationRoutes: search and count with filters, PATCH, the review
// endpoints (file, git changes and diff, skills, hooks), download,
// stream-start, start-task search and count, and sandbox specs by id.
func TestConversationRoutes(t *testing.T) {
	git := gittest.New(t)
	git.Create(t, "acme", "app", gittest.Repo{Files: map[string]string{
		"main.go":                      "package main\n",
		".openhands/skills/review.md":  "---\nname: review\ntriggers: [review]\n---\nReview carefully.\n",
		".openhands/hooks.json":        `{"pre_tool_use":[{"matcher":"terminal","hooks":[{"type":"command","command":"true"}]}]}`,
		".openhands/microagents/x.md":  "Always-on repository note.\n",
		".openhands/setup.sh":          "true\n",
		".agents_tmp/PLAN.md":          "# The plan\n",
		"docs/notes.txt":               "notes\n",
		".openhands/pre-commit.sh":     "true\n",
		".openhands/skills/unused.md":  "---\nname: unused\ntriggers: [zzz]\n---\nUnused.\n",
		".openhands/microagents/y.md":  "Second note.\n",
		".openhands/microagents/z.txt": "not a skill\n",
	}})
	llm := llmtest.New(
		llmtest.Reply{Respond: func(req *llmtest.Request) llmtest.Reply {
			wd := workDirRE.FindStringSubmatch(req.SystemText())
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
				"command": "str_replace", "path": wd[1] + "/main.go", "old_str": "package main", "new_str": "package main // edited"}}}}
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "edited"}}}},
		llmtest.Reply{Repeat: true, Text: "ok"},
	)
	defer llm.Close()
	s := startServe(t, t.TempDir(), llm.URL, "ACS_GIT_HOST="+git.URL)

	// stream-start: a JSON array of the task at each status, ending READY.
	req, _ := http.NewRequest("POST", s.url+"/api/v1/app-conversations/stream-start",
		strings.NewReader(`{"selected_repository":"acme/app","title":"Edit main","initial_message":{"role":"user","content":[{"type":"text","text":"edit main.go"}],"run":true}}`))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(bufio.NewReader(res.Body))
	res.Body.Close()
	var streamed []taskInfo
	if err := json.Unmarshal(body, &streamed); err != nil {
		t.Fatalf("stream-start is not a JSON array: %v\n%s", err, body)
	}
	var statuses []string
	for _, st := range streamed {
		statuses = append(statuses, st.Status)
	}
	// Every status of the flow, once each and in order (the worker runs
	// each step, with or without a repository, however many of them pass
	// between two polls of the stream).
	want := []string{"WORKING", "WAITING_FOR_SANDBOX", "PREPARING_REPOSITORY", "RUNNING_SETUP_SCRIPT",
		"SETTING_UP_GIT_HOOKS", "SETTING_UP_SKILLS", "STARTING_CONVERSATION", "READY"}
	if strings.Join(statuses, ",") != strings.Join(want, ",") {
		t.Fatalf("streamed statuses %v, want %v", statuses, want)
	}
	for i, st := range streamed {
		if len(st.Steps) != i+1 || st.Steps[i].Status != st.Status {
			t.Fatalf("streamed %s with steps %+v", st.Status, st.Steps)
		}
	}
	tk := streamed[len(streamed)-1]
	id := *tk.AppConversationID
	s.waitConv(apiKey, id, "finished", func(c *convInfo) bool { return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished" })
	other := s.mustStart(apiKey, map[string]any{"title": "Something else"})

	// Start tasks: search and count by conversation.
	var tasks struct {
		Items []taskInfo `json:"items"`
	}
	s.admin("GET", "/api/v1/app-conversations/start-tasks/search?conversation_id__eq="+id, nil).into(&tasks)
	if len(tasks.Items) != 1 || tasks.Items[0].ID != tk.ID {
		t.Fatalf("start-task search: %+v", tasks.Items)
	}
	var n int
	s.admin("GET", "/api/v1/app-conversations/start-tasks/count", nil).into(&n)
	if n != 2 {
		t.Fatalf("start-task count %d", n)
	}

	// Search and count with filters; PATCH.
	page := func(q string) []convInfo {
		var p struct {
			Items []convInfo `json:"items"`
		}
		s.admin("GET", "/api/v1/app-conversations/search"+q, nil).into(&p)
		return p.Items
	}
	if got := page("?title__contains=EDIT"); len(got) != 1 || got[0].ID != id {
		t.Fatalf("title filter: %+v", got)
	}
	if got := page("?sandbox_id__eq=" + *other.SandboxID); len(got) != 1 || got[0].ID != *other.AppConversationID {
		t.Fatalf("sandbox filter: %+v", got)
	}
	if got := page("?created_at__gte=2999-01-01T00:00:00Z"); len(got) != 0 {
		t.Fatalf("date filter: %+v", got)
	}
	if got := page("?limit=1"); len(got) != 1 {
		t.Fatalf("limit: %d", len(got))
	}
	s.admin("GET", "/api/v1/app-conversations/count?title__contains=else", nil).into(&n)
	if n != 1 {
		t.Fatalf("count with filter %d", n)
	}
	var patched convInfo
	s.admin("PATCH", "/api/v1/app-conversations/"+id, map[string]any{"title": "Renamed", "public": true, "selected_branch": "dev"}).into(&patched)
	if deref(patched.Title) != "Renamed" || patched.Public == nil || !*patched.Public || deref(patched.SelectedBranch) != "dev" {
		t.Fatalf("patched %+v", patched)
	}

	// Review endpoints read the workspace through the agent server.
	var plan string
	s.admin("GET", "/api/v1/app-conversations/"+id+"/file?file_path=.agents_tmp/PLAN.md", nil).into(&plan)
	if plan != "# The plan\n" {
		t.Fatalf("PLAN.md: %q", plan)
	}
	s.admin("GET", "/api/v1/app-conversations/"+id+"/file?file_path=docs/notes.txt", nil).into(&plan)
	if plan != "notes\n" {
		t.Fatalf("file: %q", plan)
	}
	if r := s.admin("GET", "/api/v1/app-conversations/"+id+"/file?file_path=nope.txt", nil); r.status != 404 ||
		string(r.body) != `{"detail":"File not found: app/nope.txt"}` {
		t.Fatalf("missing file: %d %s", r.status, r.body)
	}
	if r := s.admin("GET", "/api/v1/app-conversations/"+id+"/file?file_path=/etc/passwd", nil); r.status != 422 {
		t.Fatalf("a path outside the workspace: %d", r.status)
	}
	var changes []map[string]any
	s.admin("GET", "/api/v1/app-conversations/"+id+"/git/changes", nil).into(&changes)
	if !strings.Contains(string(mustJSON(changes)), "main.go") {
		t.Fatalf("git changes %v", changes)
	}
	var diff map[string]any
	s.admin("GET", "/api/v1/app-conversations/"+id+"/git/diff?path=main.go", nil).into(&diff)
	if !strings.Contains(diff["modified"].(string), "// edited") || strings.Contains(diff["original"].(string), "edited") {
		t.Fatalf("git diff %v", diff)
	}
	var skills struct {
		Skills []struct {
			Name, Type string
			Triggers   []string
		} `json:"skills"`
	}
	s.admin("GET", "/api/v1/app-conversations/"+id+"/skills", nil).into(&skills)
	if !strings.Contains(string(mustJSON(skills)), `"review"`) || !strings.Contains(string(mustJSON(skills)), `"knowledge"`) {
		t.Fatalf("skills %s", mustJSON(skills))
	}
	var hooks struct {
		Hooks []struct {
			EventType string          `json:"event_type"`
			Matchers  json.RawMessage `json:"matchers"`
		} `json:"hooks"`
	}
	s.admin("GET", "/api/v1/app-conversations/"+id+"/hooks", nil).into(&hooks)
	if len(hooks.Hooks) != 1 || hooks.Hooks[0].EventType != "pre_tool_use" || !strings.Contains(string(hooks.Hooks[0].Matchers), "terminal") {
		t.Fatalf("hooks %s", mustJSON(hooks))
	}

	// Download: every stored event plus meta.json.
	var count int
	s.admin("GET", "/api/v1/conversation/"+id+"/events/count", nil).into(&count)
	r := s.admin("GET", "/api/v1/app-conversations/"+id+"/download", nil).want(200)
	if r.header.Get("Content-Type") != "application/zip" || !strings.Contains(r.header.Get("Content-Disposition"), "conversation_"+id+".zip") {
		t.Fatalf("download headers %v", r.header)
	}
	zr, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatal(err)
	}
	var events int
	var meta bool
	for _, f := range zr.File {
		switch {
		case f.Name == "meta.json":
			meta = true
		case strings.HasPrefix(f.Name, "event_000000_"):
			events++
		case strings.HasPrefix(f.Name, "event_"):
			events++
		}
	}
	if !meta || events != count || count == 0 {
		t.Fatalf("zip holds %d events (want %d) and meta %v", events, count, meta)
	}

	// Events by id, in request order, null for unknown ids.
	var evPage struct {
		Items []map[string]any `json:"items"`
	}
	s.admin("GET", "/api/v1/conversation/"+id+"/events/search?limit=2&sort_order=TIMESTAMP_DESC", nil).into(&evPage)
	var byID []map[string]any
	last := evPage.Items[0]["id"].(string)
	s.admin("GET", "/api/v1/conversation/"+id+"/events?id=00000000-0000-0000-0000-000000000000&id="+last, nil).into(&byID)
	if len(byID) != 2 || byID[0] != nil || byID[1]["id"] != last {
		t.Fatalf("events by id: %v", byID)
	}

	// Sandbox specs by id: the default, and null for an unknown id.
	var specs []*struct {
		ID string `json:"id"`
	}
	s.admin("GET", "/api/v1/sandbox-specs?id=acs-local&id=nope", nil).into(&specs)
	if len(specs) != 2 || specs[0] == nil || specs[0].ID != "acs-local" || specs[1] != nil {
		t.Fatalf("specs %+v", specs)
	}
}
