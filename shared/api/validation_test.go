package api_test

// Validation, authentication, isolation and robustness of every V1 route:
// bad input is a 422 {"detail":[{"loc","msg","type"}]} naming the field and
// changes nothing; a missing or wrong key is a 401 with WWW-Authenticate;
// another user's resources are 404 (null in batch gets); no input, however
// malformed, gets a 5xx or a panic.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/badinput"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

// Keys of the users every validation environment has.
const (
	vAliceKey = "va-alice-key-0123456789"   // the caller
	vBobKey   = "va-bob-key-0123456789abc"  // another user
	vCarolKey = "va-carol-key-0123456789ab" // an isolated user for accepted starts
	vRootKey  = "va-root-key-0123456789abc" // an admin
	vDaveKey  = "va-dave-key-0123456789abc" // owns the webhook sandbox
	vHookKey  = "va-sandbox-session-key-0123456789"
)

// Fixture ids.
var (
	vConvA     = strings.Repeat("a1", 16) // alice's, with repository, branch and provider
	vConvA2    = strings.Repeat("a2", 16) // alice's, without repository
	vConvB     = strings.Repeat("b1", 16) // bob's
	vConvB2    = strings.Repeat("b2", 16) // bob's
	vConvD     = strings.Repeat("d1", 16) // dave's, on the webhook sandbox
	vTaskA     = strings.Repeat("a3", 16)
	vTaskB     = strings.Repeat("b3", 16)
	vSandboxA  = "va-sb-alice"
	vSandboxB  = "va-sb-bob"
	vSandboxD  = "va-sb-dave"
	vAliceKeyI = "va-alice-k"
	vBobKeyID  = "va-bob-k"
	vWorkDir   = "/workspace/project"
)

// vLogs captures slog output (and, through slog, the log package's, where
// net/http reports handler panics) for the duration of a test.
type vLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *vLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *vLogs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *vLogs) WithGroup(string) slog.Handler            { return l }
func (l *vLogs) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.String()
		if len(v) > 300 {
			v = v[:300] + "…"
		}
		b.WriteString(" " + a.Key + "=" + v)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

// clear forgets what was captured (for a test that documents a bug).
func (l *vLogs) clear() {
	l.mu.Lock()
	l.lines = nil
	l.mu.Unlock()
}

// bad returns the captured lines reporting a panic or an unexpected 500.
func (l *vLogs) bad() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(strings.ToLower(s), "panic") || strings.Contains(s, "api: request failed") || strings.Contains(s, "Needs does not declare") {
			out = append(out, s)
		}
	}
	return out
}

// vCaptureLogs installs a capturing slog handler until the test ends and
// fails the test if a panic (or an unexpected 500) was logged.
func vCaptureLogs(t *testing.T) *vLogs {
	t.Helper()
	logs := &vLogs{}
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
		for _, s := range logs.bad() {
			t.Errorf("logged: %s", s)
		}
	})
	return logs
}

type vEnv struct {
	t      *testing.T
	store  *boltstore.Store
	srv    *httptest.Server
	client *http.Client
	logs   *vLogs
}

// newVEnv starts the V1 API over a fresh store with the fixture users,
// keys, sandboxes (all MISSING but dave's: no runtime is needed),
// conversations, start tasks, secrets and events. The runtime's binary does
// not exist: no route under test starts a sandbox.
func newVEnv(t *testing.T) *vEnv {
	t.Helper()
	logs := vCaptureLogs(t)
	store := openStore(t)
	queue := openQueue(t)
	rt := openRuntime(t, "/nonexistent/acs")
	sealer := sealbox.FromPassphrase("validation test passphrase")
	flow := startflow.Config{Sandboxes: sandboxes.Config{PollInterval: 50 * time.Millisecond, ResumeWait: time.Second,
		Specs: []acs.SandboxSpec{{ID: "acs-local"}, {ID: "second"}}}}
	v1 := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue, Runtime: rt,
		Flow: flow, Sealer: sealer})})
	e := &vEnv{t: t, store: store, srv: httptest.NewServer(v1.Handler()), logs: logs,
		client: &http.Client{Timeout: 20 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(e.srv.Close)

	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []struct {
		id, keyID, key string
		admin          bool
	}{{"va-alice", vAliceKeyI, vAliceKey, false}, {"va-bob", vBobKeyID, vBobKey, false},
		{"va-carol", "va-carol-k", vCarolKey, false}, {"va-root", "va-root-k", vRootKey, true},
		{"va-dave", "va-dave-k", vDaveKey, false}} {
		must(store.CreateUser(ctx, acs.User{ID: u.id, Name: u.id, Admin: u.admin, CreatedAt: now}))
		must(store.CreateAPIKey(ctx, acs.APIKey{ID: u.keyID, UserID: u.id, Name: "fixture", Hash: acs.HashKey(u.key),
			Prefix: u.key[:8], CreatedAt: now}))
	}
	for _, sb := range []acs.Sandbox{
		{ID: vSandboxA, OwnerID: "va-alice", SpecID: "acs-local", Status: acs.SandboxMissing, Slots: []string{vConvA, vConvA2}, CreatedAt: now},
		{ID: vSandboxB, OwnerID: "va-bob", SpecID: "acs-local", Status: acs.SandboxMissing, Slots: []string{vConvB, vConvB2}, CreatedAt: now},
		{ID: vSandboxD, OwnerID: "va-dave", SpecID: "acs-local", Status: acs.SandboxPaused, Slots: []string{vConvD},
			SessionKeyHash: acs.HashKey(vHookKey), CreatedAt: now},
	} {
		must(store.CreateSandbox(ctx, sb))
	}
	repo, branch, provider, title := "acme/repo", "main", "github", "Fixture"
	for _, c := range []acs.Conversation{
		{ID: vConvA, OwnerID: "va-alice", SandboxID: vSandboxA, SelectedRepository: &repo, SelectedBranch: &branch,
			GitProvider: &provider, Title: &title, WorkingDir: vWorkDir, StartTaskID: vTaskA, CreatedAt: now, UpdatedAt: now},
		{ID: vConvA2, OwnerID: "va-alice", SandboxID: vSandboxA, WorkingDir: vWorkDir, CreatedAt: now.Add(time.Second), UpdatedAt: now},
		{ID: vConvB, OwnerID: "va-bob", SandboxID: vSandboxB, SelectedRepository: &repo, Title: &title, WorkingDir: vWorkDir,
			StartTaskID: vTaskB, CreatedAt: now, UpdatedAt: now},
		{ID: vConvB2, OwnerID: "va-bob", SandboxID: vSandboxB, WorkingDir: vWorkDir, CreatedAt: now.Add(time.Second), UpdatedAt: now},
		{ID: vConvD, OwnerID: "va-dave", SandboxID: vSandboxD, WorkingDir: vWorkDir, CreatedAt: now, UpdatedAt: now},
	} {
		must(store.CreateConversation(ctx, c))
	}
	for _, tk := range []acs.StartTask{
		{ID: vTaskA, OwnerID: "va-alice", Status: acs.TaskWorking, ConversationID: vConvA, Request: json.RawMessage(`{}`),
			Steps: []acs.StepTiming{{Status: acs.TaskWorking, StartedAt: now}}, CreatedAt: now, UpdatedAt: now},
		{ID: vTaskB, OwnerID: "va-bob", Status: acs.TaskWorking, ConversationID: vConvB, Request: json.RawMessage(`{}`),
			Steps: []acs.StepTiming{{Status: acs.TaskWorking, StartedAt: now}}, CreatedAt: now, UpdatedAt: now},
	} {
		must(store.CreateStartTask(ctx, tk))
	}
	for _, s := range []struct{ owner, name string }{{"va-alice", "ALICE_TOKEN"}, {"va-bob", "BOB_TOKEN"}} {
		sealed, err := sealer.Seal("value-of-" + s.name)
		must(err)
		must(store.PutSecret(ctx, acs.Secret{OwnerID: s.owner, Name: s.name, Sealed: sealed, CreatedAt: now, UpdatedAt: now}))
	}
	for _, c := range []string{vConvA, vConvB} {
		_, err := store.PutEvents(ctx, c, []acs.StoredEvent{{ID: "ev-" + c[:4], Kind: "PauseEvent", Source: "user",
			Timestamp: now, JSON: []byte(`{"kind":"PauseEvent","id":"ev-` + c[:4] + `","timestamp":"` +
				now.Format("2006-01-02T15:04:05.000000Z") + `","source":"user"}`)}})
		must(err)
	}
	return e
}

type vResp struct {
	status int
	body   []byte
	header http.Header
}

func (r vResp) String() string {
	b := string(r.body)
	if len(b) > 600 {
		b = b[:600] + "…"
	}
	return fmt.Sprintf("%d %s", r.status, b)
}

func (e *vEnv) do(method, path string, body []byte, headers map[string]string) vResp {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK && strings.HasSuffix(req.URL.Path, "/stream-start") {
		// A valid start streams until READY, which never comes here.
		return vResp{res.StatusCode, []byte("(stream)"), res.Header}
	}
	b, _ := io.ReadAll(res.Body)
	return vResp{res.StatusCode, b, res.Header}
}

func (e *vEnv) as(key, method, path, body string) vResp {
	e.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	return e.do(method, path, b, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"})
}

// vRoute returns the method and path of the named route with its path
// parameters filled from params (escaped).
func vRoute(t *testing.T, name string, params map[string]string) (string, string) {
	t.Helper()
	for _, rt := range api.Routes {
		if rt.Name != name {
			continue
		}
		p := rt.Path
		for k, v := range params {
			p = strings.ReplaceAll(p, "{"+k+"}", url.PathEscape(v))
		}
		if strings.Contains(p, "{") {
			t.Fatalf("route %s: unfilled parameter in %s", name, p)
		}
		return rt.Method, p
	}
	t.Fatalf("no route named %s", name)
	return "", ""
}

// vDefaults are the path parameters of alice's own fixtures.
func vDefaults() map[string]string {
	return map[string]string{"conversation_id": vConvA, "sandbox_id": vSandboxA, "name": "ALICE_TOKEN", "key_id": vAliceKeyI, "user_id": "me"}
}

// vLocPath renders a loc as body.a.b[2]; vLocPath of ["body", 19] is body[19].
func vLocPath(loc []any) string {
	var b strings.Builder
	for i, p := range loc {
		switch p := p.(type) {
		case float64:
			b.WriteString("[" + strconv.Itoa(int(p)) + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// vLocMatches reports whether got is want; a want ending in "[*]" matches
// any index there (JSON syntax errors are located at their byte offset).
func vLocMatches(got, want string) bool {
	if prefix, ok := strings.CutSuffix(want, "[*]"); ok {
		rest, ok := strings.CutPrefix(got, prefix+"[")
		if !ok || !strings.HasSuffix(rest, "]") {
			return false
		}
		_, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
		return err == nil
	}
	return got == want
}

// vCheck422 asserts a 422 whose body is exactly {"detail":[{loc,msg,type}...]}
// with an item located at want. It returns a description of the failure, or "".
func vCheck422(r vResp, want string) string {
	if r.status != http.StatusUnprocessableEntity {
		return fmt.Sprintf("want 422 at %s, got %s", want, r)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Sprintf("422 with Content-Type %q", ct)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &top); err != nil || len(top) != 1 || top["detail"] == nil {
		return fmt.Sprintf("422 body is not {\"detail\": …}: %s", r)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(top["detail"], &items); err != nil || len(items) == 0 {
		return fmt.Sprintf("detail is not a non-empty list: %s", r)
	}
	var locs []string
	found := false
	for _, it := range items {
		var loc []any
		var msg, typ string
		if json.Unmarshal(it["loc"], &loc) != nil || loc == nil || json.Unmarshal(it["msg"], &msg) != nil ||
			json.Unmarshal(it["type"], &typ) != nil || msg == "" || typ == "" || len(it) != 3 {
			return fmt.Sprintf("detail item is not {loc: [...], msg, type}: %s", r)
		}
		for _, p := range loc {
			switch p.(type) {
			case string, float64:
			default:
				return fmt.Sprintf("loc holds %T: %s", p, r)
			}
		}
		got := vLocPath(loc)
		locs = append(locs, got)
		if vLocMatches(got, want) {
			found = true
		}
	}
	if !found {
		return fmt.Sprintf("no error at %s (got %v): %s", want, locs, r)
	}
	return ""
}

// vCheckDetail asserts status and a {"detail": "<string>"} body.
func vCheckDetail(r vResp, status int) string {
	if r.status != status {
		return fmt.Sprintf("want %d, got %s", status, r)
	}
	var body struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Detail == nil || *body.Detail == "" {
		return fmt.Sprintf("%d body is not {\"detail\": \"…\"}: %s", status, r)
	}
	return ""
}

func vq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// vCase is one invalid request to a route.
type vCase struct {
	route  string
	name   string
	params map[string]string // path parameters over vDefaults
	query  string
	body   string
	loc    string
	key    string // bearer key (vAliceKey when empty); "sandbox" for the webhook sandbox's session key
}

const vText = `{"type":"text","text":"hello"}`

// vStartCases are the invalid bodies of POST /api/v1/app-conversations (and
// stream-start).
func vStartCases() []vCase {
	var cs []vCase
	add := func(name, body, loc string) { cs = append(cs, vCase{name: name, body: body, loc: loc}) }
	msg := func(inner string) string { return `{"initial_message":{` + inner + `}}` }
	// Bodies that are not a JSON object.
	add("not json", `{"title":`, "body[*]")
	add("garbage", `hello`, "body[*]")
	add("trailing data", `{} {}`, "body[*]")
	add("duplicate key", `{"title":"a","title":"b"}`, "body[*]")
	add("invalid utf-8", "{\"title\":\"\xff\xfe\"}", "body[*]")
	add("null body", `null`, "body")
	add("array body", `[]`, "body")
	add("string body", `"x"`, "body")
	add("number body", `1`, "body")
	// Unknown fields.
	add("unknown field", `{"bogus":1}`, "body.bogus")
	add("unknown field near a known one", `{"selected_repo":"a/b"}`, "body.selected_repo")
	add("unknown nested field", msg(`"role":"user","content":[`+vText+`],"runn":true`), "body.initial_message.runn")
	add("unknown content field", msg(`"role":"user","content":[{"type":"text","text":"x","bold":true}]`), "body.initial_message.content[0].bold")
	add("unknown plugin field", `{"plugins":[{"source":"x","bogus":1}]}`, "body.plugins[0].bogus")
	// Wrong types, for every field.
	for _, f := range []struct{ field, value string }{
		{"sandbox_id", `1`}, {"conversation_id", `1`}, {"initial_message", `"hi"`}, {"initial_message", `[]`},
		{"system_message_suffix", `1`}, {"system_message_suffix", `{}`}, {"llm_model", `1`}, {"llm_model", `true`},
		{"selected_repository", `42`}, {"selected_repository", `["a/b"]`}, {"git_provider", `1`},
		{"suggested_task", `[]`}, {"suggested_task", `"x"`}, {"title", `1`}, {"title", `["t"]`}, {"trigger", `true`},
		{"pr_number", `"1"`}, {"pr_number", `1`}, {"parent_conversation_id", `1`}, {"agent_type", `1`}, {"agent_type", `null`},
		{"public", `"yes"`}, {"public", `1`}, {"public", `"true"`}, {"plugins", `"x"`}, {"plugins", `{}`},
		{"secrets", `"x"`}, {"secrets", `[]`}, {"observability_span_name", `1`}, {"observability_tags", `"x"`},
		{"observability_tags", `{}`}, {"observability_metadata", `[1]`}, {"observability_metadata", `"x"`},
		{"observability_metadata", `1`},
	} {
		add(f.field+" = "+f.value, `{"`+f.field+`":`+f.value+`}`, "body."+f.field)
	}
	add("branch of wrong type", `{"selected_repository":"a/b","selected_branch":1}`, "body.selected_branch")
	add("pr number string", `{"pr_number":["1"]}`, "body.pr_number[0]")
	add("pr number fraction", `{"pr_number":[1.5]}`, "body.pr_number[0]")
	add("pr number huge", `{"pr_number":[1e30]}`, "body.pr_number[0]")
	add("tag not string", `{"observability_tags":["a",1]}`, "body.observability_tags[1]")
	add("secret value not string", `{"secrets":{"A":1}}`, "body.secrets.A")
	add("secret value null", `{"secrets":{"A":null}}`, "body.secrets.A")
	add("plugin not object", `{"plugins":["x"]}`, "body.plugins[0]")
	add("run not bool", msg(`"role":"user","content":[`+vText+`],"run":"yes"`), "body.initial_message.run")
	// Enums.
	add("git provider unknown", `{"git_provider":"svn"}`, "body.git_provider")
	add("git provider case", `{"git_provider":"GitHub"}`, "body.git_provider")
	add("trigger unknown", `{"trigger":"cron"}`, "body.trigger")
	add("agent type unknown", `{"agent_type":"wizard"}`, "body.agent_type")
	add("agent type empty", `{"agent_type":""}`, "body.agent_type")
	// Limits.
	add("title 201 characters", `{"title":"`+strings.Repeat("t", 201)+`"}`, "body.title")
	add("span name 201 characters", `{"observability_span_name":"`+strings.Repeat("s", 201)+`"}`, "body.observability_span_name")
	// Repositories and branches.
	for _, r := range []string{"acme", "acme/", "/x", "a/b/c", "a/b;rm", "a/b;rm -rf /", "../x", "a/..", "a/b c", "",
		"a/b\n", "a/b$(id)", "a/b`id`", "a/b|x", "a/b&x", "https://github.com/a/b", "a/b.git"} {
		add("repository "+strconv.Quote(r), `{"selected_repository":`+vq(r)+`}`, "body.selected_repository")
	}
	for _, b := range []string{"-x", "a..b", "x.lock", "with space", "a//b", "/x", "x/", "a~b", "a:b", "a^b", "a?b",
		"a*b", "a[b", "a\\b", "", strings.Repeat("b", 256)} {
		add("branch "+strconv.Quote(b[:min(len(b), 20)]), `{"selected_repository":"acme/repo","selected_branch":`+vq(b)+`}`, "body.selected_branch")
	}
	add("branch without repository", `{"selected_branch":"main"}`, "body.selected_branch")
	// Ids.
	for _, id := range []string{"../x", "", strings.Repeat("s", 129), "a b", "a/b"} {
		add("sandbox id "+strconv.Quote(id[:min(len(id), 10)]), `{"sandbox_id":`+vq(id)+`}`, "body.sandbox_id")
	}
	for _, field := range []string{"conversation_id", "parent_conversation_id"} {
		for _, id := range []string{"abc", "", strings.Repeat("a", 31), strings.Repeat("a", 33), strings.Repeat("z", 32),
			"{" + acs.Dashed(strings.Repeat("c", 32)) + "}", "urn:uuid:" + acs.Dashed(strings.Repeat("c", 32)),
			strings.Repeat("c", 8) + "_" + strings.Repeat("c", 4) + "-" + strings.Repeat("c", 4) + "-" + strings.Repeat("c", 4) + "-" + strings.Repeat("c", 12)} {
			add(field+" "+strconv.Quote(id[:min(len(id), 12)]), `{"`+field+`":`+vq(id)+`}`, "body."+field)
		}
	}
	add("parent unknown", `{"parent_conversation_id":"`+strings.Repeat("e", 32)+`"}`, "body.parent_conversation_id")
	add("parent of another user", `{"parent_conversation_id":"`+vConvB+`"}`, "body.parent_conversation_id")
	// observability_metadata values.
	for _, m := range []struct{ name, value, loc string }{
		{"nested object", `{"a":{"b":1}}`, ".a"}, {"empty object", `{"a":{}}`, ".a"}, {"null", `{"a":null}`, ".a"},
		{"mixed array", `{"a":["a",1]}`, ".a[1]"}, {"mixed array bool", `{"a":[true,"x"]}`, ".a[1]"},
		{"nested array", `{"a":[[1]]}`, ".a[0]"}, {"array of objects", `{"a":[{}]}`, ".a[0]"},
		{"array with null", `{"a":["x",null]}`, ".a[1]"}, {"second key bad", `{"ok":"x","bad":{"c":[]}}`, ".bad"},
	} {
		add("metadata "+m.name, `{"observability_metadata":`+m.value+`}`, "body.observability_metadata"+m.loc)
	}
	// Secrets.
	var many []string
	for i := 0; i < 51; i++ {
		many = append(many, fmt.Sprintf(`"S%d":"v"`, i))
	}
	add("51 secrets", `{"secrets":{`+strings.Join(many, ",")+`}}`, "body.secrets")
	for _, n := range []string{"1X", "a-b", "A B", "A.B", "Ä", strings.Repeat("N", 257)} {
		add("secret name "+strconv.Quote(n[:min(len(n), 10)]), `{"secrets":{`+vq(n)+`:"v"}}`, "body.secrets."+n)
	}
	add("secret name empty", `{"secrets":{"":"v"}}`, "body.secrets.")
	for _, n := range []string{"OH_WEBHOOKS_0_BASE_URL", "LLM_API_KEY", "LLM_BASE_URL", "llm_model", "PATH", "path", "HOME",
		"SESSION_API_KEY", "OH_SESSION_API_KEYS_0"} {
		add("secret name blocked "+n, `{"secrets":{"`+n+`":"v"}}`, "body.secrets."+n)
	}
	add("secret value over 65536 bytes", `{"secrets":{"BIG":"`+strings.Repeat("x", 65537)+`"}}`, "body.secrets.BIG")
	add("secret value in message", `{"secrets":{"TOKEN":"hunter2-secret"},"initial_message":{"role":"user","content":[{"type":"text","text":"use hunter2-secret"}]}}`,
		"body.initial_message.content[0].text")
	// Initial message.
	add("message role assistant", msg(`"role":"assistant","content":[`+vText+`]`), "body.initial_message.role")
	add("message role system", msg(`"role":"system","content":[`+vText+`]`), "body.initial_message.role")
	add("message role unknown", msg(`"role":"robot","content":[`+vText+`]`), "body.initial_message.role")
	add("message content empty", msg(`"role":"user","content":[]`), "body.initial_message.content")
	add("message content missing", msg(`"role":"user"`), "body.initial_message.content")
	add("message content not list", msg(`"role":"user","content":"hi"`), "body.initial_message.content")
	add("content type unknown", msg(`"role":"user","content":[{"type":"audio"}]`), "body.initial_message.content[0].type")
	add("content text missing", msg(`"role":"user","content":[{"type":"text"}]`), "body.initial_message.content[0].text")
	add("content text not string", msg(`"role":"user","content":[{"type":"text","text":1}]`), "body.initial_message.content[0].text")
	add("content item not object", msg(`"role":"user","content":["hi"]`), "body.initial_message.content[0]")
	add("image urls missing", msg(`"role":"user","content":[{"type":"image"}]`), "body.initial_message.content[0].image_urls")
	// Plugins.
	add("plugin without source", `{"plugins":[{"ref":"main"}]}`, "body.plugins[0].source")
	add("plugin empty source", `{"plugins":[{"source":""}]}`, "body.plugins[0].source")
	add("plugin parameters not object", `{"plugins":[{"source":"x","parameters":[1]}]}`, "body.plugins[0].parameters")
	// Exclusive fields.
	add("suggested task with initial message", `{"suggested_task":{"task_type":"OPEN_ISSUE","repo":"acme/app","issue_number":7},"initial_message":{"role":"user","content":[`+vText+`]}}`, "body.suggested_task")
	add("suggested task without a repo", `{"suggested_task":{"task_type":"OPEN_ISSUE","issue_number":7}}`, "body.suggested_task.repo")
	add("suggested task of an unknown type", `{"suggested_task":{"task_type":"CHORES","repo":"acme/app","issue_number":7}}`, "body.suggested_task.task_type")
	return cs
}

// vValidationCases lists invalid requests for every route with a body or
// query parameters.
func vValidationCases() []vCase {
	var cs []vCase
	for _, route := range []string{"start_conversation", "stream_start_conversation"} {
		for _, c := range vStartCases() {
			c.route = route
			cs = append(cs, c)
		}
	}
	add := func(route, name, query, body, loc string) {
		cs = append(cs, vCase{route: route, name: name, query: query, body: body, loc: loc})
	}
	ids101 := func(param, id string) string {
		var qs []string
		for i := 0; i < 101; i++ {
			qs = append(qs, param+"="+id)
		}
		return strings.Join(qs, "&")
	}
	// Batch gets.
	for _, r := range []struct{ route, id string }{{"get_start_tasks", vTaskA}, {"get_conversations", vConvA}} {
		add(r.route, "malformed id", "ids=nope", "", "query.ids[0]")
		add(r.route, "non-hex id", "ids="+strings.Repeat("z", 32), "", "query.ids[0]")
		add(r.route, "short id", "ids="+strings.Repeat("a", 31), "", "query.ids[0]")
		add(r.route, "second id malformed", "ids="+r.id+"&ids=x%00y", "", "query.ids[1]")
		add(r.route, "comma list with bad id", "ids="+r.id+",nope", "", "query.ids[1]")
		add(r.route, "misplaced dashes", "ids="+strings.Repeat("a", 7)+"-"+strings.Repeat("a", 25)+"-ab-", "", "query.ids[0]")
		add(r.route, "101 ids", ids101("ids", r.id), "", "query.ids")
		add(r.route, "101 ids comma separated", "ids="+strings.TrimSuffix(strings.Repeat(r.id+",", 101), ","), "", "query.ids")
	}
	for _, r := range []string{"get_sandboxes", "get_sandbox_specs", "get_events"} {
		add(r, "101 ids", ids101("id", "x"), "", "query.id")
	}
	// A required parameter that is absent is named (FastAPI's "missing").
	add("get_start_tasks", "ids missing", "", "", "query.ids")
	add("get_conversations", "ids missing", "", "", "query.ids")
	for _, r := range []string{"get_sandboxes", "get_sandbox_specs", "get_events"} {
		add(r, "id missing", "", "", "query.id")
	}
	// Searches and counts.
	limits := func(route string) {
		for _, v := range []string{"0", "101", "abc", "-1", "1.5", "", "1e2", "99999999999999999999"} {
			add(route, "limit "+strconv.Quote(v), "limit="+v, "", "query.limit")
		}
	}
	for _, r := range []string{"search_start_tasks", "search_conversations", "search_events", "search_sandboxes", "search_sandbox_specs"} {
		limits(r)
		add(r, "page_id garbage", "page_id=garbage!", "", "query.page_id")
		add(r, "page_id invalid utf-8", "page_id=%FF%00", "", "query.page_id")
	}
	add("search_sandbox_specs", "page_id negative", "page_id=-1", "", "query.page_id")
	for _, r := range []string{"search_start_tasks", "count_start_tasks"} {
		add(r, "created_at__gte word", "created_at__gte=yesterday", "", "query.created_at__gte")
		add(r, "created_at__gte invalid date", "created_at__gte=2026-02-30T00:00:00Z", "", "query.created_at__gte")
		add(r, "created_at__gte unix time", "created_at__gte=not-1700000000", "", "query.created_at__gte")
		add(r, "conversation_id__eq malformed", "conversation_id__eq=nope", "", "query.conversation_id__eq")
		add(r, "conversation_id__eq empty", "conversation_id__eq=", "", "query.conversation_id__eq")
	}
	add("search_start_tasks", "sort_order unknown", "sort_order=NEWEST", "", "query.sort_order")
	add("search_start_tasks", "sort_order lower case", "sort_order=created_at_desc", "", "query.sort_order")
	for _, r := range []string{"search_conversations", "count_conversations"} {
		for _, p := range []string{"created_at__gte", "created_at__lt", "updated_at__gte", "updated_at__lt"} {
			add(r, p+" word", p+"=yesterday", "", "query."+p)
		}
		add(r, "created_at__lt month 13", "created_at__lt=2026-13-01T00:00:00Z", "", "query.created_at__lt")
		add(r, "include_sub_conversations maybe", "include_sub_conversations=maybe", "", "query.include_sub_conversations")
		add(r, "include_sub_conversations empty", "include_sub_conversations=", "", "query.include_sub_conversations")
	}
	for _, r := range []string{"search_events", "count_events"} {
		add(r, "kind unknown", "kind=Bogus", "", "query.kind")
		add(r, "kind__eq unknown", "kind__eq=Bogus", "", "query.kind__eq")
		add(r, "source unknown", "source=bot", "", "query.source")
		add(r, "source upper case", "source=USER", "", "query.source")
		add(r, "timestamp__gte word", "timestamp__gte=soon", "", "query.timestamp__gte")
		add(r, "timestamp__lt invalid date", "timestamp__lt=2026-02-30", "", "query.timestamp__lt")
		add(r, "timestamp__lt garbage", "timestamp__lt=%00", "", "query.timestamp__lt")
	}
	add("search_events", "sort_order unknown", "sort_order=DESC", "", "query.sort_order")
	add("search_events", "sort_order lower case", "sort_order=timestamp", "", "query.sort_order")
	// Sandboxes.
	add("create_sandbox", "unknown spec", "sandbox_spec_id=nope", "", "query.sandbox_spec_id")
	add("create_sandbox", "spec of traversal", "sandbox_spec_id=../acs-local", "", "query.sandbox_spec_id")
	cs = append(cs, vCase{route: "delete_sandbox", name: "query differs from path", query: "sandbox_id=other", loc: "query.sandbox_id"})
	add("delete_sandbox_by_query", "sandbox_id missing", "", "", "query.sandbox_id")
	add("delete_sandbox_by_query", "sandbox_id empty", "sandbox_id=", "", "query.sandbox_id")
	// Review routes.
	add("read_file", "file_path empty", "file_path=", "", "query.file_path")
	add("read_file", "file_path outside the workspace", "file_path=/etc/passwd", "", "query.file_path")
	add("read_file", "file_path escaping", "file_path=../../etc/passwd", "", "query.file_path")
	add("git_changes", "path outside the workspace", "path=/etc", "", "query.path")
	add("git_changes", "path escaping", "path=../../..", "", "query.path")
	add("git_diff", "path missing", "", "", "query.path")
	add("git_diff", "path empty", "path=", "", "query.path")
	add("git_diff", "path outside the workspace", "path=/etc/passwd", "", "query.path")
	// Paths no file can have.
	for _, r := range []struct{ route, param string }{{"read_file", "file_path"}, {"git_changes", "path"}, {"git_diff", "path"}} {
		add(r.route, r.param+" NUL byte", r.param+"=a%00b.txt", "", "query."+r.param)
		add(r.route, r.param+" 5000 bytes", r.param+"="+strings.Repeat("d/", 2500), "", "query."+r.param)
		add(r.route, r.param+" 300-byte name", r.param+"="+strings.Repeat("n", 300), "", "query."+r.param)
	}
	add("read_file", "file_path missing", "", "", "query.file_path")
	// PATCH conversation (alice's conversation has repository, branch and provider).
	for _, c := range []struct{ name, body, loc string }{
		{"not json", `{"title":`, "body[*]"}, {"empty body", ``, "body"}, {"null body", `null`, "body"}, {"array body", `[]`, "body"},
		{"unknown field", `{"bogus":1}`, "body.bogus"}, {"unknown field with valid", `{"title":"x","name":"y"}`, "body.name"},
		{"title number", `{"title":1}`, "body.title"}, {"title empty", `{"title":""}`, "body.title"},
		{"title blank", `{"title":"   "}`, "body.title"}, {"title 201 characters", `{"title":"` + strings.Repeat("t", 201) + `"}`, "body.title"},
		{"title object", `{"title":{}}`, "body.title"},
		{"public string", `{"public":"yes"}`, "body.public"}, {"public number", `{"public":1}`, "body.public"},
		{"repository number", `{"selected_repository":1}`, "body.selected_repository"},
		{"branch number", `{"selected_branch":1}`, "body.selected_branch"},
		{"provider number", `{"git_provider":1}`, "body.git_provider"},
		{"git_provider unknown", `{"git_provider":"svn"}`, "body.git_provider"},
		{"git_provider empty", `{"git_provider":""}`, "body.git_provider"},
	} {
		add("update_conversation", c.name, "", c.body, c.loc)
	}
	for _, r := range []string{"acme", "acme/", "/x", "a/b/c", "a/b;rm", "../x", "a/b c", "", "a/b\n", "a/b$(id)", "a/b`id`"} {
		add("update_conversation", "repository "+strconv.Quote(r), "", `{"selected_repository":`+vq(r)+`}`, "body.selected_repository")
	}
	for _, b := range []string{"-x", "a..b", "x.lock", "with space", "a//b", "", strings.Repeat("b", 256)} {
		add("update_conversation", "branch "+strconv.Quote(b[:min(len(b), 20)]), "", `{"selected_branch":`+vq(b)+`}`, "body.selected_branch")
	}
	// Messages.
	for _, r := range []string{"send_message", "add_pending_message"} {
		for _, c := range []struct{ name, body, loc string }{
			{"empty body", ``, "body"}, {"not json", `{"content":[`, "body[*]"}, {"array body", `[]`, "body"},
			{"content missing", `{}`, "body.content"}, {"content missing with role", `{"role":"user"}`, "body.content"},
			{"content empty", `{"content":[]}`, "body.content"}, {"content not list", `{"content":"hi"}`, "body.content"},
			{"content null", `{"content":null}`, "body.content"},
			{"role system", `{"role":"system","content":[` + vText + `]}`, "body.role"},
			{"role assistant", `{"role":"assistant","content":[` + vText + `]}`, "body.role"},
			{"role tool", `{"role":"tool","content":[` + vText + `]}`, "body.role"},
			{"role number", `{"role":1,"content":[` + vText + `]}`, "body.role"},
			{"unknown field", `{"content":[` + vText + `],"bogus":1}`, "body.bogus"},
			{"content type unknown", `{"content":[{"type":"audio"}]}`, "body.content[0].type"},
			{"content text missing", `{"content":[{"type":"text"}]}`, "body.content[0].text"},
			{"secret value in message", `{"content":[{"type":"text","text":"it is value-of-ALICE_TOKEN"}]}`, "body.content[0].text"},
		} {
			add(r, c.name, "", c.body, c.loc)
		}
	}
	add("send_message", "run string", "", `{"content":[`+vText+`],"run":"yes"}`, "body.run")
	add("add_pending_message", "run is not a pending-message field", "", `{"content":[`+vText+`],"run":true}`, "body.run")
	for _, c := range []struct{ name, body, loc string }{
		{"content missing", `{}`, "body.content"}, {"role system", `{"role":"system","content":[` + vText + `]}`, "body.role"},
		{"unknown field", `{"content":[` + vText + `],"x":1}`, "body.x"},
	} {
		cs = append(cs, vCase{route: "add_pending_message", name: "start task: " + c.name,
			params: map[string]string{"conversation_id": "task-" + vTaskA}, body: c.body, loc: c.loc})
	}
	// Settings.
	for _, c := range []struct{ name, body, loc string }{
		{"empty body", ``, "body"}, {"not json", `{"llm_model":`, "body[*]"}, {"array body", `[]`, "body"},
		{"unknown field", `{"bogus":1}`, "body.bogus"}, {"unknown field near a known one", `{"llm_api_key_set":true}`, "body.llm_api_key_set"},
		{"grouping unknown", `{"sandbox_grouping_strategy":"RANDOM"}`, "body.sandbox_grouping_strategy"},
		{"grouping lower case", `{"sandbox_grouping_strategy":"no_grouping"}`, "body.sandbox_grouping_strategy"},
		{"grouping number", `{"sandbox_grouping_strategy":1}`, "body.sandbox_grouping_strategy"},
		{"max conversations 0", `{"max_conversations_per_sandbox":0}`, "body.max_conversations_per_sandbox"},
		{"max conversations -1", `{"max_conversations_per_sandbox":-1}`, "body.max_conversations_per_sandbox"},
		{"max conversations 1001", `{"max_conversations_per_sandbox":1001}`, "body.max_conversations_per_sandbox"},
		{"max conversations string", `{"max_conversations_per_sandbox":"x"}`, "body.max_conversations_per_sandbox"},
		{"max conversations fraction", `{"max_conversations_per_sandbox":1.5}`, "body.max_conversations_per_sandbox"},
		{"max conversations huge", `{"max_conversations_per_sandbox":1e400}`, "body.max_conversations_per_sandbox"},
		{"base url ftp", `{"llm_base_url":"ftp://example.com"}`, "body.llm_base_url"},
		{"base url no scheme", `{"llm_base_url":"example.com/v1"}`, "body.llm_base_url"},
		{"base url no host", `{"llm_base_url":"http://"}`, "body.llm_base_url"},
		{"base url javascript", `{"llm_base_url":"javascript:alert(1)"}`, "body.llm_base_url"},
		{"base url empty", `{"llm_base_url":""}`, "body.llm_base_url"},
		{"base url number", `{"llm_base_url":1}`, "body.llm_base_url"},
		{"api key empty", `{"llm_api_key":""}`, "body.llm_api_key"},
		{"api key 4097", `{"llm_api_key":"` + strings.Repeat("k", 4097) + `"}`, "body.llm_api_key"},
		{"api key number", `{"llm_api_key":1}`, "body.llm_api_key"},
		{"model empty", `{"llm_model":""}`, "body.llm_model"}, {"model blank", `{"llm_model":"  "}`, "body.llm_model"},
		{"model 201", `{"llm_model":"` + strings.Repeat("m", 201) + `"}`, "body.llm_model"},
		{"model list", `{"llm_model":["m"]}`, "body.llm_model"},
		{"policy kind unknown", `{"confirmation_policy":{"kind":"Sometimes"}}`, "body.confirmation_policy.kind"},
		{"policy kind missing", `{"confirmation_policy":{}}`, "body.confirmation_policy.kind"},
		{"policy not object", `{"confirmation_policy":"NeverConfirm"}`, "body.confirmation_policy"},
		{"policy unknown field", `{"confirmation_policy":{"kind":"NeverConfirm","x":1}}`, "body.confirmation_policy.x"},
		{"policy threshold unknown", `{"confirmation_policy":{"kind":"ConfirmRisky","threshold":"EXTREME"}}`, "body.confirmation_policy.threshold"},
		{"policy threshold UNKNOWN", `{"confirmation_policy":{"kind":"ConfirmRisky","threshold":"UNKNOWN"}}`, "body.confirmation_policy.threshold"},
		{"policy threshold number", `{"confirmation_policy":{"kind":"ConfirmRisky","threshold":3}}`, "body.confirmation_policy.threshold"},
		{"policy threshold on NeverConfirm", `{"confirmation_policy":{"kind":"NeverConfirm","threshold":"HIGH"}}`, "body.confirmation_policy.threshold"},
		{"policy confirm_unknown string", `{"confirmation_policy":{"kind":"ConfirmRisky","confirm_unknown":"yes"}}`, "body.confirmation_policy.confirm_unknown"},
		// The OpenHands web frontend's fields keep their types.
		{"language number", `{"language":1}`, "body.language"},
		{"analytics consent string", `{"user_consents_to_analytics":"yes"}`, "body.user_consents_to_analytics"},
		{"budget string", `{"max_budget_per_task":"ten"}`, "body.max_budget_per_task"},
		{"budget negative", `{"max_budget_per_task":-1}`, "body.max_budget_per_task"},
		{"git user name number", `{"git_user_name":5}`, "body.git_user_name"},
		{"disabled skills string", `{"disabled_skills":"a"}`, "body.disabled_skills"},
		{"agent settings diff list", `{"agent_settings_diff":[]}`, "body.agent_settings_diff"},
		{"agent settings llm string", `{"agent_settings_diff":{"llm":"gpt"}}`, "body.agent_settings_diff.llm"},
		{"agent settings llm model number", `{"agent_settings_diff":{"llm":{"model":5}}}`, "body.agent_settings_diff.llm.model"},
		{"agent settings llm base url ftp", `{"agent_settings":{"llm":{"base_url":"ftp://x"}}}`, "body.llm_base_url"},
		{"conversation settings diff string", `{"conversation_settings_diff":"x"}`, "body.conversation_settings_diff"},
	} {
		add("update_settings", c.name, "", c.body, c.loc)
	}
	// LLM profiles: the name, then the body.
	for _, r := range []string{"get_profile", "save_profile", "delete_profile", "activate_profile", "rename_profile"} {
		for _, n := range []string{"bad!name", strings.Repeat("n", 65)} {
			cs = append(cs, vCase{route: r, name: "name " + n[:4], params: map[string]string{"name": n}, loc: "path.name"})
		}
	}
	for _, c := range []struct{ name, body, loc string }{
		{"llm string", `{"llm":"x"}`, "body.llm"}, {"llm model number", `{"llm":{"model":1}}`, "body.llm.model"},
		{"llm model blank", `{"llm":{"model":" "}}`, "body.llm.model"},
		{"llm base url ftp", `{"llm":{"base_url":"ftp://x"}}`, "body.llm.base_url"},
		{"include secrets string", `{"include_secrets":"no"}`, "body.include_secrets"},
		{"unknown field", `{"bogus":1}`, "body.bogus"},
	} {
		add("save_profile", c.name, "", c.body, c.loc)
	}
	for _, c := range []struct{ name, body, loc string }{
		{"empty body", ``, "body"}, {"missing new name", `{}`, "body.new_name"},
		{"new name bad", `{"new_name":"a b"}`, "body.new_name"}, {"new name number", `{"new_name":1}`, "body.new_name"},
	} {
		add("rename_profile", c.name, "", c.body, c.loc)
	}
	// The repository picker (query parameters).
	for _, c := range []struct{ route, name, query, loc string }{
		{"search_git_repositories", "no provider", "", "query.provider"},
		{"search_git_repositories", "unknown provider", "provider=gitbucket", "query.provider"},
		{"search_git_repositories", "limit 0", "provider=github&limit=0", "query.limit"},
		{"search_git_repositories", "sort order unknown", "provider=github&sort_order=name", "query.sort_order"},
		{"search_git_branches", "no repository", "provider=github", "query.repository"},
		{"search_git_branches", "bad repository", "provider=github&repository=x", "query.repository"},
		{"search_git_branches", "limit 101", "provider=github&repository=o/r&limit=101", "query.limit"},
		{"search_git_installations", "no provider", "", "query.provider"},
		{"search_git_installations", "page id text", "provider=github&page_id=x", "query.page_id"},
		{"search_secrets", "limit 0", "limit=0", "query.limit"},
		{"search_skills", "limit 101", "limit=101", "query.limit"},
		{"search_secrets", "page id text", "page_id=x", "query.page_id"},
	} {
		add(c.route, c.name, c.query, "", c.loc)
	}
	// Git provider tokens.
	for _, c := range []struct{ name, body, loc string }{
		{"empty body", ``, "body"}, {"missing tokens", `{}`, "body.provider_tokens"},
		{"unknown provider", `{"provider_tokens":{"gitbucket":{"token":"x"}}}`, "body.provider_tokens.gitbucket"},
		{"token number", `{"provider_tokens":{"github":{"token":5}}}`, "body.provider_tokens.github.token"},
		{"unknown field", `{"provider_tokens":{"github":{"token":"t","bogus":1}}}`, "body.provider_tokens.github.bogus"},
		{"tokens list", `{"provider_tokens":[]}`, "body.provider_tokens"},
	} {
		add("set_git_providers", c.name, "", c.body, c.loc)
	}
	// Secrets.
	for _, c := range []struct{ name, body, loc string }{
		{"empty body", ``, "body"}, {"not json", `{"name":`, "body[*]"}, {"array body", `[]`, "body"},
		{"missing both", `{}`, "body.name"}, {"missing value", `{"name":"X"}`, "body.value"}, {"missing name", `{"value":"v"}`, "body.name"},
		{"name null", `{"name":null,"value":"v"}`, "body.name"}, {"name number", `{"name":1,"value":"v"}`, "body.name"},
		{"value number", `{"name":"X","value":1}`, "body.value"}, {"value object", `{"name":"X","value":{"value":"v"}}`, "body.value"},
		{"name empty", `{"name":"","value":"v"}`, "body.name"}, {"name digit first", `{"name":"1X","value":"v"}`, "body.name"},
		{"name dash", `{"name":"a-b","value":"v"}`, "body.name"}, {"name space", `{"name":"A B","value":"v"}`, "body.name"},
		{"name slash", `{"name":"A/B","value":"v"}`, "body.name"}, {"name NUL", `{"name":"A\u0000B","value":"v"}`, "body.name"},
		{"name 257", `{"name":"` + strings.Repeat("N", 257) + `","value":"v"}`, "body.name"},
		{"name blocked webhook", `{"name":"OH_WEBHOOKS_0_BASE_URL","value":"v"}`, "body.name"},
		{"name blocked LLM key", `{"name":"LLM_API_KEY","value":"v"}`, "body.name"},
		{"name blocked LLM prefix", `{"name":"llm_anything","value":"v"}`, "body.name"},
		{"name blocked PATH", `{"name":"PATH","value":"v"}`, "body.name"},
		{"name blocked path lower case", `{"name":"path","value":"v"}`, "body.name"},
		{"value empty", `{"name":"X","value":""}`, "body.value"},
		{"value over 65536 bytes", `{"name":"X","value":"` + strings.Repeat("v", 65537) + `"}`, "body.value"},
		{"value multi-byte over 65536 bytes", `{"name":"X","value":"` + strings.Repeat("é", 32769) + `"}`, "body.value"},
		{"unknown field", `{"name":"X","value":"v","bogus":1}`, "body.bogus"},
		{"description 1001", `{"name":"X","value":"v","description":"` + strings.Repeat("d", 1001) + `"}`, "body.description"},
		{"description number", `{"name":"X","value":"v","description":1}`, "body.description"},
	} {
		add("create_secret", c.name, "", c.body, c.loc)
	}
	for _, c := range []struct{ name, body, loc string }{
		{"empty body", ``, "body"}, {"not json", `{"value":`, "body[*]"}, {"array body", `[]`, "body"},
		{"value empty", `{"value":""}`, "body.value"}, {"value number", `{"value":1}`, "body.value"},
		{"value over 65536 bytes", `{"value":"` + strings.Repeat("v", 65537) + `"}`, "body.value"},
		{"unknown field", `{"value":"v","name":"OTHER"}`, "body.name"},
		{"description 1001", `{"description":"` + strings.Repeat("d", 1001) + `"}`, "body.description"},
		{"description list", `{"description":["d"]}`, "body.description"},
	} {
		add("update_secret", c.name, "", c.body, c.loc)
	}
	// Users (as an admin) and keys.
	for _, r := range []string{"create_user", "create_key"} {
		for _, c := range []struct{ name, body, loc string }{
			{"empty body", ``, "body"}, {"not json", `{"name":`, "body[*]"}, {"array body", `[]`, "body"},
			{"name missing", `{}`, "body.name"}, {"name null", `{"name":null}`, "body.name"}, {"name number", `{"name":1}`, "body.name"},
			{"name empty", `{"name":""}`, "body.name"}, {"name blank", `{"name":"   "}`, "body.name"},
			{"name 101 characters", `{"name":"` + strings.Repeat("n", 101) + `"}`, "body.name"},
			{"unknown field", `{"name":"n","admin":true}`, "body.admin"},
		} {
			k := vAliceKey
			if r == "create_user" {
				k = vRootKey
			}
			cs = append(cs, vCase{route: r, name: c.name, body: c.body, loc: c.loc, key: k})
		}
	}
	// Webhooks (the sandbox's session key).
	ts := `"2026-01-01T00:00:00.000000Z"`
	for _, c := range []struct{ route, name, body, loc string }{
		{"webhook_events", "not json", `[{"kind":`, "body"},
		{"webhook_events", "object body", `{"not":"an array"}`, "body"},
		{"webhook_events", "empty body", ``, "body"},
		{"webhook_events", "item not object", `[1]`, "body[0]"},
		{"webhook_events", "kind unknown", `[{"kind":"Bogus","id":"x","timestamp":` + ts + `,"source":"agent"}]`, "body[0].kind"},
		{"webhook_events", "unknown field", `[{"kind":"PauseEvent","id":"x","timestamp":` + ts + `,"source":"user","bogus":1}]`, "body[0].bogus"},
		{"webhook_events", "second item bad", `[{"kind":"PauseEvent","id":"x","timestamp":` + ts + `,"source":"user"},{"kind":"PauseEvent","id":"y","timestamp":"soon","source":"user"}]`, "body[1].timestamp"},
		{"webhook_conversations", "no id", `{"nope":1}`, "body.id"},
		{"webhook_conversations", "id number", `{"id":5}`, "body.id"},
		{"webhook_conversations", "array body", `[]`, "body.id"},
		{"webhook_conversations", "not json", `{"id":`, "body.id"},
	} {
		cs = append(cs, vCase{route: c.route, name: c.name, body: c.body, loc: c.loc, key: "sandbox",
			params: map[string]string{"conversation_id": vConvD}})
	}
	return cs
}

// vNoInput are the routes without a body or query parameters.
var vNoInput = map[string]bool{
	"delete_conversation": true, "download_conversation": true, "list_skills": true, "list_hooks": true,
	"pause_sandbox": true, "resume_sandbox": true, "get_settings": true, "list_secrets": true, "get_secret": true,
	"delete_secret": true, "get_me": true, "list_keys": true, "delete_key": true, "revoke_sessions": true,
	// The sign-in pages take HTML forms and answer HTML pages (their
	// refusals are tested in signin_test.go).
	"login_page": true, "login": true, "login_oidc": true, "login_oidc_callback": true, "logout_page": true, "logout": true,
	"get_agent_schema": true, "get_conversation_schema": true, "list_profiles": true, "unset_git_providers": true, "delete_git_providers": true,
	"get_web_client_config": true,
}

func (e *vEnv) send(c vCase) vResp {
	e.t.Helper()
	params := vDefaults()
	for k, v := range c.params {
		params[k] = v
	}
	method, path := vRoute(e.t, c.route, params)
	if c.query != "" {
		path += "?" + c.query
	}
	headers := map[string]string{"Content-Type": "application/json"}
	switch c.key {
	case "sandbox":
		headers["X-Session-API-Key"] = vHookKey
	case "":
		headers["Authorization"] = "Bearer " + vAliceKey
	default:
		headers["Authorization"] = "Bearer " + c.key
	}
	var body []byte
	if c.body != "" {
		body = []byte(c.body)
	}
	return e.do(method, path, body, headers)
}

// vSnapshot is what alice (and bob) have, to check that refused requests
// change nothing.
type vSnapshot struct {
	convs   map[string]string
	tasks   int
	secrets string
	keys    int
	boxes   int
	pending int
	setting string
}

func (e *vEnv) snapshot() vSnapshot {
	e.t.Helper()
	ctx := context.Background()
	s := vSnapshot{convs: map[string]string{}}
	for _, id := range []string{vConvA, vConvA2, vConvB, vConvB2, vConvD} {
		c, err := e.store.GetConversation(ctx, id)
		if err != nil {
			e.t.Fatalf("fixture conversation %s: %v", id, err)
		}
		b, _ := json.Marshal(c)
		s.convs[id] = string(b)
	}
	for _, owner := range []string{"va-alice", "va-bob"} {
		n, err := e.store.CountStartTasks(ctx, owner, acs.StartTaskFilter{})
		if err != nil {
			e.t.Fatal(err)
		}
		s.tasks += n
		secs, err := e.store.ListSecrets(ctx, owner)
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := json.Marshal(secs)
		s.secrets += string(b)
		keys, err := e.store.ListAPIKeys(ctx, owner)
		if err != nil {
			e.t.Fatal(err)
		}
		s.keys += len(keys)
		page, err := e.store.ListSandboxes(ctx, owner, acs.ListOptions{Limit: 100})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, sb := range page.Items {
			s.boxes++
			b, _ := json.Marshal(sb)
			s.setting += string(b) // sandboxes must not change either
		}
		if st, err := e.store.GetSettings(ctx, owner); err == nil {
			b, _ := json.Marshal(st)
			s.setting += string(b)
		}
	}
	for _, k := range []string{vConvA, vConvA2, "task-" + vTaskA, vConvB} {
		m, err := e.store.ListPendingMessages(ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		s.pending += len(m)
	}
	return s
}

func (s vSnapshot) diff(o vSnapshot) string {
	var out []string
	for id, v := range s.convs {
		if o.convs[id] != v {
			out = append(out, fmt.Sprintf("conversation %s changed:\n  %s\n  %s", id, v, o.convs[id]))
		}
	}
	if s.tasks != o.tasks {
		out = append(out, fmt.Sprintf("start tasks %d -> %d", s.tasks, o.tasks))
	}
	if s.secrets != o.secrets {
		out = append(out, "secrets changed")
	}
	if s.keys != o.keys {
		out = append(out, fmt.Sprintf("keys %d -> %d", s.keys, o.keys))
	}
	if s.boxes != o.boxes || s.setting != o.setting {
		out = append(out, "sandboxes or settings changed")
	}
	if s.pending != o.pending {
		out = append(out, fmt.Sprintf("pending messages %d -> %d", s.pending, o.pending))
	}
	return strings.Join(out, "\n")
}

// TestValidationEveryRoute sends invalid input to every route that takes a
// body or query parameters: each is a 422 naming the field, and nothing is
// stored.
func TestValidationEveryRoute(t *testing.T) {
	e := newVEnv(t)
	before := e.snapshot()
	cases := vValidationCases()
	covered := map[string]int{}
	for _, c := range cases {
		covered[c.route]++
		if msg := vCheck422(e.send(c), c.loc); msg != "" {
			t.Errorf("%s: %s: %s", c.route, c.name, msg)
		}
	}
	for _, rt := range api.Routes {
		if !vNoInput[rt.Name] && covered[rt.Name] == 0 {
			t.Errorf("route %s (%s %s) has no validation case", rt.Name, rt.Method, rt.Path)
		}
	}
	if d := before.diff(e.snapshot()); d != "" {
		t.Errorf("refused requests changed the store:\n%s", d)
	}
	// Nothing was started for the isolated user either.
	if n, err := e.store.CountStartTasks(context.Background(), "va-carol", acs.StartTaskFilter{}); err != nil || n != 0 {
		t.Errorf("carol has %d start tasks (%v)", n, err)
	}
	r := e.as(vAliceKey, "GET", "/api/v1/settings", "")
	var st struct {
		UpdatedAt *string `json:"updated_at"`
		KeySet    bool    `json:"llm_api_key_set"`
	}
	if err := json.Unmarshal(r.body, &st); r.status != 200 || err != nil || st.UpdatedAt != nil || st.KeySet {
		t.Errorf("settings after refused updates: %s", r)
	}
	t.Logf("%d invalid requests over %d routes", len(cases), len(covered))
}

// TestValidationAcceptsValidInput checks the accepting side of the rules
// above, with an isolated user: {} and an empty body start a conversation,
// and the boundary values are accepted.
func TestValidationAcceptsValidInput(t *testing.T) {
	e := newVEnv(t)
	for _, body := range []string{`{}`, ``, ` `,
		`{"title":"` + strings.Repeat("é", 200) + `","observability_span_name":"` + strings.Repeat("s", 200) + `"}`,
		`{"observability_metadata":{"s":"x","n":1.5,"b":true,"ss":["a","b"],"ns":[1,2],"bs":[true,false],"empty":[]},"observability_tags":["t"]}`,
		`{"selected_repository":"acme/repo.name_x-1","selected_branch":"feature/x-1.2@y+z","git_provider":"gitlab"}`,
		`{"secrets":{"A_B":"` + strings.Repeat("v", 65536) + `","_x1":"v"}}`,
		`{"initial_message":{"role":"user","content":[{"type":"text","text":"hi"}],"run":false},"agent_type":"plan","public":false,"pr_number":[1,2]}`,
		`{"conversation_id":"` + acs.Dashed(strings.Repeat("9", 32)) + `"}`,
		`{"parent_conversation_id":null,"sandbox_id":null,"plugins":null,"secrets":null,"observability_metadata":null}`,
	} {
		r := e.as(vCarolKey, "POST", "/api/v1/app-conversations", body)
		if r.status != 200 {
			t.Errorf("start %.80q: %s", body, r)
			continue
		}
		var task struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(r.body, &task); err != nil || task.Status != "WORKING" || task.ID == "" {
			t.Errorf("start %.80q: %s", body, r)
		}
	}
	var names []string
	for i := 0; i < 50; i++ {
		names = append(names, fmt.Sprintf(`"S%d":"v"`, i))
	}
	if r := e.as(vCarolKey, "POST", "/api/v1/app-conversations", `{"secrets":{`+strings.Join(names, ",")+`}}`); r.status != 200 {
		t.Errorf("50 secrets: %s", r)
	}
	// Limits that are inclusive.
	for _, q := range []string{"limit=1", "limit=100", "limit=%20100%20"} {
		if r := e.as(vCarolKey, "GET", "/api/v1/app-conversations/search?"+q, ""); r.status != 200 {
			t.Errorf("search %s: %s", q, r)
		}
	}
	for _, b := range []string{`{"max_conversations_per_sandbox":1}`, `{"max_conversations_per_sandbox":1000}`,
		`{"llm_base_url":"https://example.com/v1","llm_model":"m","llm_api_key":"k"}`,
		`{"confirmation_policy":{"kind":"ConfirmRisky","threshold":"MEDIUM","confirm_unknown":false}}`,
		`{"sandbox_grouping_strategy":"ADD_TO_ANY"}`, `{"llm_base_url":null,"llm_api_key":null,"confirmation_policy":null}`} {
		if r := e.as(vCarolKey, "POST", "/api/v1/settings", b); r.status != 200 {
			t.Errorf("settings %s: %s", b, r)
		}
	}
	if r := e.as(vCarolKey, "POST", "/api/v1/secrets", `{"name":"CAROL_1","value":"`+strings.Repeat("v", 65536)+`","description":"`+strings.Repeat("d", 1000)+`"}`); r.status != 201 {
		t.Errorf("secret at the limits: %s", r)
	}
	if r := e.as(vCarolKey, "POST", "/api/v1/keys", `{"name":"`+strings.Repeat("n", 100)+`"}`); r.status != 201 {
		t.Errorf("key name of 100: %s", r)
	}
	if r := e.as(vRootKey, "POST", "/api/v1/users", `{"name":"`+strings.Repeat("n", 100)+`"}`); r.status != 201 {
		t.Errorf("user name of 100: %s", r)
	}
}

// TestValidationPatchLimitsInCharacters: the PATCH title limit is "1 to 200
// characters", like the start request's title, so 200 multi-byte
// characters are accepted.
func TestValidationPatchLimitsInCharacters(t *testing.T) {
	e := newVEnv(t)
	title := strings.Repeat("é", 200) // 400 bytes
	r := e.as(vAliceKey, "PATCH", "/api/v1/app-conversations/"+vConvA2, `{"title":"`+title+`"}`)
	if r.status != 200 {
		t.Errorf("BUG: PATCH title of 200 multi-byte characters: %s (conversations.go counts bytes: len(*title) > 200)", r)
	}
}

// TestValidationPatchBranchNeedsRepository: like a start request, a PATCH
// may not leave a branch or provider on a conversation without a
// repository (the rule the clearing check enforces).
func TestValidationPatchBranchNeedsRepository(t *testing.T) {
	e := newVEnv(t)
	before := e.snapshot()
	var failed []string
	for _, body := range []string{`{"selected_branch":"main"}`, `{"git_provider":"github"}`} {
		r := e.as(vAliceKey, "PATCH", "/api/v1/app-conversations/"+vConvA2, body)
		// The error may name either field of the pair.
		msg := vCheck422(r, "body.selected_repository")
		for _, loc := range []string{"body.selected_branch", "body.git_provider"} {
			if msg != "" && !strings.Contains(msg, "want 422") {
				msg = vCheck422(r, loc)
			}
		}
		if msg != "" {
			failed = append(failed, body+": "+msg)
		}
	}
	if len(failed) > 0 {
		d := before.diff(e.snapshot())
		t.Errorf("BUG: PATCH sets a branch/provider on a conversation without repository:\n%s\n%s", strings.Join(failed, "\n"), d)
	}
}

// TestAuthEveryRoute: every user route needs a valid Bearer key (401 with
// {"detail"} and WWW-Authenticate: Bearer otherwise), every webhook a
// sandbox session key, whatever the body.
func TestAuthEveryRoute(t *testing.T) {
	e := newVEnv(t)
	// A revoked key.
	r := e.as(vAliceKey, "POST", "/api/v1/keys", `{"name":"revoked"}`)
	var k struct{ ID, Key string }
	if err := json.Unmarshal(r.body, &k); r.status != 201 || err != nil {
		t.Fatalf("create key: %s", r)
	}
	if r := e.as(vAliceKey, "DELETE", "/api/v1/keys/"+k.ID, ""); r.status != 200 {
		t.Fatalf("revoke: %s", r)
	}
	if r := e.as(k.Key, "GET", "/api/v1/users/me", ""); r.status != 401 {
		t.Fatalf("revoked key: %s", r)
	}
	before := e.snapshot()
	userAuth := map[string]map[string]string{
		"none":            {},
		"empty header":    {"Authorization": ""},
		"wrong key":       {"Authorization": "Bearer not-a-key"},
		"revoked key":     {"Authorization": "Bearer " + k.Key},
		"empty bearer":    {"Authorization": "Bearer "},
		"blank bearer":    {"Authorization": "Bearer    "},
		"basic":           {"Authorization": "Basic " + vAliceKey},
		"no scheme":       {"Authorization": vAliceKey},
		"key with suffix": {"Authorization": "Bearer " + vAliceKey + "x"},
		"key prefix":      {"Authorization": "Bearer " + vAliceKey[:10]},
		"session header":  {"X-Session-API-Key": vAliceKey},
		"sandbox key":     {"Authorization": "Bearer " + vHookKey},
	}
	sandboxAuth := map[string]map[string]string{
		"none":         {},
		"wrong key":    {"X-Session-API-Key": "not-a-key"},
		"user key":     {"X-Session-API-Key": vAliceKey},
		"bearer user":  {"Authorization": "Bearer " + vAliceKey},
		"bearer key":   {"Authorization": "Bearer " + vHookKey},
		"missing sb":   {"X-Session-API-Key": "va-missing-sandbox-key"},
		"empty header": {"X-Session-API-Key": ""},
	}
	// A MISSING sandbox's key is refused.
	if err := e.store.CreateSandbox(context.Background(), acs.Sandbox{ID: "va-sb-gone", OwnerID: "va-dave", Status: acs.SandboxMissing,
		SessionKeyHash: acs.HashKey("va-missing-sandbox-key"), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	bodies := []string{"", "{}", `{"name":"X","value":"v"}`, "not json"}
	n := 0
	for _, rt := range api.Routes {
		method, path := vRoute(t, rt.Name, vDefaults())
		if rt.Name == "create_sandbox" {
			path += "?sandbox_spec_id=acs-local"
		}
		auths := userAuth
		if rt.Auth == api.AuthSandbox {
			auths = sandboxAuth
			_, path = vRoute(t, rt.Name, map[string]string{"conversation_id": vConvD})
		} else if rt.Auth != api.AuthUser {
			continue
		}
		names := make([]string, 0, len(auths))
		for name := range auths {
			names = append(names, name)
		}
		sort.Strings(names) // a reproducible pairing of bodies and headers
		for _, name := range names {
			h := auths[name]
			headers := map[string]string{"Content-Type": "application/json"}
			for k, v := range h {
				headers[k] = v
			}
			body := bodies[n%len(bodies)]
			n++
			var b []byte
			if body != "" {
				b = []byte(body)
			}
			r := e.do(method, path, b, headers)
			if msg := vCheckDetail(r, 401); msg != "" {
				t.Errorf("%s with %s: %s", rt.Name, name, msg)
				continue
			}
			if rt.Auth == api.AuthUser && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s with %s: 401 without WWW-Authenticate: Bearer (%q)", rt.Name, name, r.header.Get("WWW-Authenticate"))
			}
		}
	}
	if d := before.diff(e.snapshot()); d != "" {
		t.Errorf("unauthenticated requests changed the store:\n%s", d)
	}
	// Unknown routes under /api/v1 are 404 {"detail"}, also without a key.
	for _, p := range []string{"/api/v1/no-such-route", "/api/v1/app-conversations/x/y/z", "/api/v1/"} {
		if msg := vCheckDetail(e.do("GET", p, nil, nil), 404); msg != "" {
			t.Errorf("GET %s: %s", p, msg)
		}
	}
}

// TestAuthBearerSchemeIsCaseInsensitive: RFC 7235 auth schemes are
// case-insensitive (FastAPI's HTTPBearer, which the reference uses, accepts
// "bearer").
func TestAuthBearerSchemeIsCaseInsensitive(t *testing.T) {
	e := newVEnv(t)
	var bad []string
	for _, h := range []string{"bearer " + vAliceKey, "BEARER " + vAliceKey, "Bearer  " + vAliceKey} {
		if r := e.do("GET", "/api/v1/users/me", nil, map[string]string{"Authorization": h}); r.status != 200 {
			bad = append(bad, fmt.Sprintf("%q: %d", h[:8], r.status))
		}
	}
	if len(bad) > 0 {
		t.Errorf("BUG: Authorization scheme matched case-sensitively (api.go Authenticate: strings.CutPrefix(authorization, \"Bearer \")): %v", bad)
	}
}

// TestAuthOtherUsersResourcesAreMissing: alice's valid key on bob's
// resources is 404 (null in batch gets, absent from searches), never 403 or
// 500, and bob's resources are unchanged.
func TestAuthOtherUsersResourcesAreMissing(t *testing.T) {
	e := newVEnv(t)
	before := e.snapshot()
	msgBody := `{"role":"user","content":[` + vText + `]}`
	bob := map[string]string{"conversation_id": vConvB, "sandbox_id": vSandboxB, "name": "BOB_TOKEN", "key_id": vBobKeyID}
	cases := []struct {
		route  string
		params map[string]string
		query  string
		body   string
	}{
		{"update_conversation", nil, "", `{"title":"mine now"}`},
		{"update_conversation", nil, "", `{"public":true}`},
		{"update_conversation", nil, "", `{"bogus":1}`}, // not even validated
		{"delete_conversation", nil, "", ""},
		{"send_message", nil, "", `{"role":"user","content":[` + vText + `],"run":true}`},
		{"send_message", nil, "", `{}`},
		{"download_conversation", nil, "", ""},
		{"read_file", nil, "", ""},
		{"read_file", nil, "file_path=" + vWorkDir + "/README.md", ""},
		{"git_changes", nil, "", ""},
		{"git_diff", nil, "path=README.md", ""},
		{"git_diff", nil, "", ""},
		{"list_skills", nil, "", ""},
		{"list_hooks", nil, "", ""},
		{"add_pending_message", nil, "", msgBody},
		{"add_pending_message", map[string]string{"conversation_id": "task-" + vTaskB}, "", msgBody},
		{"add_pending_message", map[string]string{"conversation_id": "task-" + acs.Dashed(vTaskB)}, "", msgBody},
		{"search_events", nil, "", ""},
		{"search_events", nil, "limit=0", ""},
		{"count_events", nil, "", ""},
		{"get_events", nil, "id=ev-" + vConvB[:4], ""},
		{"pause_sandbox", nil, "", ""},
		{"resume_sandbox", nil, "", ""},
		{"delete_sandbox", nil, "", ""},
		{"delete_sandbox", nil, "sandbox_id=" + vSandboxB, ""},
		{"delete_sandbox_by_query", nil, "sandbox_id=" + vSandboxB, ""},
		{"get_secret", nil, "", ""},
		{"update_secret", nil, "", `{"value":"stolen"}`},
		{"delete_secret", nil, "", ""},
		{"delete_key", nil, "", ""},
	}
	for _, c := range cases {
		params := map[string]string{}
		for k, v := range bob {
			params[k] = v
		}
		for k, v := range c.params {
			params[k] = v
		}
		method, path := vRoute(t, c.route, params)
		if c.query != "" {
			path += "?" + c.query
		}
		// The dashed form of an id is the same conversation.
		for _, p := range []string{path, strings.Replace(path, vConvB, acs.Dashed(vConvB), 1)} {
			r := e.as(vAliceKey, method, p, c.body)
			if msg := vCheckDetail(r, 404); msg != "" {
				t.Errorf("%s %s as another user: %s", method, p, msg)
			}
			if strings.Contains(string(r.body), "value-of-BOB_TOKEN") {
				t.Errorf("%s %s leaks bob's secret: %s", method, p, r)
			}
		}
	}
	// Batch gets answer null for another user's ids.
	for _, c := range []struct{ path, want string }{
		{"/api/v1/app-conversations?ids=" + vConvB, "[null]"},
		{"/api/v1/app-conversations?ids=" + acs.Dashed(vConvB) + "&ids=" + vConvA, ""},
		{"/api/v1/app-conversations/start-tasks?ids=" + vTaskB, "[null]"},
		{"/api/v1/app-conversations/start-tasks?ids=" + acs.Dashed(vTaskB) + "," + vTaskA, ""},
		{"/api/v1/sandboxes?id=" + vSandboxB, "[null]"},
		{"/api/v1/sandboxes?id=" + vSandboxB + "&id=" + vSandboxA, ""},
	} {
		r := e.as(vAliceKey, "GET", c.path, "")
		var items []map[string]any
		if err := json.Unmarshal(r.body, &items); r.status != 200 || err != nil {
			t.Errorf("GET %s: %s", c.path, r)
			continue
		}
		if c.want != "" && string(r.body) != c.want {
			t.Errorf("GET %s: %s, want %s", c.path, r.body, c.want)
		}
		if len(items) == 2 && (items[0] != nil || items[1] == nil) {
			t.Errorf("GET %s: %s (another user's first, alice's second)", c.path, r.body)
		}
	}
	// Searches, counts and lists show only alice's own.
	for _, c := range []struct{ path, forbidden string }{
		{"/api/v1/app-conversations/search?include_sub_conversations=true", vConvB},
		{"/api/v1/app-conversations/start-tasks/search", vTaskB},
		{"/api/v1/sandboxes/search", vSandboxB},
		{"/api/v1/secrets", "BOB_TOKEN"},
		{"/api/v1/keys", vBobKeyID},
	} {
		r := e.as(vAliceKey, "GET", c.path, "")
		if r.status != 200 || strings.Contains(string(r.body), c.forbidden) || strings.Contains(string(r.body), "va-bob") {
			t.Errorf("GET %s shows bob's: %s", c.path, r)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"/api/v1/app-conversations/count", "2"}, {"/api/v1/app-conversations/start-tasks/count", "1"},
		{"/api/v1/app-conversations/start-tasks/count?conversation_id__eq=" + vConvB, "0"},
	} {
		if r := e.as(vAliceKey, "GET", c.path, ""); r.status != 200 || string(r.body) != c.want {
			t.Errorf("GET %s: %s, want %s", c.path, r, c.want)
		}
	}
	// A page token of bob's is not a page of alice's.
	r := e.as(vBobKey, "GET", "/api/v1/app-conversations/search?limit=1", "")
	var page struct {
		NextPageID *string `json:"next_page_id"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil || page.NextPageID == nil {
		t.Fatalf("bob's first page: %s", r)
	}
	if msg := vCheck422(e.as(vAliceKey, "GET", "/api/v1/app-conversations/search?page_id="+url.QueryEscape(*page.NextPageID), ""), "query.page_id"); msg != "" {
		t.Errorf("bob's page token used by alice: %s", msg)
	}
	// Nor is a page token of another listing.
	r = e.as(vAliceKey, "GET", "/api/v1/app-conversations/search?limit=1", "")
	if err := json.Unmarshal(r.body, &page); err != nil || page.NextPageID == nil {
		t.Fatalf("alice's first page: %s", r)
	}
	for _, p := range []string{"/api/v1/sandboxes/search", "/api/v1/app-conversations/start-tasks/search"} {
		if msg := vCheck422(e.as(vAliceKey, "GET", p+"?page_id="+url.QueryEscape(*page.NextPageID), ""), "query.page_id"); msg != "" {
			t.Errorf("%s with a conversations page token: %s", p, msg)
		}
	}
	// Starting a child of bob's conversation is refused at the field.
	if msg := vCheck422(e.as(vAliceKey, "POST", "/api/v1/app-conversations", `{"parent_conversation_id":"`+acs.Dashed(vConvB)+`"}`),
		"body.parent_conversation_id"); msg != "" {
		t.Errorf("child of bob's conversation: %s", msg)
	}
	if d := before.diff(e.snapshot()); d != "" {
		t.Errorf("another user's requests changed the store:\n%s", d)
	}
	// Bob's key, secret and conversation still work for bob.
	for _, p := range []string{"/api/v1/secrets/BOB_TOKEN", "/api/v1/conversation/" + vConvB + "/events/count"} {
		if r := e.as(vBobKey, "GET", p, ""); r.status != 200 {
			t.Errorf("bob's own %s: %s", p, r)
		}
	}
}

// vGarbage are values for query parameters and path segments.
var vGarbage = []string{"", " ", "0", "-1", "101", "1e309", "99999999999999999999", "-9223372036854775809", "NaN", "true",
	"maybe", "null", "\x00", "a\x00b", "\xff\xfe", "\xc0\xaf", "../../etc/passwd", "..", "%", "%zz", "'; DROP TABLE x;--",
	"<script>", "💥", "\u202e", strings.Repeat("x", 5000), "2026-02-30", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
	"2026-01-01T00:00:00+25:00", "2026-01-01T00:00:00.9999999999Z", "ConversationStateUpdateEvent", "TIMESTAMP_DESC",
	"task-", "task-" + strings.Repeat("z", 32), "{}", "[]", ",,,,", acs.Dashed(strings.Repeat("f", 32))}

// vQueryParams are the parameter names the routes read, plus unknown ones.
var vQueryParams = []string{"limit", "page_id", "ids", "id", "kind", "kind__eq", "source", "body", "sort_order",
	"timestamp__gte", "timestamp__lt", "created_at__gte", "created_at__lt", "updated_at__gte", "updated_at__lt",
	"include_sub_conversations", "title__contains", "sandbox_id__eq", "conversation_id__eq", "sandbox_spec_id",
	"sandbox_id", "file_path", "path", "bogus", "", "limit[]", "a;b"}

// vSamples are plausible bodies per route; the fuzz loop breaks them.
var vSamples = map[string]string{
	"start_conversation":        `{"title":"t","selected_repository":"a/b","selected_branch":"main","initial_message":{"role":"user","content":[{"type":"text","text":"hi"}],"run":false},"secrets":{"A_B":"v"},"observability_metadata":{"k":["v"]},"pr_number":[1],"public":true,"plugins":[{"source":"x"}]}`,
	"update_conversation":       `{"title":"t","public":true,"selected_repository":"a/b","selected_branch":"main","git_provider":"github"}`,
	"send_message":              `{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","image_urls":["http://x/y.png"]}],"run":true}`,
	"add_pending_message":       `{"role":"user","content":[{"type":"text","text":"hi"}]}`,
	"update_settings":           `{"sandbox_grouping_strategy":"NO_GROUPING","llm_model":"m","llm_base_url":"http://x","llm_api_key":"k","confirmation_policy":{"kind":"ConfirmRisky","threshold":"HIGH","confirm_unknown":true},"max_conversations_per_sandbox":5}`,
	"create_secret":             `{"name":"N","value":"v","description":"d"}`,
	"update_secret":             `{"value":"v","description":"d"}`,
	"create_user":               `{"name":"n"}`,
	"create_key":                `{"name":"n"}`,
	"webhook_events":            `[{"kind":"PauseEvent","id":"p1","timestamp":"2026-01-01T00:00:00Z","source":"user"},{"kind":"ConversationStateUpdateEvent","id":"s1","timestamp":"2026-01-01T00:00:01Z","key":"execution_status","value":"running"}]`,
	"webhook_conversations":     `{"id":"` + vConvD + `","execution_status":"idle","title":"x","updated_at":"2026-01-01T00:00:00Z","tags":{"a":"b"}}`,
	"stream_start_conversation": `{"title":"t","selected_repository":"a/b","initial_message":{"role":"user","content":[{"type":"text","text":"hi"}]},"pr_number":[1]}`,
}

// vBreakBody returns a malformed variant of sample.
func vBreakBody(rng *rand.Rand, sample string, i int) []byte {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	field := func(v string) string {
		// Replace the first value of the sample (or wrap v in an object).
		if j := strings.Index(sample, `":`); j > 0 && strings.HasPrefix(sample, "{") {
			k := j + 2
			end := k
			depth, inStr := 0, false
			for ; end < len(sample); end++ {
				c := sample[end]
				if inStr {
					if c == '\\' {
						end++
					} else if c == '"' {
						inStr = false
					}
					continue
				}
				switch c {
				case '"':
					inStr = true
				case '{', '[':
					depth++
				case '}', ']':
					if depth == 0 {
						return sample[:k] + v + sample[end:]
					}
					depth--
				case ',':
					if depth == 0 {
						return sample[:k] + v + sample[end:]
					}
				}
			}
		}
		return `{"x":` + v + `}`
	}
	confusions := []string{`[]`, `{}`, `1`, `-1.5e3`, `true`, `"s"`, `[[[]]]`, `{"a":{"b":[1,"x",null]}}`}
	switch i % 20 {
	case 0:
		return []byte(sample[:rng.IntN(len(sample))]) // truncated
	case 1:
		return []byte(deep("[", "]", 1000))
	case 2:
		return []byte(field(deep(`{"a":`, "}", 1000)))
	case 3:
		return []byte(field("1e999999"))
	case 4:
		return []byte(field("123456789012345678901234567890123456789"))
	case 5:
		return []byte(field(`"` + "\xff\xfe\xc0\xaf" + `"`))
	case 6:
		return []byte(field(`"a\u0000b"`))
	case 7:
		return []byte(sample[:len(sample)/2] + "\x00" + sample[len(sample)/2:])
	case 8:
		b := make([]byte, 1+rng.IntN(200))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		return b
	case 9:
		return []byte(field(confusions[rng.IntN(len(confusions))]))
	case 10:
		return []byte([]string{`null`, `[]`, `"x"`, `1`, `true`, `[{}]`, `{}{}`, `{"a":1,"a":2}`}[rng.IntN(8)])
	case 11:
		return []byte(field(`"` + strings.Repeat("x", 1<<20) + `"`)) // 1 MiB string
	case 12:
		return []byte(strings.Replace(sample, `"`, `'`, -1))
	case 13:
		return []byte(field(`-0.0e-400`))
	case 14:
		return []byte(field(`"\ud800\udc00\ud800"`)) // lone surrogate
	case 15:
		var b strings.Builder
		b.WriteString(sample[:len(sample)-1])
		for j := 0; j < 2000; j++ {
			fmt.Fprintf(&b, `,"k%d":%d`, j, j)
		}
		b.WriteString("}")
		return []byte(b.String())
	case 16:
		return []byte(field(`[` + strings.TrimSuffix(strings.Repeat(`"x",`, 10000), ",") + `]`))
	case 17:
		// Flip a random byte.
		b := []byte(sample)
		b[rng.IntN(len(b))] = byte(rng.IntN(256))
		return b
	case 18:
		return []byte("\xef\xbb\xbf" + sample) // byte order mark
	default:
		return []byte(field(`{"` + strings.Repeat("k", 70000) + `":1}`))
	}
}

// vBreakQuery returns a random malformed query string.
func vBreakQuery(rng *rand.Rand) string {
	var parts []string
	for n := 1 + rng.IntN(4); n > 0; n-- {
		k := vQueryParams[rng.IntN(len(vQueryParams))]
		v := vGarbage[rng.IntN(len(vGarbage))]
		switch rng.IntN(4) {
		case 0:
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		case 1:
			// Raw, so possibly an invalid escape; bytes no client can put
			// on a request line are escaped.
			parts = append(parts, badinput.RawEscape(k)+"="+badinput.RawEscape(v))
		case 2:
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v)+"&"+url.QueryEscape(k)+"="+url.QueryEscape(v+v))
		default:
			parts = append(parts, url.QueryEscape(k))
		}
	}
	return strings.Join(parts, "&")
}

// vPage says whether a route is an HTML page (the sign-in pages): its
// refusals are pages, not {"detail"} bodies.
func vPage(rt api.Route) bool { return !strings.HasPrefix(rt.Path, "/api/") }

// TestFuzzEveryRoute sends malformed bodies, query strings and path
// segments to every route: nothing is a 5xx and nothing panics.
func TestFuzzEveryRoute(t *testing.T) {
	e := newVEnv(t)
	start := time.Now()
	fail := func(rt api.Route, method, path string, body []byte, r vResp) {
		t.Helper()
		b := string(body)
		if len(b) > 200 {
			b = b[:200] + "…"
		}
		p := path
		if len(p) > 300 {
			p = p[:300] + "…"
		}
		t.Errorf("%s: %s %s body %q: %s", rt.Name, method, p, b, r)
	}
	total := 0
	for ri, rt := range api.Routes {
		rng := rand.New(rand.NewPCG(uint64(ri), 42))
		sample := vSamples[rt.Name]
		if sample == "" {
			sample = `{"a":"b","c":[1,2],"d":{"e":true}}`
		}
		for i := 0; i < 20; i++ {
			params := vDefaults()
			params["conversation_id"] = vConvA2
			if rt.Auth == api.AuthSandbox {
				params["conversation_id"] = vConvD
			}
			destructive := strings.HasPrefix(rt.Name, "delete_")
			if destructive || i%3 == 2 {
				g := vGarbage[rng.IntN(len(vGarbage))]
				if g == "" || g == "." || g == ".." {
					g = "x" + g
				}
				for k := range params {
					params[k] = g
				}
			}
			method, path := vRoute(t, rt.Name, params)
			q := vBreakQuery(rng)
			if rt.Name == "create_sandbox" {
				q += "&sandbox_spec_id=no-such-spec" // never start a sandbox
			}
			if rt.Name == "delete_sandbox_by_query" && strings.Contains(q, "sandbox_id="+url.QueryEscape(vSandboxA)) {
				q = ""
			}
			path += "?" + q
			body := vBreakBody(rng, sample, i+ri)
			if vSamples[rt.Name] == "" && len(body) > 64<<10 {
				// A route that does not read its body: the server closes
				// the connection under a client still writing a large one.
				body = body[:64<<10]
			}
			headers := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + vAliceKey}
			if rt.Name == "create_user" {
				headers["Authorization"] = "Bearer " + vRootKey
			}
			if rt.Auth == api.AuthSandbox {
				headers = map[string]string{"Content-Type": "application/json", "X-Session-API-Key": vHookKey}
			}
			req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
			if err != nil {
				// An invalid URL the client will not send; send it escaped.
				req, err = http.NewRequest(method, e.srv.URL+strings.ReplaceAll(url.PathEscape(path), "%2F", "/"), bytes.NewReader(body))
				if err != nil {
					t.Fatalf("%s: %v", rt.Name, err)
				}
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			res, err := e.client.Do(req)
			if err != nil {
				t.Errorf("%s: %s %.200s: %v", rt.Name, method, path, err)
				continue
			}
			total++
			var r vResp
			r.status, r.header = res.StatusCode, res.Header
			if rt.Name == "stream_start_conversation" && res.StatusCode == 200 {
				res.Body.Close() // a valid start streams until READY: leave
			} else {
				r.body, _ = io.ReadAll(res.Body)
				res.Body.Close()
			}
			if r.status >= 500 {
				fail(rt, method, path, body, r)
			}
			switch {
			case r.status == 422:
				if msg := vCheck422(r, "body"); msg != "" && !strings.Contains(msg, "no error at") {
					t.Errorf("%s: malformed 422: %s", rt.Name, msg)
				}
			case r.status >= 400 && r.body != nil && !vPage(rt):
				if msg := vCheckDetail(r, r.status); msg != "" {
					t.Errorf("%s: %s %.200s: %s", rt.Name, method, path, msg)
				}
			}
		}
		// Other methods on the route's path.
		_, path := vRoute(t, rt.Name, vDefaults())
		for _, m := range []string{"PUT", "TRACE", "OPTIONS", "HEAD", "CONNECT"} {
			if m == rt.Method {
				continue
			}
			r := e.do(m, path, []byte("{"), map[string]string{"Authorization": "Bearer " + vAliceKey})
			total++
			if r.status >= 500 {
				fail(rt, m, path, nil, r)
			}
			if m != "HEAD" && r.status >= 400 && r.status != 422 && !vPage(rt) { // 422: another route at the path
				if msg := vCheckDetail(r, r.status); msg != "" {
					t.Errorf("%s: %s %s: %s", rt.Name, m, path, msg)
				}
			}
		}
	}
	// A body over the limit is a 413 (one route: each costs a second, and
	// much more under -race on a loaded machine: the client waits longer).
	huge := bytes.Repeat([]byte(" "), 32<<20+1)
	e.client.Timeout = 2 * time.Minute
	for _, name := range []string{"start_conversation"} {
		method, path := vRoute(t, name, map[string]string{"conversation_id": vConvD})
		h := map[string]string{"Authorization": "Bearer " + vAliceKey, "X-Session-API-Key": vHookKey}
		if r := e.do(method, path, huge, h); r.status != 413 {
			t.Errorf("%s with a body over 32 MiB: %s", name, r)
		}
		total++
	}
	// The server still answers.
	if r := e.as(vAliceKey, "GET", "/api/v1/users/me", ""); r.status != 200 {
		t.Errorf("after the fuzz: %s", r)
	}
	t.Logf("%d requests in %v", total, time.Since(start))
}

// TestFuzzManyKeysIsNotQuadratic: an object with many keys (well under the
// 32 MiB body limit) is parsed in linear time. Four times the keys must not
// cost sixteen times the time.
func TestFuzzManyKeysIsNotQuadratic(t *testing.T) {
	e := newVEnv(t)
	body := func(n int) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%07d":1`, i)
		}
		b.WriteString(`}`)
		return b.String()
	}
	// Each size is refused naming the first key. Whether the parse stays
	// linear is measured, not timed here: BenchmarkParseManyKeys
	// (events/strictjson) reports ns/key for 4k and 16k keys.
	for _, n := range []int{4000, 16000} {
		r := e.as(vCarolKey, "POST", "/api/v1/app-conversations", body(n))
		if msg := vCheck422(r, "body.k0000000"); msg != "" {
			t.Fatalf("%d unknown keys: %s", n, msg)
		}
	}
}

// TestValidationExplicitNullClears: PATCH and POST /settings document that
// an explicit null clears a field. Clearing the repository while a branch
// stays is refused, and refused requests change nothing.
func TestValidationExplicitNullClears(t *testing.T) {
	e := newVEnv(t)
	var bugs []string
	path := "/api/v1/app-conversations/" + vConvA2
	if r := e.as(vAliceKey, "PATCH", path, `{"selected_repository":"acme/x","selected_branch":"b","git_provider":"github","public":true}`); r.status != 200 {
		t.Fatalf("set: %s", r)
	}
	r := e.as(vAliceKey, "PATCH", path, `{"selected_repository":null,"selected_branch":null,"git_provider":null,"public":null}`)
	var c map[string]any
	if err := json.Unmarshal(r.body, &c); r.status != 200 || err != nil {
		t.Fatalf("clear: %s", r)
	}
	for _, f := range []string{"selected_repository", "selected_branch", "git_provider", "public"} {
		if c[f] != nil {
			bugs = append(bugs, fmt.Sprintf("PATCH {%q:null} left %v", f, c[f]))
		}
	}
	before := e.snapshot()
	for _, tc := range []struct{ body, loc string }{
		{`{"selected_repository":null}`, "body.selected_repository"},
		{`{"selected_repository":null,"selected_branch":"dev","git_provider":null}`, "body.selected_repository"},
		{`{"selected_repository":null,"selected_branch":null}`, "body.selected_repository"},
		{`{"title":null}`, "body.title"},
	} {
		if msg := vCheck422(e.as(vAliceKey, "PATCH", "/api/v1/app-conversations/"+vConvA, tc.body), tc.loc); msg != "" {
			bugs = append(bugs, fmt.Sprintf("PATCH %s: %s", tc.body, msg))
		}
	}
	if d := before.diff(e.snapshot()); d != "" {
		bugs = append(bugs, "refused PATCHes changed the conversation: "+d)
	}
	// Settings.
	if r := e.as(vCarolKey, "POST", "/api/v1/settings", `{"llm_model":"m","llm_base_url":"http://x","llm_api_key":"k","confirmation_policy":{"kind":"AlwaysConfirm"}}`); r.status != 200 {
		t.Fatalf("settings: %s", r)
	}
	r = e.as(vCarolKey, "POST", "/api/v1/settings", `{"llm_model":null,"llm_base_url":null,"llm_api_key":null,"confirmation_policy":null}`)
	var st map[string]any
	if err := json.Unmarshal(r.body, &st); r.status != 200 || err != nil {
		t.Fatalf("settings clear: %s", r)
	}
	for _, f := range []string{"llm_model", "llm_base_url", "confirmation_policy"} {
		if st[f] != nil {
			bugs = append(bugs, fmt.Sprintf("settings {%q:null} left %v", f, st[f]))
		}
	}
	if st["llm_api_key_set"] != false {
		bugs = append(bugs, "settings {\"llm_api_key\":null} left llm_api_key_set true")
	}
	if len(bugs) > 0 {
		t.Errorf("BUG: explicit null is ignored (strictjson decodes null into a nullable json.RawMessage as nil, "+
			"so optString in conversations.go never sees \"null\"):\n%s", strings.Join(bugs, "\n"))
	}
}

// TestValidationWebhookEventIDLength: an event id longer than the store can
// key is refused with a 422 at the field, not a 500 (which the agent
// server's pusher retries forever, holding back every later event).
func TestValidationWebhookEventIDLength(t *testing.T) {
	e := newVEnv(t)
	id := strings.Repeat("x", 40000)
	body := `[{"kind":"PauseEvent","id":"` + id + `","timestamp":"2026-01-01T00:00:00Z","source":"user"}]`
	r := e.do("POST", "/api/v1/webhooks/events/"+vConvD, []byte(body), map[string]string{"X-Session-API-Key": vHookKey})
	if r.status >= 500 {
		e.logs.clear()
		t.Fatalf("BUG: webhook event with a 40000-character id: %s (boltstore PutEvents: bbolt \"key too large\" "+
			"above 32768 bytes; the event id has no length limit)", r)
	}
	if msg := vCheck422(r, "body[0].id"); msg != "" {
		t.Error(msg)
	}
}

// TestValidationSpecPagePastTheEnd: a page_id far past the end is an empty
// last page (or a 422), never a page pointing at a negative offset.
func TestValidationSpecPagePastTheEnd(t *testing.T) {
	e := newVEnv(t)
	var bad []string
	for _, q := range []string{"page_id=5", "page_id=9223372036854775807", "page_id=9223372036854775807&limit=1",
		"page_id=9223372036854775700"} {
		r := e.as(vAliceKey, "GET", "/api/v1/sandbox-specs/search?"+q, "")
		if r.status == 422 {
			if msg := vCheck422(r, "query.page_id"); msg != "" {
				t.Errorf("%s: %s", q, msg)
			}
			continue
		}
		var page struct {
			Items      []any   `json:"items"`
			NextPageID *string `json:"next_page_id"`
		}
		if err := json.Unmarshal(r.body, &page); r.status != 200 || err != nil {
			t.Errorf("%s: %s", q, r)
			continue
		}
		if len(page.Items) != 0 || page.NextPageID != nil {
			bad = append(bad, q+": "+string(r.body))
		}
	}
	if len(bad) > 0 {
		t.Errorf("BUG: sandbox-specs search past the end (sandboxes.go searchSandboxSpecs: offset+limit overflows):\n%s",
			strings.Join(bad, "\n"))
	}
}
