package main_test

// Bad input against a real `acs serve` with real sandboxes behind it: every
// V1 route is sent the badinput corpus, so the routes that proxy to an agent
// server are exercised end to end (TestFuzzServeEveryRoute), and a second
// user's key is tried on every route naming the first user's conversation,
// sandbox, start task, event, secret or key, whose answer must be the one a
// non-existent id gets, byte for byte (TestFuzzServeTenancyMatrix).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/badinput"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/v1wire"
)

// fzServe is an `acs serve` with two users, alice and bob, each with a ready
// conversation in a running sandbox. Alice also has a secret, a second key
// and events.
type fzServe struct {
	*acsServe
	client *http.Client
	tally  badinput.Tally

	alice, bob     string // API keys
	convA, convB   string // conversation ids (hex)
	sbA, sbB       string // their sandboxes
	hookA, hookB   string // the sandboxes' session keys
	taskA          string // alice's start task
	keyIDA         string // alice's second key
	eventA         string // an event of alice's conversation
	secretA        string // alice's secret's name
	unknownSandbox string // a sandbox id of alice's shape that names nothing
}

func newFzServe(t *testing.T) *fzServe {
	t.Helper()
	llm := llmtest.New(llmtest.Reply{Repeat: true, Text: "ok"})
	t.Cleanup(llm.Close)
	// One running sandbox per user: a start that needs another is refused
	// at once; clones go nowhere.
	s := startServe(t, t.TempDir(), llm.URL, "ACS_MAX_RUNNING_SANDBOXES=1", "ACS_GIT_HOST=http://127.0.0.1:9")
	f := &fzServe{acsServe: s, client: &http.Client{Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(f.client.CloseIdleConnections)
	f.alice, f.bob = s.newUser("alice"), s.newUser("bob")
	tk := s.mustStart(f.alice, map[string]any{"title": "Alice's", "initial_message": msg("hello from alice")})
	f.convA, f.sbA, f.taskA = strings.ReplaceAll(*tk.AppConversationID, "-", ""), *tk.SandboxID, tk.ID
	tk = s.mustStart(f.bob, map[string]any{"title": "Bob's"})
	f.convB, f.sbB = strings.ReplaceAll(*tk.AppConversationID, "-", ""), *tk.SandboxID
	f.hookA = deref(s.sandbox(f.alice, f.sbA).SessionAPIKey)
	f.hookB = deref(s.sandbox(f.bob, f.sbB).SessionAPIKey)
	f.unknownSandbox = fzOther(f.sbA)
	f.secretA = "ALICE_TOKEN"
	alice := s.api(f.alice)
	description := "d"
	_, err := alice.CreateSecret(t.Context(), &v1wire.CreateSecretRequest{Name: f.secretA, Value: "alice-secret-value-0123", Description: &description})
	s.ok(err, 201, "create alice's secret")
	k, err := alice.CreateKey(t.Context(), "second")
	s.ok(err, 201, "create alice's second key")
	f.keyIDA = k.ID
	// The agent's message has reached the store.
	testwait.For(t, 60*time.Second, "alice's events", func() bool {
		page, err := alice.SearchEvents(t.Context(), f.convA, client.Filter{"kind": {"MessageEvent"}, "source": {"agent"}})
		s.ok(err, 200, "search alice's events")
		if len(page.Items) == 0 {
			return false
		}
		f.eventA = page.Items[0].EventBase().ID
		return true
	})
	return f
}

// fzOther returns an id of id's shape (hex digits shifted) that names
// nothing.
func fzOther(id string) string {
	b := []byte(id)
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			b[i] = "789abcdef0"[c-'0']
		case c >= 'a' && c <= 'f':
			b[i] = "123456"[c-'a']
		}
	}
	return string(b)
}

// fzReq is one request: target is raw (as on the request line).
type fzReq struct {
	what, method, target string
	body                 []byte
	header               map[string]string // replaces the default headers when set
}

// send sends r with the given default headers and returns the answer; it
// records the answer and any breach of badinput.Check in f.tally.
func (f *fzServe) send(r fzReq, defaults map[string]string) (int, http.Header, []byte) {
	req, err := http.NewRequest(r.method, f.url+"/", bytes.NewReader(r.body))
	if err != nil {
		f.tally.Fail(fmt.Sprintf("%s: %v", r.what, err))
		return 0, nil, nil
	}
	if r.body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	path, query, _ := strings.Cut(r.target, "?")
	req.URL.Opaque, req.URL.RawQuery = path, query
	h := defaults
	if r.header != nil {
		h = r.header
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := f.client.Do(req)
	if err != nil {
		f.tally.Add(0)
		f.tally.Fail(fmt.Sprintf("%s: %s %s: no answer: %v", r.what, r.method, badinput.Short(r.target, 200), err))
		return 0, nil, nil
	}
	defer res.Body.Close()
	var body []byte
	if res.StatusCode == 200 && strings.HasSuffix(path, "/stream-start") {
		body = []byte("(stream)") // a valid start streams until READY
	} else {
		body, _ = io.ReadAll(res.Body)
	}
	f.tally.Add(res.StatusCode)
	check := badinput.Check
	if !strings.HasPrefix(path, "/api/") {
		check = fzPageCheck
	}
	if msg := check(r.method, res.StatusCode, res.Header, body); msg != "" {
		f.tally.Fail(fmt.Sprintf("%s: %s %s body %q: %s: %s", r.what, r.method, badinput.Short(r.target, 200),
			badinput.Short(string(r.body), 120), msg, badinput.Short(string(body), 300)))
	}
	return res.StatusCode, res.Header, body
}

// fzPageCheck is badinput.Check for the sign-in pages, whose refusals are
// HTML pages rather than {"detail"} bodies: no 5xx.
func fzPageCheck(method string, status int, header http.Header, body []byte) string {
	if status >= 500 {
		return fmt.Sprintf("server error %d", status)
	}
	return ""
}

// fzV1Params are the query parameters each V1 route reads.
var fzV1Params = map[string][]string{
	"get_start_tasks":         {"ids"},
	"search_start_tasks":      {"created_at__gte", "conversation_id__eq", "sort_order", "limit", "page_id"},
	"count_start_tasks":       {"created_at__gte", "conversation_id__eq"},
	"get_conversations":       {"ids"},
	"search_conversations":    {"created_at__gte", "created_at__lt", "updated_at__gte", "updated_at__lt", "include_sub_conversations", "title__contains", "sandbox_id__eq", "limit", "page_id"},
	"count_conversations":     {"created_at__gte", "updated_at__lt", "include_sub_conversations", "title__contains", "sandbox_id__eq"},
	"read_file":               {"file_path"},
	"git_changes":             {"path"},
	"git_diff":                {"path"},
	"search_events":           {"kind", "kind__eq", "source", "body", "timestamp__gte", "timestamp__lt", "page_id", "limit", "sort_order"},
	"count_events":            {"kind", "kind__eq", "source", "body", "timestamp__gte", "timestamp__lt"},
	"get_events":              {"id"},
	"create_sandbox":          {"sandbox_spec_id"},
	"search_sandboxes":        {"limit", "page_id"},
	"get_sandboxes":           {"id"},
	"delete_sandbox":          {"sandbox_id"},
	"delete_sandbox_by_query": {"sandbox_id"},
	"search_sandbox_specs":    {"limit", "page_id"},
	"get_sandbox_specs":       {"id"},
}

// fzV1Proxied are the routes that call the conversation's agent server:
// each bad value costs a round trip there, so they get badinput.Few.
var fzV1Proxied = map[string]bool{"read_file": true, "git_changes": true, "git_diff": true, "list_skills": true,
	"list_hooks": true, "download_conversation": true, "send_message": true, "update_conversation": true, "add_pending_message": true}

// fzV1Destructive are the routes that would remove or stop alice's
// fixtures: they get only ids that name nothing, then one real call at the
// end.
var fzV1Destructive = map[string]bool{"delete_conversation": true, "delete_sandbox": true, "delete_sandbox_by_query": true,
	"pause_sandbox": true, "delete_secret": true, "delete_key": true}

func (f *fzServe) samples() map[string]string {
	text := `{"type":"text","text":"hi"}`
	return map[string]string{
		"start_conversation":        `{"title":"t","initial_message":{"role":"user","content":[` + text + `],"run":false},"secrets":{"A_B":"fuzz-start-secret-1"},"observability_metadata":{"k":["v"]},"pr_number":[1],"public":true,"llm_model":"m","system_message_suffix":"s"}`,
		"stream_start_conversation": `{"title":"t","selected_repository":"a/b","initial_message":{"role":"user","content":[` + text + `]},"pr_number":[1]}`,
		"update_conversation":       `{"title":"t","public":true}`,
		"send_message":              `{"role":"user","content":[` + text + `,{"type":"image","image_urls":["http://127.0.0.1:9/y.png"]}],"run":false}`,
		"add_pending_message":       `{"role":"user","content":[` + text + `]}`,
		"update_settings":           `{"sandbox_grouping_strategy":"ADD_TO_ANY","llm_model":"m","llm_base_url":"http://127.0.0.1:9","llm_api_key":"k","confirmation_policy":{"kind":"ConfirmRisky","threshold":"HIGH","confirm_unknown":true},"max_conversations_per_sandbox":5}`,
		"create_secret":             `{"name":"N","value":"fuzz-secret-value-2","description":"d"}`,
		"update_secret":             `{"value":"fuzz-secret-value-3","description":"d"}`,
		"create_user":               `{"name":"n"}`,
		"create_key":                `{"name":"n"}`,
		"save_profile":              `{"llm":{"model":"openai/m","base_url":"http://127.0.0.1:9","api_key":"fuzz-profile-key-4"}}`,
		"rename_profile":            `{"new_name":"renamed"}`,
		"webhook_events":            `[{"kind":"PauseEvent","id":"p1","timestamp":"2026-01-01T00:00:00Z","source":"user"},{"kind":"ConversationStateUpdateEvent","id":"s1","timestamp":"2026-01-01T00:00:01Z","source":"environment","key":"execution_status","value":"idle"}]`,
		"webhook_conversations":     `{"id":"` + f.convA + `","execution_status":"idle","title":"x","updated_at":"2026-01-01T00:00:00Z","tags":{"a":"b"}}`,
	}
}

// validV1Query is a valid value of a parameter that routes require, so that
// another bad parameter is what is judged.
func (f *fzServe) validV1Query(rt, name string) string {
	switch {
	case name == "ids" && rt == "get_start_tasks":
		return f.taskA
	case name == "ids":
		return f.convA
	case name == "id" && rt == "get_events":
		return f.eventA
	case name == "id" && rt == "get_sandboxes":
		return f.sbA
	case name == "file_path":
		return "README.md"
	}
	return ""
}

// fzV1PerRoute is how many requests of the corpus (besides the credential
// checks) each V1 route gets: an evenly spaced, fixed subset
// (badinput.Spread).
const fzV1PerRoute = 30

// TestFuzzServeEveryRoute sends the badinput corpus to every V1 route of a
// real `acs serve` whose user has a running sandbox, so the routes that
// proxy to the agent server carry the bad input there. No answer is a 5xx
// (the sandbox is healthy: no agent-server failure is expected either),
// every error is JSON with a detail, every request is answered, and alice's
// fixtures survive. It logs the request count and status histogram.
func TestFuzzServeEveryRoute(t *testing.T) {
	f := newFzServe(t)
	started := time.Now()
	samples := f.samples()
	own := map[string]string{"conversation_id": f.convA, "sandbox_id": f.sbA, "name": f.secretA, "key_id": f.keyIDA}
	nothing := map[string]string{"conversation_id": fzOther(f.convA), "sandbox_id": f.unknownSandbox, "name": "NO_SUCH_SECRET", "key_id": fzOther(f.keyIDA)}
	destructive := map[string]bool{}
	for _, rt := range api.Routes {
		if fzV1Destructive[rt.Name] {
			destructive[rt.Method+" "+rt.Path] = true
		}
	}
	fill := func(path string, params map[string]string) string {
		for k, v := range params {
			path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
		}
		return path
	}
	for _, rt := range api.Routes {
		t.Run(rt.Name, func(t *testing.T) {
			defaults := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + f.alice}
			switch {
			case rt.Auth == api.AuthSandbox:
				defaults = map[string]string{"Content-Type": "application/json", "X-Session-API-Key": f.hookA}
			case rt.Name == "create_user":
				defaults["Authorization"] = "Bearer " + apiKey
			}
			params := own
			if fzV1Destructive[rt.Name] {
				params = nothing
			}
			target := fill(rt.Path, params)
			values := badinput.Values
			if fzV1Proxied[rt.Name] {
				values = badinput.Few
			}
			var reqs []fzReq
			add := func(what, method, target string, body []byte) {
				reqs = append(reqs, fzReq{what: rt.Name + ": " + what, method: method, target: target, body: body})
			}
			sample := samples[rt.Name]
			var body []byte
			if sample != "" {
				body = []byte(sample)
			}
			// Query parameters, one bad at a time among valid required ones.
			for _, p := range append(fzV1Params[rt.Name], "bogus") {
				base := target + "?"
				for _, o := range fzV1Params[rt.Name] {
					if v := f.validV1Query(rt.Name, o); o != p && v != "" {
						base += url.QueryEscape(o) + "=" + url.QueryEscape(v) + "&"
					}
				}
				if rt.Name == "create_sandbox" && p != "sandbox_spec_id" {
					base += "sandbox_spec_id=no-such-spec&" // never start a sandbox
				}
				for _, v := range values {
					esc, raw := badinput.Query(p, v)
					add("query "+p, rt.Method, base+esc, body)
					if strings.Contains(v, "%") {
						add("raw query "+p, rt.Method, base+raw, body)
					}
				}
			}
			if rt.Name != "create_sandbox" {
				for _, qs := range badinput.QueryStrings {
					add("query string", rt.Method, target+"?"+qs, body)
				}
			}
			// Path parameters.
			for _, seg := range badinput.Segments {
				for _, param := range []string{"conversation_id", "sandbox_id", "name", "key_id"} {
					if !strings.Contains(rt.Path, "{"+param+"}") {
						continue
					}
					p := strings.Replace(rt.Path, "{"+param+"}", seg, 1)
					add("path "+param, rt.Method, fill(p, params), body)
				}
			}
			if strings.Contains(rt.Path, "{conversation_id}") && !fzV1Destructive[rt.Name] {
				for _, id := range []string{strings.ToUpper(f.convA), fzDashed(f.convA), "task-" + f.taskA, "task-" + fzDashed(f.taskA),
					"%7B" + fzDashed(f.convA) + "%7D", f.convA + "%00", f.convA[:31], f.convA + "0"} {
					add("path conversation_id "+id, rt.Method, strings.Replace(target, f.convA, id, 1), body)
				}
			}
			// Bodies.
			reads := sample != ""
			if reads {
				for _, b := range badinput.Malformed(sample) {
					add("body "+b.Name, rt.Method, target, b.Data)
				}
				for _, b := range badinput.Mutations(sample) {
					add("body "+b.Name, rt.Method, target, b.Data)
				}
				for _, ct := range badinput.ContentTypes {
					reqs = append(reqs, fzReq{what: rt.Name + ": content type " + ct, method: rt.Method, target: target, body: body,
						header: fzWith(defaults, "Content-Type", ct)})
				}
			} else {
				for _, b := range badinput.Malformed(`{"a":1}`) {
					if len(b.Data) <= 64<<10 {
						add("ignored body "+b.Name, rt.Method, target, b.Data)
					}
				}
			}
			// Other methods.
			for _, m := range badinput.Methods {
				if m != rt.Method && !destructive[m+" "+rt.Path] && !destructive[strings.ToUpper(m)+" "+rt.Path] {
					add("method "+m, m, target, []byte("{"))
				}
			}
			// A bounded, fixed share of the corpus per route keeps the
			// test's cost modest (see fzV1PerRoute).
			reqs = badinput.Spread(reqs, fzV1PerRoute)
			// Credentials (the sign-in pages take none).
			for _, h := range []map[string]string{
				{}, {"Authorization": "Bearer"}, {"Authorization": "Bearer "}, {"Authorization": "Bearer wrong-key-0123456789"},
				{"Authorization": "Basic " + f.alice}, {"Authorization": f.alice}, {"Authorization": "Bearer " + f.alice + "x"},
				{"Authorization": "Bearer " + strings.Repeat("k", 10000)}, {"X-Session-API-Key": f.hookA},
				{"Authorization": "Bearer " + f.hookA}, {"X-Session-API-Key": "wrong"},
			} {
				if rt.Auth == api.AuthSandbox && h["X-Session-API-Key"] == f.hookA || rt.Auth == api.AuthNone {
					continue // that is the right key, or no key is asked for
				}
				h["Content-Type"] = "application/json"
				reqs = append(reqs, fzReq{what: rt.Name + fmt.Sprintf(": credentials %q", badinput.Short(fmt.Sprint(h), 60)),
					method: rt.Method, target: target, body: body, header: h})
			}
			for _, r := range reqs {
				status, _, _ := f.send(r, defaults)
				if r.header != nil && !strings.HasPrefix(r.what, rt.Name+": content type") && status != 0 && status != 401 {
					f.tally.Fail(fmt.Sprintf("%s: answered %d", r.what, status))
				}
			}
		})
	}
	// Alice's fixtures survived; the real destructive calls are answered
	// (the sandbox first: deleting its only conversation deletes it too).
	if c := f.conv(f.alice, f.convA); c == nil || c.SandboxStatus != "RUNNING" {
		t.Fatalf("alice's conversation after the fuzz: %+v", c)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/sandboxes/" + f.sbA + "/pause"}, {"POST", "/api/v1/sandboxes/" + f.sbA + "/resume"},
		{"DELETE", "/api/v1/secrets/" + f.secretA}, {"DELETE", "/api/v1/keys/" + f.keyIDA},
		{"DELETE", "/api/v1/sandboxes/" + f.sbA}, {"DELETE", "/api/v1/app-conversations/" + f.convA},
	} {
		if status, _, body := f.send(fzReq{what: "real", method: c.method, target: c.path}, map[string]string{"Authorization": "Bearer " + f.alice}); status != 200 {
			t.Errorf("%s %s: %d %s", c.method, c.path, status, body)
		}
	}
	for _, s := range f.tally.Failures {
		t.Error(s)
	}
	t.Logf("acs serve route fuzz: %s in %v", &f.tally, time.Since(started).Round(time.Millisecond))
	if n := f.tally.ServerErrors(); n > 0 {
		t.Errorf("%d answers were 5xx", n)
	}
}

// fzForms are the spellings of an id pair an answer may use: as given,
// without a "task-" prefix, hex and dashed.
func fzForms(none, alice string) [][2]string {
	out := [][2]string{{none, alice}}
	n, a := strings.TrimPrefix(none, "task-"), strings.TrimPrefix(alice, "task-")
	hex := func(s string) string { return strings.ReplaceAll(s, "-", "") }
	if len(hex(n)) == 32 && len(hex(a)) == 32 {
		out = append(out, [2]string{fzDashed(hex(n)), fzDashed(hex(a))}, [2]string{hex(n), hex(a)})
	} else if n != none {
		out = append(out, [2]string{n, a})
	}
	return out
}

func fzWith(h map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for a, b := range h {
		out[a] = b
	}
	out[k] = v
	return out
}

// fzDashed is the dashed form of a 32-character hex id.
func fzDashed(id string) string {
	if len(id) != 32 {
		return id
	}
	return id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
}

// TestFuzzServeTenancyMatrix: bob's key (and bob's sandbox's key) on every route
// that names alice's conversation, sandbox, start task, event, secret or
// key. Each answer is 404 (null or absent in batch gets and searches) and
// byte for byte the answer bob gets for an id of the same shape that names
// nothing (that id replaced by alice's in it); nothing of alice's changes.
func TestFuzzServeTenancyMatrix(t *testing.T) {
	f := newFzServe(t)
	samples := f.samples()
	before := f.aliceState(t)
	bob := map[string]string{"Authorization": "Bearer " + f.bob, "Content-Type": "application/json"}
	hookB := map[string]string{"X-Session-API-Key": f.hookB, "Content-Type": "application/json"}
	// Each of alice's ids and the id that names nothing in its place.
	type idPair struct{ alice, nothing string }
	conv := idPair{f.convA, fzOther(f.convA)}
	pairs := map[string][]idPair{
		"conversation_id": {conv, {fzDashed(f.convA), fzDashed(conv.nothing)}, {"task-" + f.taskA, "task-" + fzOther(f.taskA)}},
		"sandbox_id":      {{f.sbA, f.unknownSandbox}},
		"name":            {{f.secretA, "NO_SUCH_SECRET"}},
		"key_id":          {{f.keyIDA, fzOther(f.keyIDA)}},
	}
	type check struct {
		what, method string
		alice, none  string // targets
		body         string // body (with alice's id, and the other's)
		bodyNone     string
		header       map[string]string
		// the answer must be this status (404 unless set)
		status int
		// and, for 200, this exact body (with alice's id)
		want string
		// sub is what to replace back in the other answer: pairs of
		// (nothing, alice)
		sub []string
		// adopts: a sandbox reporting on an id that names nothing adopts
		// it as a conversation created on its agent server (200), so only
		// the status of alice's answer is checked there.
		adopts bool
	}
	var checks []check
	queries := map[string][]string{
		"read_file": {"file_path=README.md"}, "git_diff": {"path=README.md"}, "search_events": {"", "limit=1"},
		"get_events": {"id=" + f.eventA},
	}
	for _, rt := range api.Routes {
		// A profile name names a profile in the caller's own settings:
		// saving under alice's name creates bob's own profile, and deleting
		// is idempotent, so neither can reach alice's (her settings are
		// compared unchanged at the end; the profile routes' isolation is
		// TestLLMProfilesAndSchemas's).
		if rt.Auth != api.AuthUser || rt.Name == "save_profile" || rt.Name == "delete_profile" {
			continue
		}
		var names []string
		for name := range pairs {
			if strings.Contains(rt.Path, "{"+name+"}") {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		name := names[0]
		for _, p := range pairs[name] {
			if strings.HasPrefix(p.alice, "task-") && rt.Name != "add_pending_message" {
				continue
			}
			qs := queries[rt.Name]
			if qs == nil {
				qs = []string{""}
			}
			for _, q := range qs {
				a := strings.Replace(rt.Path, "{"+name+"}", p.alice, 1)
				n := strings.Replace(rt.Path, "{"+name+"}", p.nothing, 1)
				if q != "" {
					a, n = a+"?"+q, n+"?"+q
				}
				body := samples[rt.Name]
				checks = append(checks, check{what: rt.Name, method: rt.Method, alice: a, none: n, body: body, bodyNone: body,
					header: bob, status: 404, sub: []string{p.nothing, p.alice}})
			}
		}
	}
	// Ids in query strings and bodies.
	for _, c := range []struct {
		what, method, path, body, aliceID, noneID string
		status                                    int
	}{
		{"get_conversations", "GET", "/api/v1/app-conversations?ids=%s", "", f.convA, conv.nothing, 200},
		{"get_conversations dashed", "GET", "/api/v1/app-conversations?ids=%s", "", fzDashed(f.convA), fzDashed(conv.nothing), 200},
		{"get_start_tasks", "GET", "/api/v1/app-conversations/start-tasks?ids=%s", "", f.taskA, fzOther(f.taskA), 200},
		{"search_start_tasks", "GET", "/api/v1/app-conversations/start-tasks/search?conversation_id__eq=%s", "", f.convA, conv.nothing, 200},
		{"count_start_tasks", "GET", "/api/v1/app-conversations/start-tasks/count?conversation_id__eq=%s", "", f.convA, conv.nothing, 200},
		{"search_conversations", "GET", "/api/v1/app-conversations/search?sandbox_id__eq=%s", "", f.sbA, f.unknownSandbox, 200},
		{"count_conversations", "GET", "/api/v1/app-conversations/count?sandbox_id__eq=%s", "", f.sbA, f.unknownSandbox, 200},
		{"get_sandboxes", "GET", "/api/v1/sandboxes?id=%s", "", f.sbA, f.unknownSandbox, 200},
		{"delete_sandbox_by_query", "DELETE", "/api/v1/sandboxes?sandbox_id=%s", "", f.sbA, f.unknownSandbox, 404},
		{"get_events of bob's own", "GET", "/api/v1/conversation/" + f.convB + "/events?id=%s", "", f.eventA, "no-such-event-id", 200},
		{"start with alice's parent", "POST", "/api/v1/app-conversations", `{"parent_conversation_id":"%s"}`, fzDashed(f.convA), fzDashed(conv.nothing), 422},
	} {
		checks = append(checks, check{what: c.what, method: c.method, alice: strings.Replace(c.path, "%s", url.QueryEscape(c.aliceID), 1),
			none: strings.Replace(c.path, "%s", url.QueryEscape(c.noneID), 1), body: strings.Replace(c.body, "%s", c.aliceID, 1),
			bodyNone: strings.Replace(c.body, "%s", c.noneID, 1), header: bob, status: c.status, sub: []string{c.noneID, c.aliceID}})
	}
	// Bob's sandbox reporting on alice's conversation.
	checks = append(checks,
		check{what: "webhook_events from bob's sandbox", method: "POST", alice: "/api/v1/webhooks/events/" + f.convA,
			none: "/api/v1/webhooks/events/" + conv.nothing, body: samples["webhook_events"], bodyNone: samples["webhook_events"],
			header: hookB, status: 403, adopts: true},
		check{what: "webhook_conversations from bob's sandbox", method: "POST", alice: "/api/v1/webhooks/conversations",
			none: "/api/v1/webhooks/conversations", body: samples["webhook_conversations"],
			bodyNone: strings.Replace(samples["webhook_conversations"], f.convA, conv.nothing, 1),
			header:   hookB, status: 403, adopts: true})
	// An explicit conversation_id of alice's gets what an id bob already
	// uses gets (defect 10).
	checks = append(checks, check{what: "start with alice's conversation_id", method: "POST", alice: "/api/v1/app-conversations",
		none: "/api/v1/app-conversations", body: `{"conversation_id":"` + f.convA + `"}`, bodyNone: `{"conversation_id":"` + f.convB + `"}`,
		header: bob, sub: []string{f.convB, f.convA}})

	for _, c := range checks {
		t.Run(c.what+" "+c.method+" "+c.alice, func(t *testing.T) {
			var ab, nb []byte
			if c.body != "" {
				ab, nb = []byte(c.body), []byte(c.bodyNone)
			}
			as, ah, abody := f.send(fzReq{what: c.what, method: c.method, target: c.alice, body: ab}, c.header)
			ns, nh, nbody := f.send(fzReq{what: c.what, method: c.method, target: c.none, body: nb}, c.header)
			if c.status != 0 && as != c.status {
				t.Errorf("alice's: %d %s, want %d", as, abody, c.status)
			}
			replaced := string(nbody)
			for i := 0; i+1 < len(c.sub); i += 2 {
				for _, form := range fzForms(c.sub[i], c.sub[i+1]) {
					replaced = strings.ReplaceAll(replaced, form[0], form[1])
				}
			}
			if !c.adopts && (as != ns || ah.Get("Content-Type") != nh.Get("Content-Type") || string(abody) != replaced) {
				t.Errorf("alice's id is told apart from one naming nothing:\n alice's: %d %s %s\n nothing: %d %s %s",
					as, ah.Get("Content-Type"), abody, ns, nh.Get("Content-Type"), nbody)
			}
			if strings.Contains(string(abody), "alice-secret-value") || strings.Contains(string(abody), "Alice's") {
				t.Errorf("alice's data in bob's answer: %s", abody)
			}
		})
	}
	for _, s := range f.tally.Failures {
		t.Error(s)
	}
	if after := f.aliceState(t); after != before {
		t.Errorf("bob's requests changed alice's state:\n before %s\n after  %s", before, after)
	}
	t.Logf("tenancy matrix: %d checks, %s", len(checks), &f.tally)
}

// aliceState renders what bob's requests must not change: alice's
// conversation (title, status, sandbox), her sandbox, secrets, keys,
// settings, start tasks and event count.
func (f *fzServe) aliceState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/api/v1/app-conversations/search", "/api/v1/sandboxes/search", "/api/v1/secrets", "/api/v1/keys",
		"/api/v1/settings", "/api/v1/app-conversations/start-tasks/search", "/api/v1/conversation/" + f.convA + "/events/count"} {
		r := f.do("GET", p, nil, f.alice).want(200)
		var v any
		json.Unmarshal(r.body, &v)
		fzDropVolatile(v)
		out, _ := json.Marshal(v)
		fmt.Fprintf(&b, "%s %s\n", p, out)
	}
	return b.String()
}

// fzDropVolatile removes the fields that change on their own (timestamps,
// counters of the running agent) from a decoded answer.
func fzDropVolatile(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k := range v {
			switch k {
			case "updated_at", "last_activity_at", "metrics", "session_api_key", "exposed_urls", "conversation_url", "execution_status":
				delete(v, k)
			default:
				fzDropVolatile(v[k])
			}
		}
	case []any:
		for _, x := range v {
			fzDropVolatile(x)
		}
	}
}
