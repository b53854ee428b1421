package agentserver_test

// The route fuzz of the agent server: every route it mounts, served as `acs
// agent-server` serves it (internal/httpserve), is sent the badinput corpus
// (malformed JSON, fields of the wrong type, unknown fields, huge values,
// bad ids and page ids, bad query values, odd path segments, wrong methods,
// missing and wrong keys, wrong content types, empty bodies). No answer may
// be a 5xx, every error answer is JSON {"detail": …}, no request goes
// unanswered (a handler panic aborts the connection) and nothing logs a
// panic.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/internal/badinput"
	"github.com/acs-project/acs/internal/httpserve"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// fzLogs captures the log lines that report a panic.
type fzLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *fzLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *fzLogs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *fzLogs) WithGroup(string) slog.Handler            { return l }
func (l *fzLogs) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.Key + "=" + a.Value.String(); return true })
	if strings.Contains(strings.ToLower(s), "panic") {
		l.mu.Lock()
		l.lines = append(l.lines, badinput.Short(s, 2000))
		l.mu.Unlock()
	}
	return nil
}

// fzCapturePanics routes slog (and the log package, through which net/http
// reports a handler's panic) to a capture until the test ends, and fails
// the test for every panic logged.
func fzCapturePanics(t *testing.T) {
	logs := &fzLogs{}
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
		logs.mu.Lock()
		defer logs.mu.Unlock()
		for _, s := range logs.lines {
			t.Errorf("logged: %s", s)
		}
	})
}

// fzServer is an agent server behind the hardened HTTP server of `acs
// agent-server`, with the fixtures the corpus names.
type fzServer struct {
	*env
	base    string // http://host:port
	client  *http.Client
	tally   badinput.Tally
	conv    string // a conversation with events (hex id)
	quiet   string // one that only ask_agent and fork use, so its history stays short
	quietEv string // an event of it
	dashed  string // its dashed id
	eventID string // one of its events
	bashID  string // a bash event
	cmdID   string // that event's command id
}

func newFzServer(t *testing.T) *fzServer {
	fzCapturePanics(t)
	e := newEnv(t, llmtest.Reply{Repeat: true, Text: "ok"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The probe tells whether a request's context is alive: a request must
	// never leave its connection unable to serve the next one.
	h := e.srv.Handler()
	probed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != fzProbe {
			h.ServeHTTP(w, r)
			return
		}
		if err := r.Context().Err(); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"detail":%q}`, "probe: "+err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httpserve.New(probed, httpserve.Limits{ReadTimeout: 5 * time.Second, ShutdownTimeout: time.Second})
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	f := &fzServer{env: e, base: "http://" + ln.Addr().String(),
		client: &http.Client{Timeout: 30 * time.Second,
			// One connection, so that the probe after a request goes over
			// the connection the request used.
			Transport:     &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(f.client.CloseIdleConnections)

	// Fixtures: a conversation that ran once, a bash event, a few files.
	f.conv = strings.ReplaceAll(e.create(nil, "terminal"), "-", "")
	if r := e.call("POST", "/api/conversations/"+f.conv+"/events", userMessage("hello", true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	e.waitStatus(f.conv, "finished")
	evs := e.allEvents(f.conv)
	f.eventID = evs[len(evs)-1]["id"].(string)
	f.quiet = strings.ReplaceAll(e.create(nil), "-", "")
	if r := e.call("POST", "/api/conversations/"+f.quiet+"/events", userMessage("hello", true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	e.waitStatus(f.quiet, "finished")
	evs = e.allEvents(f.quiet)
	f.quietEv = evs[len(evs)-1]["id"].(string)
	var info struct {
		ID string `json:"id"`
	}
	e.call("GET", "/api/conversations/"+f.conv, nil).json(t, &info)
	f.dashed = info.ID
	var out struct {
		ID        string `json:"id"`
		CommandID string `json:"command_id"`
	}
	r := e.call("POST", "/api/bash/execute_bash_command", map[string]any{"command": "echo fixture"})
	r.json(t, &out)
	if r.status != 200 {
		t.Fatalf("bash: %d %s", r.status, r.body)
	}
	f.bashID, f.cmdID = out.ID, out.CommandID
	for name, content := range map[string]string{"notes.txt": "notes\n", "adir/inner.txt": "inner\n", "é ü.txt": "unicode\n"} {
		p := filepath.Join(e.work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(e.work, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// fzProbe is the path of the probe the test's handler answers itself: 204
// when the request's context is alive, else 500.
const fzProbe = "/__fuzz_probe"

// fzReq is one request of the corpus. Target is the raw request target
// (path and query, escaped as on the request line).
type fzReq struct {
	what        string
	method      string
	target      string
	body        []byte
	contentType *string // nil: application/json
	key         *string // nil: the server's key
}

// send sends r and checks the answer against badinput.Check.
func (f *fzServer) send(t *testing.T, r fzReq) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(r.method, f.base+"/", bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("%s: %v", r.what, err)
	}
	if r.body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	path, query, _ := strings.Cut(r.target, "?")
	req.URL.Opaque, req.URL.RawQuery = path, query
	req.Header.Set("X-Session-API-Key", testKey)
	if r.key != nil {
		req.Header.Del("X-Session-API-Key")
		if *r.key != "" {
			req.Header.Set("X-Session-API-Key", *r.key)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	if r.contentType != nil {
		req.Header.Del("Content-Type")
		if *r.contentType != "" {
			req.Header.Set("Content-Type", *r.contentType)
		}
	}
	res, err := f.client.Do(req)
	if err != nil {
		f.tally.Add(0)
		f.tally.Fail(fmt.Sprintf("%s: %s %s: no answer: %v", r.what, r.method, badinput.Short(r.target, 200), err))
		return 0, nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		f.tally.Fail(fmt.Sprintf("%s: %s %s: answer cut: %v", r.what, r.method, badinput.Short(r.target, 200), err))
	}
	f.tally.Add(res.StatusCode)
	msg := badinput.Check(r.method, res.StatusCode, res.Header, body)
	if msg == "" && res.StatusCode/100 == 2 && r.method != http.MethodHead && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") && !json.Valid(body) {
		msg = "2xx body is not JSON"
	}
	if msg != "" {
		f.tally.Fail(fmt.Sprintf("%s: %s %s body %q: %s: %s", r.what, r.method, badinput.Short(r.target, 200),
			badinput.Short(string(r.body), 120), msg, badinput.Short(string(body), 300)))
	}
	if !res.Close {
		// The connection stays open: the next request on it is served
		// with a live context.
		if p, err := f.client.Get(f.base + fzProbe); err != nil {
			f.tally.Fail(fmt.Sprintf("%s: %s %s: the probe after it got no answer: %v", r.what, r.method, badinput.Short(r.target, 200), err))
		} else {
			pb, _ := io.ReadAll(p.Body)
			p.Body.Close()
			if p.StatusCode != http.StatusNoContent {
				f.tally.Fail(fmt.Sprintf("%s: %s %s body %q (answered %d): the next request on the connection: %d %s", r.what, r.method,
					badinput.Short(r.target, 200), badinput.Short(string(r.body), 120), res.StatusCode, p.StatusCode, pb))
			}
		}
	}
	return res.StatusCode, body
}

// fzRoute is one route of the agent server.
type fzRoute struct {
	name   string
	method string
	path   string   // with {id}, {event_id} or {path} in place of a parameter
	params []string // the query parameters it reads
	sample string   // a plausible JSON body ("" for a route without one)
	open   bool     // served without a key
	// destructive routes get only ids naming nothing.
	destructive bool
	// reads tells whether the route reads its body (a large body to one
	// that does not is cut short by the server, as it should be).
	reads bool
	// costly routes run a process (git, bash) or an LLM call per valid
	// request: they get badinput.Few.
	costly bool
	// quiet routes name the conversation whose history stays short (an
	// LLM call or a fork costs in proportion to it).
	quiet bool
}

func (f *fzServer) routes() []fzRoute {
	work := f.work
	eventQuery := []string{"kind", "source", "body", "timestamp__gte", "timestamp__lt", "page_id", "limit", "sort_order"}
	start := `{"agent":{"kind":"Agent","llm":{"model":"openai/test-model","base_url":"` + f.llm.URL + `","api_key":"sk-fuzz-llm-key","num_retries":0,"usage_id":"agent"},"tools":[{"name":"terminal"}]},` +
		`"workspace":{"working_dir":"` + work + `"},"confirmation_policy":{"kind":"NeverConfirm"},"max_iterations":3,"secrets":{"FUZZ_TOKEN":"fuzz-secret-value-1"},` +
		`"tags":{"k":"v"},"initial_message":{"role":"user","content":[{"type":"text","text":"hi"}]},"title_llm_profile":"x"}`
	message := `{"role":"user","content":[{"type":"text","text":"hi"}],"run":false}`
	bash := `{"command":"echo hi","cwd":"` + work + `","timeout":10,"secrets":{"FUZZ_BASH":"fuzz-bash-secret-1"}}`
	return []fzRoute{
		{name: "alive", method: "GET", path: "/alive", open: true},
		{name: "health", method: "GET", path: "/health", open: true},
		{name: "ready", method: "GET", path: "/ready", open: true},
		{name: "server_info", method: "GET", path: "/server_info", open: true},
		{name: "root", method: "GET", path: "/", open: true},
		{name: "batch_get_conversations", method: "GET", path: "/api/conversations", params: []string{"ids"}},
		{name: "search_conversations", method: "GET", path: "/api/conversations/search", params: []string{"page_id", "limit", "sort_order", "status"}},
		{name: "count_conversations", method: "GET", path: "/api/conversations/count", params: []string{"status"}},
		{name: "get_conversation", method: "GET", path: "/api/conversations/{id}"},
		{name: "send_message", method: "POST", path: "/api/conversations/{id}/events", sample: message, reads: true},
		{name: "run", method: "POST", path: "/api/conversations/{id}/run"},
		{name: "pause", method: "POST", path: "/api/conversations/{id}/pause"},
		{name: "search_events", method: "GET", path: "/api/conversations/{id}/events/search", params: eventQuery},
		{name: "count_events", method: "GET", path: "/api/conversations/{id}/events/count", params: eventQuery[:5]},
		{name: "get_event", method: "GET", path: "/api/conversations/{id}/events/{event_id}"},
		{name: "batch_get_events", method: "GET", path: "/api/conversations/{id}/events", params: []string{"event_ids"}, sample: `["x"]`, reads: true},
		{name: "respond_to_confirmation", method: "POST", path: "/api/conversations/{id}/events/respond_to_confirmation", sample: `{"accept":false,"reason":"no"}`, reads: true},
		{name: "delete_conversation", method: "DELETE", path: "/api/conversations/{id}", destructive: true},
		{name: "update_conversation", method: "PATCH", path: "/api/conversations/{id}", sample: `{"title":"t","tags":{"k":"v"}}`, reads: true},
		{name: "interrupt", method: "POST", path: "/api/conversations/{id}/interrupt"},
		{name: "update_secrets", method: "POST", path: "/api/conversations/{id}/secrets", sample: `{"secrets":{"FUZZ_TWO":"fuzz-secret-value-2","FUZZ_THREE":{"kind":"StaticSecret","value":"fuzz-secret-value-3","description":"d"}}}`, reads: true},
		{name: "confirmation_policy", method: "POST", path: "/api/conversations/{id}/confirmation_policy", sample: `{"policy":{"kind":"ConfirmRisky","threshold":"HIGH","confirm_unknown":true}}`, reads: true},
		{name: "security_analyzer", method: "POST", path: "/api/conversations/{id}/security_analyzer", sample: `{"security_analyzer":{"kind":"LLMSecurityAnalyzer"}}`, reads: true},
		{name: "ask_agent", method: "POST", path: "/api/conversations/{id}/ask_agent", sample: `{"question":"why?"}`, reads: true, costly: true, quiet: true},
		{name: "condense", method: "POST", path: "/api/conversations/{id}/condense"},
		{name: "agent_final_response", method: "GET", path: "/api/conversations/{id}/agent_final_response"},
		{name: "skills", method: "POST", path: "/api/skills", sample: `{"load_public":true,"load_user":true,"load_project":true,"load_org":true,"project_dir":"` + work + `"}`, reads: true},
		{name: "hooks", method: "POST", path: "/api/hooks", sample: `{"project_dir":"` + work + `"}`, reads: true},
		{name: "tools", method: "GET", path: "/api/tools"},
		{name: "tools_slash", method: "GET", path: "/api/tools/"},
		{name: "workspace_archive", method: "GET", path: "/api/workspace/archive", costly: true},
		{name: "git_changes", method: "GET", path: "/api/git/changes", params: []string{"path", "ref"}, costly: true},
		{name: "git_changes_legacy", method: "GET", path: "/api/git/changes/{path}", params: []string{"ref"}, costly: true},
		{name: "git_diff", method: "GET", path: "/api/git/diff", params: []string{"path", "ref", "commit"}, costly: true},
		{name: "git_diff_legacy", method: "GET", path: "/api/git/diff/{path}", params: []string{"ref", "commit"}, costly: true},
		{name: "bash_start", method: "POST", path: "/api/bash/start_bash_command", sample: bash, reads: true, costly: true},
		{name: "bash_execute", method: "POST", path: "/api/bash/execute_bash_command", sample: bash, reads: true, costly: true},
		{name: "bash_search", method: "GET", path: "/api/bash/bash_events/search", params: []string{"kind__eq", "command_id__eq", "timestamp__gte", "timestamp__lt", "order__gt", "sort_order", "page_id", "limit"}},
		{name: "bash_get", method: "GET", path: "/api/bash/bash_events/{event_id}"},
		{name: "bash_clear", method: "DELETE", path: "/api/bash/bash_events", destructive: true},
		{name: "file_upload", method: "POST", path: "/api/file/upload", params: []string{"path"}, reads: true, costly: true},
		{name: "file_upload_legacy", method: "POST", path: "/api/file/upload/{path}", reads: true, costly: true},
		{name: "file_download", method: "GET", path: "/api/file/download", params: []string{"path"}},
		{name: "file_download_legacy", method: "GET", path: "/api/file/download/{path}"},
		{name: "bash_socket", method: "GET", path: "/sockets/bash-events", params: []string{"resend_mode", "resend_all", "session_api_key"}, open: true},
		{name: "events_socket", method: "GET", path: "/sockets/events/{id}", params: []string{"resend_mode", "resend_all", "after_timestamp", "session_api_key"}, open: true},
		{name: "unknown", method: "GET", path: "/api/no-such-route"},
		{name: "navigate", method: "POST", path: "/api/conversations/{id}/navigate", sample: `{"event_id":"` + f.eventID + `"}`, reads: true},
		{name: "goal", method: "POST", path: "/api/conversations/{id}/goal", sample: `{"objective":"fuzz the goal","max_iterations":1}`, reads: true, costly: true},
		{name: "goal_resume", method: "POST", path: "/api/conversations/{id}/goal/resume", costly: true},
		{name: "goal_stop", method: "POST", path: "/api/conversations/{id}/goal/stop"},
		// Last: each valid request makes a conversation, which every
		// later listing would pay for. A fork names its id, so that only
		// the first valid one copies the history (then 409).
		{name: "create_conversation", method: "POST", path: "/api/conversations", sample: start, reads: true, costly: true},
		{name: "fork", method: "POST", path: "/api/conversations/{id}/fork", sample: `{"id":"5f0c0000-0000-4000-8000-000000000001","title":"fork","tags":{"k":"v"},"reset_metrics":true,"from_event_id":"` + f.quietEv + `"}`, reads: true, quiet: true},
	}
}

// fill puts valid values in a route's path parameters: the fixture
// conversation, event and a workspace file (without its leading slash).
func (f *fzServer) fill(rt fzRoute, id string) string {
	event := f.eventID
	if strings.HasPrefix(rt.name, "bash_") {
		event = f.bashID
	}
	p := strings.Replace(rt.path, "{id}", id, 1)
	p = strings.Replace(p, "{event_id}", url.PathEscape(event), 1)
	return strings.Replace(p, "{path}", strings.TrimPrefix(filepath.Join(f.work, "notes.txt"), "/"), 1)
}

// validQuery is a valid value of each query parameter, so that one bad
// parameter is tried among good ones.
func (f *fzServer) validQuery(name string) string {
	switch name {
	case "path":
		return filepath.Join(f.work, "notes.txt")
	case "ids":
		return f.conv
	case "event_ids":
		return f.eventID
	}
	return ""
}

// queryValues are the bad values for a parameter: badinput.Values plus the
// ones that only make sense for it (paths around the workspace, ids and
// page ids of other listings).
func (f *fzServer) queryValues(rt fzRoute, param string) []string {
	vals := append([]string(nil), badinput.Values...)
	if rt.costly || param == "bogus" {
		// A parameter the route does not read tests only the parser.
		vals = append([]string(nil), badinput.Few...)
	}
	switch param {
	case "path", "project_dir":
		w := f.work
		vals = append(vals, w, w+"/", w+"/.", w+"/..", w+"/../..", w+"/notes.txt/", w+"/notes.txt/x", w+"/adir", w+"/fifo",
			w+"/nope", w+"/\x00", w+"/é ü.txt", w+"/.git", w+"/.git/config", w+"//notes.txt", w+"/"+strings.Repeat("n", 256),
			"/", "/etc/passwd", "/proc/self/environ", "/dev/zero", "/dev/null", w+"/"+strings.Repeat("a/", 3000))
	case "page_id", "ids", "event_ids", "command_id__eq", "ref", "commit":
		vals = append(vals, f.conv, f.dashed, f.eventID, f.bashID, f.cmdID, strings.ToUpper(f.dashed), "HEAD", "HEAD~999",
			"--output=/tmp/x", "-p", "main..HEAD", "@{-1}", "refs/heads/../../x", f.conv+","+f.conv)
	}
	return vals
}

// fzPerRoute is how many requests of the corpus (besides the key checks)
// each route gets: an evenly spaced, fixed subset (badinput.Spread).
const fzPerRoute = 40

// TestFuzzAgentServerRoutes sends the badinput corpus to every route of the
// agent server. No answer is a 5xx, every error is JSON with a detail, every
// request is answered, and no handler panics. It logs the request count and
// status histogram.
func TestFuzzAgentServerRoutes(t *testing.T) {
	f := newFzServer(t)
	started := time.Now()
	routes := f.routes()
	destructive := map[string]bool{}
	for _, rt := range routes {
		if rt.destructive {
			destructive[rt.method+" "+rt.path] = true
			destructive[strings.ToLower(rt.method)+" "+rt.path] = true
		}
	}
	throwaway := func() string { return strings.ReplaceAll(f.create(nil), "-", "") }
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			var reqs []fzReq
			var sample []byte // the route's valid body, sent with bad queries and paths
			if rt.sample != "" {
				sample = []byte(rt.sample)
			}
			id := f.conv
			if rt.quiet {
				id = f.quiet
			}
			if rt.destructive && strings.Contains(rt.path, "{id}") {
				id = throwaway()
			}
			target := f.fill(rt, id)
			add := func(what, method, target string, body []byte) {
				reqs = append(reqs, fzReq{what: rt.name + ": " + what, method: method, target: target, body: body})
			}
			// Query parameters: one bad value at a time, escaped and raw.
			for _, p := range append(rt.params, "bogus") {
				// The other parameters a route requires are given valid
				// values, so that the bad one is what is judged.
				base := target + "?"
				for _, o := range rt.params {
					if val := f.validQuery(o); o != p && val != "" {
						base += url.QueryEscape(o) + "=" + url.QueryEscape(val) + "&"
					}
				}
				for _, v := range f.queryValues(rt, p) {
					esc, raw := badinput.Query(p, v)
					add("query "+p, rt.method, base+esc, sample)
					if strings.Contains(v, "%") {
						add("raw query "+p, rt.method, base+raw, sample)
					}
				}
			}
			for i, qs := range badinput.QueryStrings {
				if !rt.costly || i%4 == 0 {
					add("query string", rt.method, target+"?"+qs, sample)
				}
			}
			// Path parameters.
			for _, seg := range badinput.Segments {
				for _, param := range []string{"{id}", "{event_id}", "{path}"} {
					if !strings.Contains(rt.path, param) {
						continue
					}
					p := strings.Replace(rt.path, param, seg, 1)
					if rt.destructive && param == "{id}" && seg == "" {
						continue // DELETE /api/conversations/ is another route
					}
					add("path "+param, rt.method, f.fill(fzRoute{name: rt.name, path: p}, id), sample)
				}
			}
			if strings.Contains(rt.path, "{id}") && !rt.destructive { // the upper-case id names the fixture
				dashed := id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
				for _, other := range []string{strings.ToUpper(id), "{" + dashed + "}", dashed + "0", id[:31],
					strings.Replace(dashed, "-", "", 1), "urn:uuid:" + dashed, dashed + "%00", dashed + "%2F..", "%20" + id} {
					add("path {id} "+other, rt.method, f.fill(fzRoute{name: rt.name, path: strings.Replace(rt.path, "{id}", other, 1)}, id), sample)
				}
			}
			// Bodies.
			if rt.reads {
				sample := rt.sample
				if sample == "" {
					sample = `{}`
				}
				for _, b := range badinput.Malformed(sample) {
					add("body "+b.Name, rt.method, target, b.Data)
				}
				if rt.sample != "" {
					for _, b := range badinput.Mutations(rt.sample) {
						add("body "+b.Name, rt.method, target, b.Data)
					}
				}
			} else {
				for i, b := range badinput.Malformed(`{"a":1}`) {
					if len(b.Data) <= 64<<10 && (!rt.costly || i%4 == 0) {
						add("ignored body "+b.Name, rt.method, target, b.Data)
					}
				}
			}
			if strings.HasPrefix(rt.name, "file_upload") {
				reqs = append(reqs, f.uploads(rt, target)...)
			}
			// Content types, for a route with a body.
			if rt.sample != "" {
				for _, ct := range badinput.ContentTypes {
					r := fzReq{what: rt.name + ": content type " + ct, method: rt.method, target: target, body: []byte(rt.sample)}
					r.contentType = &ct
					reqs = append(reqs, r)
				}
			}
			// Other methods.
			for _, m := range badinput.Methods {
				if m == rt.method || destructive[m+" "+rt.path] {
					continue // that is the route, or another route that deletes
				}
				add("method "+m, m, target, []byte("{"))
			}
			// A bounded, fixed share of the corpus per route keeps the
			// test's cost modest (see fzPerRoute).
			reqs = badinput.Spread(reqs, fzPerRoute)
			// Keys.
			for _, k := range []string{"", "wrong-key", testKey + "x", testKey[:len(testKey)-1], strings.ToUpper(testKey), strings.Repeat("k", 10000)} {
				r := fzReq{what: rt.name + ": key " + badinput.Short(k, 20), method: rt.method, target: target, body: []byte(rt.sample)}
				if rt.sample == "" {
					r.body = nil
				}
				r.key = &k
				reqs = append(reqs, r)
			}
			for _, r := range reqs {
				status, _ := f.send(t, r)
				if r.key != nil && !rt.open && status != 0 && status != 401 {
					f.tally.Fail(fmt.Sprintf("%s: answered %d without the key", r.what, status))
				}
			}
		})
	}
	t.Run("sockets", func(t *testing.T) { f.fuzzSockets(t) })
	// The server still works: the fixture conversation reads as before.
	if r := f.call("GET", "/api/conversations/"+f.conv, nil); r.status != 200 {
		t.Fatalf("after the fuzz: %d %s", r.status, r.body)
	}
	for _, s := range f.tally.Failures {
		t.Error(s)
	}
	t.Logf("agent server route fuzz: %s in %v", &f.tally, time.Since(started).Round(time.Millisecond))
	if n := f.tally.ServerErrors(); n > 0 {
		t.Errorf("%d answers were 5xx", n)
	}
}

// uploads are malformed multipart bodies for an upload route.
func (f *fzServer) uploads(rt fzRoute, target string) []fzReq {
	if !strings.Contains(target, "?") && rt.name == "file_upload" {
		target += "?path=" + url.QueryEscape(filepath.Join(f.work, "up", "file.txt"))
	}
	part := func(name, filename, content string) string {
		return "--x\r\nContent-Disposition: form-data; name=\"" + name + "\"; filename=\"" + filename + "\"\r\n\r\n" + content + "\r\n"
	}
	var out []fzReq
	for _, c := range []struct{ what, ct, body string }{
		{"valid", "multipart/form-data; boundary=x", part("file", "f.txt", "hello") + "--x--\r\n"},
		{"no boundary", "multipart/form-data", part("file", "f.txt", "hello") + "--x--\r\n"},
		{"other boundary", "multipart/form-data; boundary=y", part("file", "f.txt", "hello") + "--x--\r\n"},
		{"empty boundary", "multipart/form-data; boundary=", ""},
		{"overlong boundary", "multipart/form-data; boundary=" + strings.Repeat("b", 100), ""},
		{"truncated", "multipart/form-data; boundary=x", part("file", "f.txt", "hello")[:30]},
		{"unterminated", "multipart/form-data; boundary=x", part("file", "f.txt", "hello")},
		{"no file part", "multipart/form-data; boundary=x", part("other", "f.txt", "hello") + "--x--\r\n"},
		{"empty", "multipart/form-data; boundary=x", ""},
		{"only the end", "multipart/form-data; boundary=x", "--x--\r\n"},
		{"odd file name", "multipart/form-data; boundary=x", part("file", "../../etc/passwd\x00", "hello") + "--x--\r\n"},
		{"no part headers", "multipart/form-data; boundary=x", "--x\r\n\r\nhello\r\n--x--\r\n"},
		{"header without colon", "multipart/form-data; boundary=x", "--x\r\nbroken header\r\n\r\nhello\r\n--x--\r\n"},
		{"10000 parts", "multipart/form-data; boundary=x", strings.Repeat(part("other", "f", "x"), 10000) + "--x--\r\n"},
		{"huge part header", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + strings.Repeat("n", 20000) + "\"\r\n\r\nx\r\n--x--\r\n"},
		{"mixed", "multipart/mixed; boundary=x", part("file", "f.txt", "hello") + "--x--\r\n"},
		{"JSON", "application/json", `{"file":"hello"}`},
	} {
		ct := c.ct
		out = append(out, fzReq{what: rt.name + ": multipart " + c.what, method: "POST", target: target, body: []byte(c.body), contentType: &ct})
	}
	return out
}

// fuzzSockets opens the WebSockets with bad keys, ids and replay
// parameters, and sends bad frames on an open one: each is closed with a
// close code (or answered with a ServerErrorEvent), and the server goes on.
func (f *fzServer) fuzzSockets(t *testing.T) {
	ws := "ws" + strings.TrimPrefix(f.base, "http")
	dial := func(what, target string, hdr http.Header) (*websocket.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, res, err := websocket.Dial(ctx, ws+target, &websocket.DialOptions{HTTPHeader: hdr})
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		f.tally.Add(status)
		if status >= 500 || (err != nil && res == nil) {
			f.tally.Fail(fmt.Sprintf("socket %s: %s: %d %v", what, badinput.Short(target, 200), status, err))
		}
		return c, err
	}
	keyHdr := http.Header{"X-Session-API-Key": {testKey}}
	// closed waits for the server to close c, and returns the close code.
	closed := func(c *websocket.Conn) websocket.StatusCode {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return websocket.CloseStatus(err)
			}
		}
	}
	for _, c := range []struct {
		what, target string
		hdr          http.Header
		want         websocket.StatusCode
	}{
		{"bash no key", "/sockets/bash-events?session_api_key=wrong", nil, 4001},
		{"events wrong key", "/sockets/events/" + f.conv + "?session_api_key=wrong", nil, 4001},
		{"events wrong header key", "/sockets/events/" + f.conv, http.Header{"X-Session-API-Key": {"wrong"}}, 4001},
		{"events unknown id", "/sockets/events/00000000000000000000000000000000", keyHdr, 4004},
		{"events bad id", "/sockets/events/not-an-id", keyHdr, 4004},
		{"events NUL id", "/sockets/events/%00", keyHdr, 4004},
		{"events long id", "/sockets/events/" + strings.Repeat("a", 5000), keyHdr, 4004},
		{"events since without time", "/sockets/events/" + f.conv + "?resend_mode=since", keyHdr, websocket.StatusPolicyViolation},
		{"events since bad time", "/sockets/events/" + f.conv + "?resend_mode=since&after_timestamp=2026-02-30T00:00:00Z", keyHdr, websocket.StatusPolicyViolation},
	} {
		conn, err := dial(c.what, c.target, c.hdr)
		if err != nil {
			continue
		}
		if got := closed(conn); got != c.want {
			f.tally.Fail(fmt.Sprintf("socket %s: closed with %d, want %d", c.what, got, c.want))
		}
	}
	// Odd replay parameters on a good socket, then bad frames.
	for _, q := range []string{"resend_mode=all", "resend_mode=ALL", "resend_mode=", "resend_mode=%00", "resend_all=maybe",
		"resend_mode=since&after_timestamp=0001-01-01T00:00:00Z", "resend_mode=since&after_timestamp=9999-12-31T23:59:59Z",
		"resend_mode=since&after_timestamp=2026-01-01T00:00:00%2B25:00"} {
		conn, err := dial("events "+q, "/sockets/events/"+f.conv+"?"+q, keyHdr)
		if err != nil {
			f.tally.Fail(fmt.Sprintf("socket %s: %v", q, err))
			continue
		}
		conn.Close(websocket.StatusNormalClosure, "")
	}
	conn, err := dial("events frames", "/sockets/events/"+f.conv, keyHdr)
	if err != nil {
		t.Fatalf("events socket: %v", err)
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	frames := []string{"", "{", "null", "[]", `{"role":"user"}`, `{"content":[]}`, `{"content":[{"type":"nope"}]}`,
		`{"type":"auth","session_api_key":"wrong"}`, "\xff\xfe", `{"role":"system","content":[{"type":"text","text":"x"}]}`}
	for _, fr := range frames {
		if err := conn.Write(ctx, websocket.MessageText, []byte(fr)); err != nil {
			f.tally.Fail(fmt.Sprintf("socket frame %q: %v", fr, err))
		}
	}
	if err := conn.Write(ctx, websocket.MessageBinary, []byte{0, 1, 2}); err != nil {
		f.tally.Fail(fmt.Sprintf("socket binary frame: %v", err))
	}
	// Every bad frame but the auth frame (ignored) is answered with a
	// ServerErrorEvent.
	want := len(frames) - 1
	got := 0
	for got < want {
		_, data, err := conn.Read(ctx)
		if err != nil {
			f.tally.Fail(fmt.Sprintf("socket: %d of %d ServerErrorEvents before %v", got, want, err))
			break
		}
		if bytes.Contains(data, []byte(`"kind":"ServerErrorEvent"`)) {
			got++
		}
	}
	// A frame over the read limit closes the socket with 1009.
	if err := conn.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("x"), 32<<20+1)); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("oversized frame: %v", err)
	}
	if code := closed(conn); code != websocket.StatusMessageTooBig {
		f.tally.Fail(fmt.Sprintf("socket: an oversized frame closed with %d, want %d", code, websocket.StatusMessageTooBig))
	}
}
