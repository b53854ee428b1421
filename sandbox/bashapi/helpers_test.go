package bashapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/sandbox/bashapi"
)

// TestMain plants variables that must not reach commands.
func TestMain(m *testing.M) {
	os.Setenv("FOO_TOKEN", "leaked-token")
	os.Setenv("SESSION_API_KEY", "leaked-session-key")
	os.Setenv("OH_SESSION_API_KEYS_0", "leaked-key-0")
	os.Setenv("MY_PASSWORD", "leaked-password")
	os.Setenv("BASHAPI_PLAIN", "plain-value")
	os.Exit(m.Run())
}

// env is a service behind a real HTTP server.
type env struct {
	t    *testing.T
	svc  *bashapi.Service
	srv  *httptest.Server
	dir  string // events dir
	work string // default cwd
}

type envOpts struct {
	dir    string
	work   string
	mask   func(string) string
	extra  func() []string
	authOK func(string) bool
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.work == "" {
		o.work = t.TempDir()
	}
	svc, err := bashapi.New(bashapi.Options{Dir: o.dir, WorkDir: o.work, Mask: o.mask, Env: o.extra})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Routes(mux, nil)
	mux.Handle("/sockets/bash-events", svc.SocketHandler(o.authOK))
	srv := httptest.NewServer(mux)
	e := &env{t: t, svc: svc, srv: srv, dir: o.dir, work: o.work}
	t.Cleanup(func() {
		_ = svc.Close()
		srv.Close()
	})
	return e
}

// event is a decoded event of any kind, with its raw JSON.
type event struct {
	Kind      string  `json:"kind"`
	ID        string  `json:"id"`
	Timestamp string  `json:"timestamp"`
	Command   *string `json:"command"`
	Cwd       *string `json:"cwd"`
	Timeout   *int    `json:"timeout"`
	CommandID string  `json:"command_id"`
	Order     *int    `json:"order"`
	ExitCode  *int    `json:"exit_code"`
	Stdout    *string `json:"stdout"`
	Stderr    *string `json:"stderr"`
	Code      string  `json:"code"`
	Detail    string  `json:"detail"`
	raw       []byte
}

func decodeEvent(t *testing.T, b []byte) event {
	t.Helper()
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("decode event %s: %v", b, err)
	}
	ev.raw = append([]byte(nil), b...)
	return ev
}

func (e *env) do(method, path, body string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func reqJSON(command string, cwd *string, timeout int) string {
	m := map[string]any{"command": command}
	if cwd != nil {
		m["cwd"] = *cwd
	}
	if timeout > 0 {
		m["timeout"] = timeout
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// execute runs a command through POST execute_bash_command and returns the
// final output.
func (e *env) execute(command string, cwd *string, timeout int) event {
	e.t.Helper()
	st, b := e.do("POST", "/api/bash/execute_bash_command", reqJSON(command, cwd, timeout))
	if st != 200 {
		e.t.Fatalf("execute %q: %d %s", command, st, b)
	}
	ev := decodeEvent(e.t, b)
	if ev.Kind != "BashOutput" || ev.ExitCode == nil {
		e.t.Fatalf("execute %q: not a final BashOutput: %s", command, b)
	}
	return ev
}

func (e *env) start(command string, cwd *string, timeout int) event {
	e.t.Helper()
	st, b := e.do("POST", "/api/bash/start_bash_command", reqJSON(command, cwd, timeout))
	if st != 200 {
		e.t.Fatalf("start %q: %d %s", command, st, b)
	}
	return decodeEvent(e.t, b)
}

type page struct {
	Items      []json.RawMessage `json:"items"`
	NextPageID *string           `json:"next_page_id"`
}

// search returns one page; it fails the test unless the status is 200.
func (e *env) search(params url.Values) ([]event, *string) {
	e.t.Helper()
	st, b := e.do("GET", "/api/bash/bash_events/search?"+params.Encode(), "")
	if st != 200 {
		e.t.Fatalf("search %v: %d %s", params, st, b)
	}
	var p page
	if err := json.Unmarshal(b, &p); err != nil {
		e.t.Fatalf("search %v: %v: %s", params, err, b)
	}
	if p.Items == nil {
		e.t.Fatalf("search %v: items is not a list: %s", params, b)
	}
	evs := make([]event, len(p.Items))
	for i, it := range p.Items {
		evs[i] = decodeEvent(e.t, it)
	}
	return evs, p.NextPageID
}

// all follows next_page_id and returns every matching event.
func (e *env) all(params url.Values) []event {
	e.t.Helper()
	var out []event
	p := url.Values{}
	for k, v := range params {
		p[k] = v
	}
	for i := 0; ; i++ {
		if i > 10000 {
			e.t.Fatal("paging does not end")
		}
		evs, next := e.search(p)
		out = append(out, evs...)
		if next == nil {
			return out
		}
		p.Set("page_id", *next)
	}
}

// outputs returns the BashOutput events of a command in order and checks the
// chunk invariants: order 0..n-1, only the last has exit_code.
func (e *env) outputs(commandID string) []event {
	e.t.Helper()
	outs := e.all(url.Values{"command_id__eq": {commandID}, "kind__eq": {"BashOutput"}})
	checkChunks(e.t, outs)
	return outs
}

func checkChunks(t *testing.T, outs []event) {
	t.Helper()
	if len(outs) == 0 {
		t.Fatal("no outputs")
	}
	for i, o := range outs {
		if o.Order == nil || *o.Order != i {
			t.Fatalf("output %d has order %v", i, o.Order)
		}
		if last := i == len(outs)-1; last != (o.ExitCode != nil) {
			t.Fatalf("output %d of %d: exit_code %v", i, len(outs), o.ExitCode)
		}
		size := len(deref(o.Stdout)) + len(deref(o.Stderr))
		if size > 1<<20 {
			t.Fatalf("output %d holds %d bytes", i, size)
		}
	}
}

func joined(outs []event) (stdout, stderr string) {
	var o, e strings.Builder
	for _, ev := range outs {
		o.WriteString(deref(ev.Stdout))
		e.WriteString(deref(ev.Stderr))
	}
	return o.String(), e.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }

// validation is a 422 body.
type validation struct {
	Detail []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	} `json:"detail"`
}

func locs(t *testing.T, b []byte) []string {
	t.Helper()
	var v validation
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("422 body %s: %v", b, err)
	}
	var out []string
	for _, d := range v.Detail {
		parts := make([]string, len(d.Loc))
		for i, p := range d.Loc {
			parts[i] = fmt.Sprint(p)
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}

// processGone reports whether pid has exited (or is a zombie nobody reaped).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
