package client_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestConversationThroughTheClient drives a conversation from start to
// delete through every conversation, event and sandbox method, and the
// agent server of its sandbox.
func TestConversationThroughTheClient(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t, 3*time.Minute)
	c := client.New(e.url, adminKey)

	me, err := c.Me(ctx)
	if err != nil || me.ID != "admin" || !me.Admin {
		t.Fatalf("Me: %+v %v", me, err)
	}
	specs, err := c.SearchSandboxSpecs(ctx, nil)
	if err != nil || len(specs.Items) != 2 || specs.Items[0].ID != "acs-local" {
		t.Fatalf("SearchSandboxSpecs: %+v %v", specs, err)
	}
	got, err := c.GetSandboxSpecs(ctx, "second", "nope")
	if err != nil || len(got) != 2 || got[0] == nil || got[0].ID != "second" || got[1] != nil {
		t.Fatalf("GetSandboxSpecs: %+v %v", got, err)
	}

	task, err := c.StartConversationAndWait(ctx, startRequest("Say hello"), 50*time.Millisecond)
	if err != nil {
		t.Fatalf("StartConversationAndWait: %v", err)
	}
	if task.Status != "READY" || task.AppConversationID == nil || task.SandboxID == nil || len(task.Steps) == 0 {
		t.Fatalf("READY task %+v", task)
	}
	id := *task.AppConversationID
	var conv v1wire.Conversation
	testwait.For(t, 60*time.Second, "the conversation to finish", func() bool {
		conv, err = c.GetConversation(ctx, id)
		return err == nil && conv.ExecutionStatus != nil && *conv.ExecutionStatus == "finished"
	})
	if conv.SandboxStatus != "RUNNING" || conv.SandboxID != *task.SandboxID {
		t.Fatalf("conversation %+v", conv)
	}
	tasks, err := c.SearchStartTasks(ctx, client.Filter{"conversation_id__eq": {id}})
	if err != nil || len(tasks.Items) != 1 || tasks.Items[0].ID != task.ID {
		t.Fatalf("SearchStartTasks: %+v %v", tasks, err)
	}
	if n, err := c.CountStartTasks(ctx, nil); err != nil || n != 1 {
		t.Fatalf("CountStartTasks: %d %v", n, err)
	}

	// A second message, then the events: paged two at a time, in order,
	// the same as one page and as the agent server's.
	if r, err := c.SendMessage(ctx, id, &v1wire.SendMessageRequest{Role: "user", Content: message("Again").Content, Run: true}); err != nil || !r.Success {
		t.Fatalf("SendMessage: %+v %v", r, err)
	}
	if r, err := c.AddPendingMessage(ctx, id, &v1wire.PendingMessageRequest{Role: "user", Content: message("Pending").Content}); err != nil || r.Queued {
		t.Fatalf("AddPendingMessage to a ready conversation: %+v %v", r, err)
	}
	agent, err := client.AgentOf(conv)
	if err != nil {
		t.Fatal(err)
	}
	var paged []events.Event
	testwait.For(t, 60*time.Second, "the three runs' events to reach the control plane", func() bool {
		paged = paged[:0]
		for ev, err := range c.Events(ctx, id, client.Filter{"limit": {"2"}}) {
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			paged = append(paged, ev)
		}
		n, err := agent.CountEvents(ctx, id, nil)
		return err == nil && len(paged) == n && countKind(paged, "MessageEvent") >= 6
	})
	one, err := c.SearchEvents(ctx, id, client.Filter{"limit": {"100"}})
	if err != nil || one.NextPageID != nil || len(one.Items) != len(paged) {
		t.Fatalf("SearchEvents: %d items, next %v, err %v; paged %d", len(one.Items), one.NextPageID, err, len(paged))
	}
	var fromAgent []events.Event
	for ev, err := range agent.Events(ctx, id, client.Filter{"limit": {"3"}}) {
		if err != nil {
			t.Fatal(err)
		}
		fromAgent = append(fromAgent, ev)
	}
	for i := range paged {
		if paged[i].EventBase().ID != one.Items[i].EventBase().ID || paged[i].EventBase().ID != fromAgent[i].EventBase().ID {
			t.Fatalf("event %d: paged %s, one page %s, agent %s", i, paged[i].EventBase().ID, one.Items[i].EventBase().ID, fromAgent[i].EventBase().ID)
		}
	}
	if n, err := c.CountEvents(ctx, id, client.Filter{"kind__eq": {"MessageEvent"}}); err != nil || n != countKind(paged, "MessageEvent") {
		t.Fatalf("CountEvents: %d %v", n, err)
	}
	evs, err := c.GetEvents(ctx, id, paged[1].EventBase().ID, "missing")
	if err != nil || len(evs) != 2 || evs[0].EventBase().ID != paged[1].EventBase().ID || evs[1] != nil {
		t.Fatalf("GetEvents: %v %v", evs, err)
	}
	// Breaking out of the iterator stops the paging.
	n := 0
	for range c.Events(ctx, id, client.Filter{"limit": {"1"}}) {
		if n++; n == 3 {
			break
		}
	}

	// The agent server: conversations, bash, files.
	info, err := agent.GetConversation(ctx, id)
	if err != nil || info.ID == "" {
		t.Fatalf("agent GetConversation: %+v %v", info, err)
	}
	if n, err := agent.CountConversations(ctx, nil); err != nil || n != 1 {
		t.Fatalf("agent CountConversations: %d %v", n, err)
	}
	if p, err := agent.SearchConversations(ctx, nil); err != nil || len(p.Items) != 1 {
		t.Fatalf("agent SearchConversations: %+v %v", p, err)
	}
	if l, err := agent.GetConversations(ctx, id); err != nil || len(l) != 1 || l[0] == nil {
		t.Fatalf("agent GetConversations: %v %v", l, err)
	}
	out, err := agent.ExecuteBash(ctx, &agentwire.ExecuteBashRequest{Command: "mkdir -p notes && printf 'from bash' > notes/a.txt && pwd", Timeout: 30})
	if err != nil || out.ExitCode == nil || *out.ExitCode != 0 || out.Stdout == nil {
		t.Fatalf("ExecuteBash: %+v %v", out, err)
	}
	workdir := strings.TrimSpace(*out.Stdout)
	if b, err := agent.Download(ctx, workdir+"/notes/a.txt"); err != nil || string(b) != "from bash" {
		t.Fatalf("agent Download: %q %v", b, err)
	}
	if p, err := agent.SearchBashEvents(ctx, client.Filter{"kind__eq": {"BashOutput"}}); err != nil || len(p.Items) == 0 {
		t.Fatalf("SearchBashEvents: %+v %v", p, err)
	}
	if s, err := c.ReadFile(ctx, id, workdir+"/notes/a.txt"); err != nil || s != "from bash" {
		t.Fatalf("ReadFile: %q %v", s, err)
	}
	if _, err := c.Skills(ctx, id); err != nil {
		t.Fatalf("Skills: %v", err)
	}
	if h, err := c.Hooks(ctx, id); err != nil || h == nil {
		t.Fatalf("Hooks: %v %v", h, err)
	}
	// The workspace is a repository: the new file is a change.
	if ch, err := c.GitChanges(ctx, id, ""); err != nil || len(ch) != 1 || ch[0].Status != "ADDED" || ch[0].Path != "notes/a.txt" {
		t.Fatalf("GitChanges: %+v %v", ch, err)
	}
	if d, err := c.GitDiff(ctx, id, "notes/a.txt"); err != nil || d.Modified == nil || *d.Modified != "from bash" {
		t.Fatalf("GitDiff: %+v %v", d, err)
	}

	// Update, search, count, download.
	up, err := c.UpdateConversation(ctx, id, &v1wire.UpdateRequest{Title: client.Set("Renamed")})
	if err != nil || up.Title == nil || *up.Title != "Renamed" {
		t.Fatalf("UpdateConversation: %+v %v", up, err)
	}
	up, err = c.UpdateConversation(ctx, id, &v1wire.UpdateRequest{Public: client.Set(true)})
	if err != nil || up.Title == nil || *up.Title != "Renamed" || up.Public == nil || !*up.Public {
		t.Fatalf("a partial update changed what it did not name: %+v %v", up, err)
	}
	page, err := c.SearchConversations(ctx, client.Filter{"title__contains": {"Renam"}})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != id {
		t.Fatalf("SearchConversations: %+v %v", page, err)
	}
	var all []string
	for cv, err := range c.Conversations(ctx, client.Filter{"limit": {"1"}}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, cv.ID)
	}
	if len(all) != 1 || all[0] != id {
		t.Fatalf("Conversations: %v", all)
	}
	if n, err := c.CountConversations(ctx, nil); err != nil || n != 1 {
		t.Fatalf("CountConversations: %d %v", n, err)
	}
	zip, err := c.DownloadConversation(ctx, id)
	if err != nil || !bytes.HasPrefix(zip, []byte("PK")) {
		t.Fatalf("DownloadConversation: %d bytes %v", len(zip), err)
	}

	// The sandbox: get, search, pause, resume.
	sb, err := c.GetSandbox(ctx, conv.SandboxID)
	if err != nil || sb.Status != "RUNNING" || sb.Conversations != 1 {
		t.Fatalf("GetSandbox: %+v %v", sb, err)
	}
	if p, err := c.SearchSandboxes(ctx, nil); err != nil || len(p.Items) != 1 || p.Items[0].ID != sb.ID {
		t.Fatalf("SearchSandboxes: %+v %v", p, err)
	}
	if err := c.PauseSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("PauseSandbox: %v", err)
	}
	if sb, err = c.GetSandbox(ctx, sb.ID); err != nil || sb.Status != "PAUSED" {
		t.Fatalf("after pause: %+v %v", sb, err)
	}
	if err := c.ResumeSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("ResumeSandbox: %v", err)
	}
	testwait.For(t, 30*time.Second, "the sandbox to run again", func() bool {
		sb, err = c.GetSandbox(ctx, sb.ID)
		return err == nil && sb.Status == "RUNNING"
	})

	// Bob sees none of it: another user's conversation is not found.
	if _, err := client.New(e.url, bobKey).GetConversation(ctx, id); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("bob's GetConversation: %v", err)
	}

	// Delete: the conversation is gone, and so is its sandbox.
	if err := c.DeleteConversation(ctx, id); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if _, err := c.GetConversation(ctx, id); !errors.Is(err, acs.ErrNotFound) || client.StatusOf(err) != http.StatusNotFound {
		t.Fatalf("GetConversation after delete: %v", err)
	}
	if err := c.DeleteConversation(ctx, id); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("DeleteConversation twice: %v", err)
	}
}

func countKind(evs []events.Event, kind string) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind() == kind {
			n++
		}
	}
	return n
}

// TestStreamStartAndSandboxes: stream-start yields each state of the task
// up to READY; a sandbox created through the API runs and is deleted.
func TestStreamStartAndSandboxes(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t, 2*time.Minute)
	c := client.New(e.url, adminKey)
	var states []string
	var last v1wire.StartTask
	for tk, err := range c.StreamStart(ctx, startRequest("Hello")) {
		if err != nil {
			t.Fatalf("StreamStart: %v", err)
		}
		states = append(states, tk.Status)
		last = tk
	}
	if len(states) < 2 || states[0] != "WORKING" || last.Status != "READY" || last.AppConversationID == nil {
		t.Fatalf("streamed states %v, last %+v", states, last)
	}

	sb, err := c.CreateSandbox(ctx, "second")
	if err != nil || sb.SandboxSpecID != "second" {
		t.Fatalf("CreateSandbox: %+v %v", sb, err)
	}
	testwait.For(t, 30*time.Second, "the sandbox to run", func() bool {
		got, err := c.GetSandboxes(ctx, sb.ID)
		return err == nil && got[0] != nil && got[0].Status == "RUNNING" && len(got[0].ExposedURLs) == 1
	})
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if _, err := c.GetSandbox(ctx, sb.ID); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("GetSandbox after delete: %v", err)
	}
	if _, err := c.WaitStartTask(ctx, "00000000000000000000000000000000", 0); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("WaitStartTask of an unknown task: %v", err)
	}
}

// TestAccountsThroughTheClient: settings (partial updates), secrets, users
// and keys.
func TestAccountsThroughTheClient(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t, time.Minute)
	c := client.New(e.url, adminKey)

	s, err := c.UpdateSettings(ctx, &v1wire.SettingsRequest{LLMModel: client.Set("openai/gpt-x"), LLMAPIKey: client.Set("sk-123456")})
	if err != nil || s.LLMModel == nil || *s.LLMModel != "openai/gpt-x" || !s.LLMAPIKeySet {
		t.Fatalf("UpdateSettings: %+v %v", s, err)
	}
	max := 3
	if s, err = c.UpdateSettings(ctx, &v1wire.SettingsRequest{MaxConversationsPerSandbox: &max, LLMAPIKey: client.Clear()}); err != nil ||
		s.MaxConversationsPerSandbox != 3 || s.LLMAPIKeySet || s.LLMModel == nil {
		t.Fatalf("UpdateSettings (partial, clear): %+v %v", s, err)
	}
	if s, err = c.GetSettings(ctx); err != nil || s.MaxConversationsPerSandbox != 3 || s.LLMModel == nil || *s.LLMModel != "openai/gpt-x" {
		t.Fatalf("GetSettings: %+v %v", s, err)
	}

	desc := "a token"
	sec, err := c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "GH_TOKEN", Value: "ghp-secret-value", Description: &desc})
	if err != nil || sec.Name != "GH_TOKEN" || sec.Description == nil {
		t.Fatalf("CreateSecret: %+v %v", sec, err)
	}
	if _, err := c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "GH_TOKEN", Value: "again"}); !errors.Is(err, acs.ErrConflict) {
		t.Fatalf("CreateSecret twice: %v", err)
	}
	v := "new-value"
	if sec, err = c.UpdateSecret(ctx, "GH_TOKEN", &v1wire.UpdateSecretRequest{Value: &v}); err != nil || sec.Name != "GH_TOKEN" {
		t.Fatalf("UpdateSecret: %+v %v", sec, err)
	}
	if sec, err = c.GetSecret(ctx, "GH_TOKEN"); err != nil || *sec.Description != "a token" {
		t.Fatalf("GetSecret: %+v %v", sec, err)
	}
	if l, err := c.ListSecrets(ctx); err != nil || len(l) != 1 {
		t.Fatalf("ListSecrets: %+v %v", l, err)
	}
	if err := c.DeleteSecret(ctx, "GH_TOKEN"); err != nil {
		t.Fatalf("DeleteSecret: %v", err)
	}
	if l, err := c.ListSecrets(ctx); err != nil || len(l) != 0 {
		t.Fatalf("ListSecrets after delete: %+v %v", l, err)
	}

	nu, err := c.CreateUser(ctx, "carol")
	if err != nil || nu.User.Name != "carol" || nu.Key.Key == "" {
		t.Fatalf("CreateUser: %+v %v", nu, err)
	}
	carol := client.New(e.url, nu.Key.Key)
	if me, err := carol.Me(ctx); err != nil || me.ID != nu.User.ID || me.Admin {
		t.Fatalf("carol's Me: %+v %v", me, err)
	}
	if _, err := carol.CreateUser(ctx, "dave"); !errors.Is(err, acs.ErrForbidden) {
		t.Fatalf("CreateUser by a non-admin: %v", err)
	}
	k, err := carol.CreateKey(ctx, "laptop")
	if err != nil || k.Key == "" {
		t.Fatalf("CreateKey: %+v %v", k, err)
	}
	keys, err := carol.ListKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys: %+v %v", keys, err)
	}
	if err := carol.DeleteKey(ctx, k.ID); err != nil {
		t.Fatalf("DeleteKey: %v", err)
	}
	if _, err := client.New(e.url, k.Key).Me(ctx); !errors.Is(err, acs.ErrUnauthorized) {
		t.Fatalf("a revoked key: %v", err)
	}
}

// TestErrorsAreDomainErrors: error answers decode into *acs.Error with the
// code, message, field and challenge the server meant.
func TestErrorsAreDomainErrors(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t, time.Minute)
	c := client.New(e.url, adminKey)

	_, err := c.GetSecret(ctx, "NOPE")
	var ae *acs.Error
	if !errors.Is(err, acs.ErrNotFound) || !errors.As(err, &ae) || client.StatusOf(err) != 404 || acs.ErrorCode(err) != acs.ENOTFOUND {
		t.Fatalf("404: %v", err)
	}

	_, err = c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "1BAD", Value: "x"})
	if !errors.Is(err, acs.ErrInvalid) || client.StatusOf(err) != http.StatusUnprocessableEntity || !errors.As(err, &ae) {
		t.Fatalf("422: %v", err)
	}
	if len(ae.Field) != 1 || ae.Field[0] != "name" || !strings.Contains(ae.Message, "environment variable names") {
		t.Fatalf("422 decoded as field %v message %q", ae.Field, ae.Message)
	}
	// Several problems: every message, the first one's field.
	_, err = c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "PATH", Value: strings.Repeat("x", v1wire.MaxSecretValueSize+1)})
	if !errors.As(err, &ae) || ae.Code != acs.EINVALID || !strings.Contains(ae.Message, "; ") || ae.Field[0] != "name" {
		t.Fatalf("422 with two problems: %#v", ae)
	}

	_, err = client.New(e.url, "wrong-key-0123456789").Me(ctx)
	if !errors.Is(err, acs.ErrUnauthorized) || client.StatusOf(err) != 401 || !errors.As(err, &ae) || ae.Challenge != "Bearer" {
		t.Fatalf("401: %#v", err)
	}
	if _, err := client.New(e.url, "").SearchSandboxes(ctx, nil); !errors.Is(err, acs.ErrUnauthorized) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := c.SearchEvents(ctx, "not-a-conversation", nil); !errors.Is(err, acs.ErrNotFound) && !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("events of a bad id: %v", err)
	}
	if _, err := c.SearchConversations(ctx, url.Values{"page_id": {"garbage"}}); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("bad page_id: %v", err)
	}
}

// TestFollowStart: FollowStart returns the READY task, having shown each
// status once and in order, whether the stream lasts to READY or a proxy's
// limit ends it at once (it then polls); a refused request is an *Error
// with no task, and a start that fails is ErrStartFailed with its task.
func TestFollowStart(t *testing.T) {
	order := map[string]int{"WORKING": 0, "WAITING_FOR_SANDBOX": 1, "PREPARING_REPOSITORY": 2, "RUNNING_SETUP_SCRIPT": 3,
		"SETTING_UP_GIT_HOOKS": 4, "SETTING_UP_SKILLS": 5, "STARTING_CONVERSATION": 6, "READY": 7, "ERROR": 7}
	for _, tc := range []struct {
		name  string
		limit time.Duration
	}{{"streamed to READY", 0}, {"stream ended at once, then polled", time.Nanosecond}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvStreamLimit(t, tc.limit)
			ctx := ctxFor(t, 2*time.Minute)
			c := client.New(e.url, adminKey)
			var seen []string
			task, err := c.FollowStart(ctx, &v1wire.StartRequest{}, 20*time.Millisecond, func(tk v1wire.StartTask) {
				if n := len(seen); n == 0 || seen[n-1] != tk.Status {
					seen = append(seen, tk.Status)
				}
			})
			if err != nil || task.Status != "READY" || task.AppConversationID == nil {
				t.Fatalf("FollowStart: %+v %v", task, err)
			}
			if len(seen) < 2 || seen[0] != "WORKING" || seen[len(seen)-1] != "READY" {
				t.Fatalf("statuses seen %v, want WORKING first and READY last", seen)
			}
			for i := 1; i < len(seen); i++ {
				if order[seen[i]] <= order[seen[i-1]] {
					t.Fatalf("statuses seen out of order: %v", seen)
				}
			}

			bad := &v1wire.StartRequest{SandboxID: ptr("not-a-sandbox")}
			failed, err := c.FollowStart(ctx, bad, 20*time.Millisecond, nil)
			if !errors.Is(err, client.ErrStartFailed) || failed.Status != "ERROR" || failed.ID == "" {
				t.Fatalf("a start on an unknown sandbox: %+v %v", failed, err)
			}
		})
	}
	e := newEnv(t)
	c := client.New(e.url, adminKey)
	_, err := c.FollowStart(ctxFor(t, time.Minute), &v1wire.StartRequest{Title: ptr(strings.Repeat("x", 100000))}, 0, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status < 400 || ce.Status >= 500 {
		t.Fatalf("a refused start: %v", err)
	}
}
