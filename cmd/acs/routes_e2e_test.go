package main_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/gittest"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
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
	admin := s.api(apiKey)
	for i := 1; i <= 10; i++ {
		r, err := admin.AddPendingMessage(t.Context(), "task-"+tk.ID, pending(fmt.Sprintf("queued %02d", i)))
		s.ok(err, 201, fmt.Sprintf("message %d", i))
		if !r.Queued || r.Position != i {
			t.Fatalf("message %d: %+v", i, r)
		}
	}
	// The 11th: 429 with Retry-After (which the client decodes into the
	// error's RetryAfter).
	_, err = admin.AddPendingMessage(t.Context(), "task-"+tk.ID, pending("too many"))
	if client.StatusOf(err) != 429 || acs.AsError(err) == nil || acs.AsError(err).RetryAfter <= 0 {
		t.Fatalf("11th message: %v", err)
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
	direct, err := admin.AddPendingMessage(t.Context(), *done.AppConversationID, pending("direct"))
	s.ok(err, 201, "a message for the ready conversation")
	if direct.Queued {
		t.Fatal("a message for a ready conversation is delivered, not queued")
	}
}

// pending is a pending user message of one text.
func pending(text string) *v1wire.PendingMessageRequest {
	return &v1wire.PendingMessageRequest{Role: "user", Content: []events.Content{events.TextItem(text)}}
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
	asBob := s.api(bob)
	me, err := asBob.Me(t.Context())
	s.ok(err, 200, "users/me")
	if me.Name != "bob" || me.Admin {
		t.Fatalf("me: %+v", me)
	}
	if _, err := asBob.CreateUser(t.Context(), "mallory"); client.StatusOf(err) != 403 {
		t.Fatalf("a user creating users: %v", err)
	}
	k, err := asBob.CreateKey(t.Context(), "ci")
	s.ok(err, 201, "create key")
	if !strings.HasPrefix(k.Key, "acs_") || k.Name != "ci" {
		t.Fatalf("new key %+v", k)
	}
	if keys, err := s.api(k.Key).ListKeys(t.Context()); err != nil || len(keys) == 0 || keys[0].Prefix == "" {
		t.Fatalf("key listing: %+v %v", keys, err)
	}
	// Raw on purpose: no key value may appear anywhere in the listing's
	// bytes, which a typed decode (v1wire.Key has no value) would hide.
	r := s.do("GET", "/api/v1/keys", nil, k.Key).want(200)
	if strings.Contains(string(r.body), k.Key) || !strings.Contains(string(r.body), `"prefix"`) {
		t.Fatalf("key listing shows values or lacks prefixes: %s", r.body)
	}
	// Bob's conversation is invisible to the admin.
	tk := s.mustStart(bob, map[string]any{})
	if c := s.conv(apiKey, *tk.AppConversationID); c != nil {
		t.Fatal("another user's conversation is visible")
	}
	admin := s.api(apiKey)
	if _, err := admin.SearchEvents(t.Context(), *tk.AppConversationID, nil); client.StatusOf(err) != 404 {
		t.Fatalf("another user's events: %v", err)
	}
	if err := admin.PauseSandbox(t.Context(), *tk.SandboxID); client.StatusOf(err) != 404 {
		t.Fatalf("another user's sandbox: %v", err)
	}
	// Revocation is immediate.
	s.ok(asBob.DeleteKey(t.Context(), k.ID), 200, "revoke the key")
	if _, err := s.api(k.Key).Me(t.Context()); client.StatusOf(err) != 401 {
		t.Fatalf("a revoked key: %v", err)
	}
	if err := asBob.DeleteKey(t.Context(), k.ID); client.StatusOf(err) != 404 {
		t.Fatalf("revoking twice: %v", err)
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
	admin := s.api(apiKey)
	st, err := admin.GetSettings(t.Context())
	s.ok(err, 200, "get settings")
	if st.SandboxGroupingStrategy != "NO_GROUPING" || st.MaxConversationsPerSandbox != 20 || st.LLMAPIKeySet {
		t.Fatalf("defaults %+v", st)
	}
	// Raw on purpose: the key must appear nowhere in the answer's bytes,
	// which a typed decode (v1wire.Settings has no key) would hide.
	r := s.admin("POST", "/api/v1/settings", map[string]any{"llm_model": "openai/my-model", "llm_base_url": mine.URL, "llm_api_key": "sk-mine-1234"}).into(&st)
	if !st.LLMAPIKeySet || strings.Contains(string(r.body), "sk-mine-1234") {
		t.Fatalf("settings answer %s", r.body)
	}
	tk := s.mustStart(apiKey, map[string]any{"initial_message": msg("hi")})
	s.waitConv(apiKey, *tk.AppConversationID, "finished", func(c *convInfo) bool { return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished" })
	if len(mine.Requests()) == 0 || len(installation.Requests()) != 0 || mine.Requests()[0].Model != "my-model" {
		t.Fatalf("the agent called the installation's LLM (%d) instead of the user's (%d)", len(installation.Requests()), len(mine.Requests()))
	}
	// Secrets CRUD never shows values.
	desc, value := "registry", "npm-secret-654"
	_, err = admin.CreateSecret(t.Context(), &v1wire.CreateSecretRequest{Name: "NPM_TOKEN", Value: "npm-secret-987", Description: &desc})
	s.ok(err, 201, "create a secret")
	if _, err := admin.CreateSecret(t.Context(), &v1wire.CreateSecretRequest{Name: "NPM_TOKEN", Value: "x-other-value"}); client.StatusOf(err) != 409 {
		t.Fatalf("creating a secret twice: %v", err)
	}
	_, err = admin.UpdateSecret(t.Context(), "NPM_TOKEN", &v1wire.UpdateSecretRequest{Value: &value})
	s.ok(err, 200, "update a secret")
	// Raw on purpose: no value may appear anywhere in the bytes, which a
	// typed decode (v1wire.Secret has no value) would hide.
	for _, p := range []string{"/api/v1/secrets", "/api/v1/secrets/NPM_TOKEN"} {
		if r := s.admin("GET", p, nil).want(200); strings.Contains(string(r.body), "npm-secret") {
			t.Fatalf("%s shows the value: %s", p, r.body)
		}
	}
	s.ok(admin.DeleteSecret(t.Context(), "NPM_TOKEN"), 200, "delete a secret")
	if _, err := admin.GetSecret(t.Context(), "NPM_TOKEN"); client.StatusOf(err) != 404 {
		t.Fatalf("a deleted secret: %v", err)
	}
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

	admin := s.api(apiKey)
	ctx := t.Context()

	// stream-start: a JSON array of the task at each status, ending READY
	// (the client reads the array as it streams, and fails on anything else).
	var streamed []taskInfo
	for st, err := range admin.StreamStart(ctx, startBody(t, `{"selected_repository":"acme/app","title":"Edit main","initial_message":{"role":"user","content":[{"type":"text","text":"edit main.go"}],"run":true}}`)) {
		if err != nil {
			t.Fatalf("stream-start: %v", err)
		}
		streamed = append(streamed, st)
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
	tasks, err := admin.SearchStartTasks(ctx, client.Filter{"conversation_id__eq": {id}})
	s.ok(err, 200, "start-task search")
	if len(tasks.Items) != 1 || tasks.Items[0].ID != tk.ID {
		t.Fatalf("start-task search: %+v", tasks.Items)
	}
	n, err := admin.CountStartTasks(ctx, nil)
	s.ok(err, 200, "start-task count")
	if n != 2 {
		t.Fatalf("start-task count %d", n)
	}

	// Search and count with filters; PATCH.
	page := func(name, value string) []convInfo {
		p, err := admin.SearchConversations(ctx, client.Filter{name: {value}})
		s.ok(err, 200, "search "+name)
		return p.Items
	}
	if got := page("title__contains", "EDIT"); len(got) != 1 || got[0].ID != id {
		t.Fatalf("title filter: %+v", got)
	}
	if got := page("sandbox_id__eq", *other.SandboxID); len(got) != 1 || got[0].ID != *other.AppConversationID {
		t.Fatalf("sandbox filter: %+v", got)
	}
	if got := page("created_at__gte", "2999-01-01T00:00:00Z"); len(got) != 0 {
		t.Fatalf("date filter: %+v", got)
	}
	if got := page("limit", "1"); len(got) != 1 {
		t.Fatalf("limit: %d", len(got))
	}
	n, err = admin.CountConversations(ctx, client.Filter{"title__contains": {"else"}})
	s.ok(err, 200, "count")
	if n != 1 {
		t.Fatalf("count with filter %d", n)
	}
	patched, err := admin.UpdateConversation(ctx, id, &v1wire.UpdateRequest{Title: client.Set("Renamed"), Public: client.Set(true), SelectedBranch: client.Set("dev")})
	s.ok(err, 200, "PATCH")
	if deref(patched.Title) != "Renamed" || patched.Public == nil || !*patched.Public || deref(patched.SelectedBranch) != "dev" {
		t.Fatalf("patched %+v", patched)
	}

	// Review endpoints read the workspace through the agent server.
	plan, err := admin.ReadFile(ctx, id, ".agents_tmp/PLAN.md")
	s.ok(err, 200, "read PLAN.md")
	if plan != "# The plan\n" {
		t.Fatalf("PLAN.md: %q", plan)
	}
	plan, err = admin.ReadFile(ctx, id, "docs/notes.txt")
	s.ok(err, 200, "read a file")
	if plan != "notes\n" {
		t.Fatalf("file: %q", plan)
	}
	// Raw on purpose: the exact bytes of the error body.
	if r := s.admin("GET", "/api/v1/app-conversations/"+id+"/file?file_path=nope.txt", nil); r.status != 404 ||
		string(r.body) != `{"detail":"File not found: app/nope.txt"}` {
		t.Fatalf("missing file: %d %s", r.status, r.body)
	}
	if _, err := admin.ReadFile(ctx, id, "/etc/passwd"); client.StatusOf(err) != 422 {
		t.Fatalf("a path outside the workspace: %v", err)
	}
	changes, err := admin.GitChanges(ctx, id, "")
	s.ok(err, 200, "git changes")
	if !slices.ContainsFunc(changes, func(c agentwire.GitChange) bool { return strings.Contains(c.Path, "main.go") }) {
		t.Fatalf("git changes %+v", changes)
	}
	diff, err := admin.GitDiff(ctx, id, "main.go")
	s.ok(err, 200, "git diff")
	if diff.Modified == nil || diff.Original == nil || !strings.Contains(*diff.Modified, "// edited") || strings.Contains(*diff.Original, "edited") {
		t.Fatalf("git diff %+v", diff)
	}
	skills, err := admin.Skills(ctx, id)
	s.ok(err, 200, "skills")
	if !slices.ContainsFunc(skills, func(sk v1wire.Skill) bool { return sk.Name == "review" }) ||
		!slices.ContainsFunc(skills, func(sk v1wire.Skill) bool { return sk.Type == "knowledge" }) {
		t.Fatalf("skills %+v", skills)
	}
	hooks, err := admin.Hooks(ctx, id)
	s.ok(err, 200, "hooks")
	if len(hooks) != 1 || hooks[0].EventType != "pre_tool_use" || !strings.Contains(string(hooks[0].Matchers), "terminal") {
		t.Fatalf("hooks %+v", hooks)
	}

	// Download: every stored event plus meta.json.
	count, err := admin.CountEvents(ctx, id, nil)
	s.ok(err, 200, "count events")
	// Raw on purpose: the answer's headers are what is checked.
	r := s.admin("GET", "/api/v1/app-conversations/"+id+"/download", nil).want(200)
	if r.header.Get("Content-Type") != "application/zip" || !strings.Contains(r.header.Get("Content-Disposition"), "conversation_"+id+".zip") {
		t.Fatalf("download headers %v", r.header)
	}
	zr, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatal(err)
	}
	var evCount int
	var meta bool
	for _, f := range zr.File {
		switch {
		case f.Name == "meta.json":
			meta = true
		case strings.HasPrefix(f.Name, "event_000000_"):
			evCount++
		case strings.HasPrefix(f.Name, "event_"):
			evCount++
		}
	}
	if !meta || evCount != count || count == 0 {
		t.Fatalf("zip holds %d events (want %d) and meta %v", evCount, count, meta)
	}

	// Events by id, in request order, null for unknown ids.
	evPage, err := admin.SearchEvents(ctx, id, client.Filter{"limit": {"2"}, "sort_order": {"TIMESTAMP_DESC"}})
	s.ok(err, 200, "event search")
	last := evPage.Items[0].EventBase().ID
	byID, err := admin.GetEvents(ctx, id, "00000000-0000-0000-0000-000000000000", last)
	s.ok(err, 200, "events by id")
	if len(byID) != 2 || byID[0] != nil || byID[1] == nil || byID[1].EventBase().ID != last {
		t.Fatalf("events by id: %v", byID)
	}

	// Sandbox specs by id: the default, and null for an unknown id.
	specs, err := admin.GetSandboxSpecs(ctx, "acs-local", "nope")
	s.ok(err, 200, "sandbox specs")
	if len(specs) != 2 || specs[0] == nil || specs[0].ID != "acs-local" || specs[1] != nil {
		t.Fatalf("specs %+v", specs)
	}
}
