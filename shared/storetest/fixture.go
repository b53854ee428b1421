package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// The stored-data fixture: records of every kind, with every field set
// (and the zero, nil and empty forms of the fields that have them), which
// an adapter writes once into a fixture file (WriteFixture) and reads back
// in every later version (CheckFixture). Data written by an older version
// must keep reading as the same domain values: a renamed domain field, a
// changed record type or a changed index shows as a failure, not as data
// silently lost.

// FixtureTime is the clock of the fixture: the records' times are around
// it, and adapters whose records expire (DynamoDB's finished start tasks,
// queued messages) must read the fixture with their clock at FixtureTime.
var FixtureTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func fixAt(s int) time.Time { return FixtureTime.Add(time.Duration(s) * time.Second) }
func fixAtp(s int) *time.Time {
	t := fixAt(s)
	return &t
}
func boolp(b bool) *bool { return &b }

// fixture holds the records the fixture stores.
type fixture struct {
	users         []acs.User
	keys          []acs.APIKey
	tasks         []acs.StartTask
	sandboxes     []acs.Sandbox
	conversations []acs.Conversation
	events        map[string][]acs.StoredEvent // by conversation
	quotas        []acs.Quota
	settings      []acs.Settings
	secrets       []acs.Secret
	pending       []acs.PendingMessage // in queue order per key
}

const (
	fixOwner = "0f1c5e2a9b7d4c3e8a6f1b2d3c4e5f60"
	fixOther = "7a2b3c4d5e6f708192a3b4c5d6e7f801"
)

func fixtureData() fixture {
	var f fixture
	f.users = []acs.User{
		{ID: "admin", Name: "admin", Admin: true, CreatedAt: fixAt(-100)},
		{ID: fixOwner, Name: "Ada <Lovelace> & co", CreatedAt: fixAt(-90)},
		{ID: fixOther, Name: "Grace", CreatedAt: fixAt(-80)},
	}
	f.keys = []acs.APIKey{
		{ID: "k1", UserID: "admin", Name: "admin", Hash: acs.HashKey("fixture-key-1"), Prefix: "fixt", CreatedAt: fixAt(-100)},
		{ID: "k2", UserID: fixOwner, Name: "laptop", Hash: acs.HashKey("fixture-key-2"), Prefix: "fix2", CreatedAt: fixAt(-50)},
		{ID: "k3", UserID: fixOwner, Hash: acs.HashKey("fixture-key-3"), CreatedAt: fixAt(-40)},
	}
	f.tasks = []acs.StartTask{
		{ID: "1a00000000000000000000000000000a", OwnerID: fixOwner, Status: acs.TaskReady, Detail: strp("ready <now>"),
			AppConversationID: strp("c0000000000000000000000000000001"), SandboxID: strp("5b000000000000000000000000000001"),
			AgentServerURL: strp("http://127.0.0.1:41000"),
			Request:        json.RawMessage(`{"initial_message":{"content":[{"type":"text","text":"fix <b> & \u00e9"}]},"secrets":{"TOKEN":"**********"}}`),
			ConversationID: "c0000000000000000000000000000001", SealedSecrets: map[string]string{"TOKEN": "sealed:v1:abc"},
			Placement: "GROUP_BY_NEWEST: the newest available sandbox", OwnWorkDir: true,
			WorkDir: "/workspace/c1", ProjectDir: "/workspace/c1/repo", Command: "cmd-7",
			Steps: []acs.StepTiming{{Status: acs.TaskWorking, StartedAt: fixAt(-30)},
				{Status: acs.TaskWaitingForSandbox, StartedAt: fixAt(-29), Detail: "starting"},
				{Status: acs.TaskReady, StartedAt: fixAt(-20)}},
			Attempts: 2, CreatedAt: fixAt(-30), UpdatedAt: fixAt(-20)},
		{ID: "9e00000000000000000000000000000b", OwnerID: fixOwner, Status: acs.TaskWorking, Request: json.RawMessage(`{}`),
			ConversationID: "c0000000000000000000000000000003", Steps: []acs.StepTiming{}, CreatedAt: fixAt(-10), UpdatedAt: fixAt(-9)},
		{ID: "e200000000000000000000000000000c", OwnerID: fixOther, Status: acs.TaskError, Detail: strp("the sandbox failed"),
			Request: json.RawMessage(`{"x":1}`), ConversationID: "c0000000000000000000000000000004",
			Steps: []acs.StepTiming{{Status: acs.TaskError, StartedAt: fixAt(-5), Detail: "the sandbox failed"}}, CreatedAt: fixAt(-6), UpdatedAt: fixAt(-5)},
	}
	f.sandboxes = []acs.Sandbox{
		{ID: "5b000000000000000000000000000001", OwnerID: fixOwner, SpecID: "acs-default", Status: acs.SandboxRunning,
			Detail: "ready", SessionKeyHash: acs.HashKey("session-1"), AgentURL: "http://127.0.0.1:41000", WorkingDir: "/workspace",
			Slots: []string{"c0000000000000000000000000000001", "c0000000000000000000000000000002"}, CreatedByTask: "1a00000000000000000000000000000a",
			CreatedAt: fixAt(-29), UpdatedAt: fixAt(-20), LastUsedAt: fixAt(-21), LastActivityAt: fixAt(-19), PausedAt: fixAtp(-25),
			ArchiveKey: "archives/5b/ws.tar.gz", Tombstones: []string{"c0000000000000000000000000000009"}, PendingFlush: true, WarmPool: "hit"},
		{ID: "a7000000000000000000000000000002", OwnerID: fixOwner, SpecID: "acs-default", Status: acs.SandboxPaused,
			CreatedAt: fixAt(-15), UpdatedAt: fixAt(-14)},
		{ID: "f3000000000000000000000000000003", OwnerID: fixOther, SpecID: "other", Status: acs.SandboxError, Detail: "the pod failed",
			Slots: []string{}, CreatedAt: fixAt(-8), UpdatedAt: fixAt(-7)},
	}
	f.conversations = []acs.Conversation{
		{ID: "c0000000000000000000000000000001", OwnerID: fixOwner, SandboxID: "5b000000000000000000000000000001",
			SelectedRepository: strp("acme/app"), SelectedBranch: strp("main"), GitProvider: strp("github"),
			Title: strp("Fix the <parser> & résumé"), Trigger: strp("gui"), PRNumber: []int{12, 13}, LLMModel: strp("model-a"),
			Public: boolp(false), Tags: map[string]string{"team": "core", "prio": "high"}, WorkingDir: "/workspace/c1",
			SubConversationIDs: []string{"c0000000000000000000000000000002"}, ProjectDir: "/workspace/c1/repo",
			TitleAt: fixAt(-18), TitlePending: true,
			Delivered:        []acs.DeliveredMessage{{Digest: "d1", EventID: "e1"}, {Digest: "d2"}},
			RateLimitedUntil: fixAtp(30), AgentStateAt: fixAt(-17), ExecutionStatus: "running", ExecutionStatusAt: fixAt(-16),
			Metrics: json.RawMessage(`{"accumulated_cost":0.5,"note":"<&>"}`), StartTaskID: "1a00000000000000000000000000000a",
			CreatedAt: fixAt(-28), UpdatedAt: fixAt(-16)},
		{ID: "c0000000000000000000000000000002", OwnerID: fixOwner, SandboxID: "5b000000000000000000000000000001",
			ParentConversationID: strp("c0000000000000000000000000000001"), Title: strp("sub task"),
			CreatedAt: fixAt(-12), UpdatedAt: fixAt(-12)},
		{ID: "c0000000000000000000000000000003", OwnerID: fixOwner, CreatedAt: fixAt(-10), UpdatedAt: fixAt(-10)},
		{ID: "c0000000000000000000000000000004", OwnerID: fixOther, SandboxID: "f3000000000000000000000000000003",
			Title: strp("Other's parser"), CreatedAt: fixAt(-6), UpdatedAt: fixAt(-4)},
	}
	fixEv := func(id, kind, source string, s int, text, body string) acs.StoredEvent {
		return acs.StoredEvent{ID: id, Kind: kind, Source: source, Timestamp: fixAt(s), Text: text,
			JSON: []byte(fmt.Sprintf(`{"id":%q,"kind":%q,"source":%q,"body":%q}`, id, kind, source, body))}
	}
	f.events = map[string][]acs.StoredEvent{
		"c0000000000000000000000000000001": {
			fixEv("e1", "MessageEvent", "user", -27, "please fix the <parser>", "please fix the <parser> & é"),
			fixEv("e2", "ActionEvent", "agent", -26, "", "run tests"),
			fixEv("e3", "ObservationEvent", "environment", -26, "", "ok"),
			fixEv("e4", "MessageEvent", "agent", -25, "the parser is fixed", "the parser is fixed"),
		},
		"c0000000000000000000000000000004": {fixEv("x1", "MessageEvent", "user", -6, "parser elsewhere", "parser elsewhere")},
	}
	f.quotas = []acs.Quota{
		{UserID: fixOwner, Claims: map[string]time.Time{"5b000000000000000000000000000001": fixAt(-29), "new-sb": fixAt(-1)},
			Placement: &acs.PlacementLock{Task: "9e00000000000000000000000000000b", Until: fixAt(60), Created: "5b000000000000000000000000000001"}},
		{UserID: fixOther, Claims: map[string]time.Time{}},
	}
	f.settings = []acs.Settings{
		{UserID: fixOwner, SandboxGroupingStrategy: acs.GroupByNewest, LLMModel: strp("model-a"), LLMBaseURL: strp("http://llm.local/v1"),
			LLMAPIKeySealed: "sealed:v1:llm", ConfirmationPolicy: json.RawMessage(`{"kind":"AlwaysConfirm","note":"<&>"}`),
			MaxConversationsPerSandbox: 7, UpdatedAt: fixAt(-3)},
		acs.DefaultSettings(fixOther),
	}
	f.secrets = []acs.Secret{
		{OwnerID: fixOwner, Name: "GITHUB_TOKEN", Description: "the <bot>'s token", Sealed: "sealed:v1:gh", CreatedAt: fixAt(-60), UpdatedAt: fixAt(-2)},
		{OwnerID: fixOwner, Name: "API_KEY", Sealed: "sealed:v1:api", CreatedAt: fixAt(-59), UpdatedAt: fixAt(-59)},
		{OwnerID: fixOther, Name: "API_KEY", Sealed: "sealed:v1:other", CreatedAt: fixAt(-58), UpdatedAt: fixAt(-58)},
	}
	f.pending = []acs.PendingMessage{
		{ID: "m1", OwnerID: fixOwner, Key: "task-9e00000000000000000000000000000b",
			Content: json.RawMessage(`{"role":"user","content":[{"type":"text","text":"first <&>"}]}`), CreatedAt: fixAt(-8)},
		{ID: "m2", OwnerID: fixOwner, Key: "task-9e00000000000000000000000000000b",
			Content: json.RawMessage(`{"role":"user","content":[{"type":"text","text":"second"}]}`), CreatedAt: fixAt(-9)},
		{ID: "m3", OwnerID: fixOwner, Key: "c0000000000000000000000000000001",
			Content: json.RawMessage(`{"role":"user","content":[]}`), CreatedAt: fixAt(-1)},
	}
	return f
}

// WriteFixture stores the fixture's records in an empty store, in a fixed
// order (so that two stores written by it hold the same data).
func WriteFixture(t *testing.T, s acs.Store) {
	t.Helper()
	f := fixtureData()
	for _, u := range f.users {
		must(t, s.CreateUser(ctx, u))
	}
	for _, k := range f.keys {
		must(t, s.CreateAPIKey(ctx, k))
	}
	for _, tk := range f.tasks {
		must(t, s.CreateStartTask(ctx, tk))
	}
	for _, sb := range f.sandboxes {
		must(t, s.CreateSandbox(ctx, sb))
	}
	for _, c := range f.conversations {
		must(t, s.CreateConversation(ctx, c))
	}
	for _, conv := range sortedKeys(f.events) {
		if _, err := s.PutEvents(ctx, conv, f.events[conv]); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range f.quotas {
		_, err := s.UpdateQuota(ctx, q.UserID, func(cur *acs.Quota) error {
			cur.Claims, cur.Placement = q.Claims, q.Placement
			return nil
		})
		must(t, err)
	}
	for _, st := range f.settings {
		must(t, s.PutSettings(ctx, st))
	}
	for _, sec := range f.secrets {
		must(t, s.PutSecret(ctx, sec))
	}
	for _, m := range f.pending {
		if _, err := s.AddPendingMessage(ctx, m, acs.MaxPendingMessages); err != nil {
			t.Fatal(err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DiffLines fails the test, showing the difference, unless got and want
// (dumps of stored data, one entry a line) hold the same entries, in any
// order.
func DiffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	in := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range list {
			m[l] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var lines []string
	for _, l := range want {
		if !g[l] {
			lines = append(lines, "- "+l)
		}
	}
	for _, l := range got {
		if !w[l] {
			lines = append(lines, "+ "+l)
		}
	}
	if len(lines) > 0 {
		t.Errorf("%s differs (- expected, + got):\n%s", what, strings.Join(lines, "\n"))
	}
}

// same fails the test unless got and want are deeply equal, showing both.
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// CheckFixture reads the fixture's records back from s (a store holding
// what WriteFixture stored, possibly with an older version of the adapter)
// and fails the test unless they are the fixture's domain values, by id
// and through every index (lookups by hash, owner listings and filters,
// the reconciler's listings, event searches).
func CheckFixture(t *testing.T, s acs.Store) {
	t.Helper()
	f := fixtureData()
	for _, u := range f.users {
		got, err := s.GetUser(ctx, u.ID)
		must(t, err)
		same(t, "user "+u.ID, got, u)
	}
	for _, k := range f.keys {
		got, err := s.GetAPIKeyByHash(ctx, k.Hash)
		must(t, err)
		same(t, "api key "+k.ID, got, k)
	}
	keys, err := s.ListAPIKeys(ctx, fixOwner)
	must(t, err)
	sort.Slice(keys, func(i, j int) bool { return keys[i].ID < keys[j].ID })
	same(t, "api keys of the owner", keys, f.keys[1:])

	for _, tk := range f.tasks {
		got, err := s.GetStartTask(ctx, tk.ID)
		must(t, err)
		same(t, "start task "+tk.ID, got, tk)
	}
	tasks, err := s.SearchStartTasks(ctx, fixOwner, acs.StartTaskFilter{ConversationID: "c0000000000000000000000000000001"}, acs.SortUpdatedAt, acs.ListOptions{})
	must(t, err)
	same(t, "start tasks by conversation", tasks.Items, f.tasks[:1])
	list, err := s.ListStartTasks(ctx, fixOwner, acs.ListOptions{})
	must(t, err)
	same(t, "start tasks of the owner", idsOfTasks(list.Items), []string{f.tasks[1].ID, f.tasks[0].ID})
	if n, err := s.CountStartTasks(ctx, fixOther, acs.StartTaskFilter{}); err != nil || n != 1 {
		t.Errorf("start tasks of the other owner: %d, %v", n, err)
	}
	open, err := s.ListUnfinishedStartTasks(ctx, fixAt(0), 100)
	must(t, err)
	same(t, "unfinished start tasks", open, f.tasks[1:2])

	for _, sb := range f.sandboxes {
		got, err := s.GetSandbox(ctx, sb.ID)
		must(t, err)
		same(t, "sandbox "+sb.ID, got, sb)
	}
	got, err := s.GetSandboxBySessionKeyHash(ctx, acs.HashKey("session-1"))
	must(t, err)
	same(t, "sandbox by session key", got, f.sandboxes[0])
	boxes, err := s.ListSandboxes(ctx, fixOwner, acs.ListOptions{})
	must(t, err)
	same(t, "sandboxes of the owner", boxes.Items, []acs.Sandbox{f.sandboxes[1], f.sandboxes[0]})
	all, err := s.ListAllSandboxes(ctx, acs.ListOptions{})
	must(t, err)
	same(t, "all sandboxes", all.Items, f.sandboxes)

	for _, c := range f.conversations {
		got, err := s.GetConversation(ctx, c.ID)
		must(t, err)
		same(t, "conversation "+c.ID, got, c)
	}
	convs, err := s.SearchConversations(ctx, fixOwner, acs.ConversationFilter{TitleContains: "PARSER"}, acs.ListOptions{})
	must(t, err)
	same(t, "conversations by title", convs.Items, f.conversations[:1])
	for _, tc := range []struct {
		f    acs.ConversationFilter
		want int
	}{{acs.ConversationFilter{}, 2}, {acs.ConversationFilter{IncludeSubConversations: true}, 3},
		{acs.ConversationFilter{SandboxID: "5b000000000000000000000000000001", IncludeSubConversations: true}, 2},
		{acs.ConversationFilter{UpdatedGTE: fixAtp(-12)}, 1}} {
		if n, err := s.CountConversations(ctx, fixOwner, tc.f); err != nil || n != tc.want {
			t.Errorf("conversations matching %+v: %d, %v; want %d", tc.f, n, err, tc.want)
		}
	}
	bySandbox, err := s.ListConversationsBySandbox(ctx, "5b000000000000000000000000000001")
	must(t, err)
	sort.Slice(bySandbox, func(i, j int) bool { return bySandbox[i].ID < bySandbox[j].ID })
	same(t, "conversations by sandbox", bySandbox, f.conversations[:2])

	for _, conv := range sortedKeys(f.events) {
		evs := f.events[conv]
		var want [][]byte
		var ids []string
		for _, e := range evs {
			want = append(want, e.JSON)
			ids = append(ids, e.ID)
		}
		page, err := s.SearchEvents(ctx, conv, acs.EventQuery{})
		must(t, err)
		same(t, "events of "+conv, page.Items, want)
		back, err := s.GetEvents(ctx, conv, ids)
		must(t, err)
		same(t, "events of "+conv+" by id", back, want)
	}
	page, err := s.SearchEvents(ctx, "c0000000000000000000000000000001", acs.EventQuery{EventFilter: acs.EventFilter{Body: "PARSER", Source: "agent"}})
	must(t, err)
	same(t, "events by body", page.Items, [][]byte{f.events["c0000000000000000000000000000001"][3].JSON})
	if n, err := s.CountEvents(ctx, "c0000000000000000000000000000001", acs.EventFilter{Body: "parser"}); err != nil || n != 2 {
		t.Errorf("events by body: count %d, %v", n, err)
	}

	for _, q := range f.quotas {
		got, err := s.UpdateQuota(ctx, q.UserID, func(*acs.Quota) error { return nil })
		must(t, err)
		same(t, "quota of "+q.UserID, got, q)
	}
	for _, st := range f.settings {
		got, err := s.GetSettings(ctx, st.UserID)
		must(t, err)
		same(t, "settings of "+st.UserID, got, st)
	}
	for _, sec := range f.secrets {
		got, err := s.GetSecret(ctx, sec.OwnerID, sec.Name)
		must(t, err)
		same(t, "secret "+sec.Name, got, sec)
	}
	secs, err := s.ListSecrets(ctx, fixOwner)
	must(t, err)
	same(t, "secrets of the owner", secs, []acs.Secret{f.secrets[1], f.secrets[0]})
	queues := map[string][]acs.PendingMessage{}
	for _, m := range f.pending {
		queues[m.Key] = append(queues[m.Key], m)
	}
	for _, key := range sortedKeys(queues) {
		got, err := s.ListPendingMessages(ctx, key)
		must(t, err)
		same(t, "pending messages of "+key, got, queues[key])
		// Adding a message already queued answers its position.
		last := queues[key][len(queues[key])-1]
		if pos, err := s.AddPendingMessage(ctx, last, acs.MaxPendingMessages); err != nil || pos != len(queues[key]) {
			t.Errorf("re-adding %s: position %d, %v; want %d", last.ID, pos, err, len(queues[key]))
		}
	}
}
