package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// testToken is the secret the test servers require. It must never show in
// an error, an observation or a log line.
const testToken = "tok-7f3a9c-SUPER-SECRET-41d2"

// masked is what the test Mask turns the token into.
const masked = "<secret hidden>"

// TestMain doubles as the stdio test servers: with MCP_TEST_SERVER set, the
// test binary is a server (or a broken one) instead of running the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("MCP_TEST_SERVER") {
	case "":
		os.Exit(m.Run())
	case "stdio":
		if err := mcptest.RunStdio(context.Background(), os.Getenv("MCP_TEST_PREFIX"), testToken); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
		}
		os.Exit(0)
	case "crash":
		fmt.Fprintf(os.Stderr, "starting up\nfatal: cannot reach the backend with key %s\n", os.Getenv("API_TOKEN"))
		os.Exit(3)
	case "hang":
		// Never answers; starts a child so that the whole group must be killed.
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "MCP_TEST_SERVER=sleep")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pids := fmt.Sprintf("%d %d", os.Getpid(), child.Process.Pid)
		_ = os.WriteFile(os.Getenv("MCP_TEST_PIDFILE"), []byte(pids), 0o600)
		fallthrough
	case "sleep":
		// Legitimate sleep: a server that never answers; it exits on its
		// own after a minute should the test leak it.
		time.Sleep(time.Minute)
		os.Exit(0)
	default:
		os.Exit(2)
	}
}

var (
	secrets = map[string]string{"TOKEN": testToken, "WRONG": "not-the-token"}
	lookup  = func(n string) (string, bool) { v, ok := secrets[n]; return v, ok }
	mask    = func(s string) string { return strings.ReplaceAll(s, testToken, masked) }
)

// testExe is the test binary, which serves MCP when MCP_TEST_SERVER is set.
func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// stdioServer configures the test binary as a stdio server in mode.
func stdioServer(t *testing.T, mode string, env map[string]string) ServerConfig {
	e := map[string]string{"MCP_TEST_SERVER": mode}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Command: ptr(testExe(t)), Env: e}
}

// opts are generous options for a loaded machine.
func opts() Options {
	return Options{ConnectTimeout: time.Minute, Lookup: lookup, Mask: mask, Logger: slog.New(slog.DiscardHandler), Env: baseEnv()}
}

// baseEnv is DefaultEnv without the race detector's 1s sleep at exit (the
// servers are this test binary, built with -race when the tests are).
func baseEnv() []string { return append(DefaultEnv(), "GORACE=atexit_sleep_ms=0") }

func connect(t *testing.T, servers map[string]ServerConfig, o Options) *Client {
	t.Helper()
	start := time.Now()
	c, errs := Connect(context.Background(), servers, o)
	t.Logf("connected to %d server(s) in %s", len(servers), time.Since(start).Round(time.Millisecond))
	for _, err := range errs {
		t.Errorf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if len(errs) > 0 {
		t.FailNow()
	}
	return c
}

// call calls a tool and fails the test on a Go error.
func call(t *testing.T, c *Client, tool, args string) *events.MCPToolObservation {
	t.Helper()
	obs, err := c.Call(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", tool, args, err)
	}
	if obs.ToolName != tool {
		t.Errorf("ToolName = %q, want %q", obs.ToolName, tool)
	}
	return obs
}

// texts returns the text items of an observation.
func texts(obs *events.MCPToolObservation) []string {
	var out []string
	for _, c := range obs.Content {
		if tc, ok := c.(*events.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func wantResult(t *testing.T, obs *events.MCPToolObservation, isError bool, want ...string) {
	t.Helper()
	got := texts(obs)
	if obs.IsError != isError {
		t.Errorf("%s: IsError = %v, want %v (%q)", obs.ToolName, obs.IsError, isError, got)
	}
	if len(got) == 0 || got[0] != fmt.Sprintf("[Tool '%s' executed.]", obs.ToolName) {
		t.Errorf("%s: first block %q, want the executed marker", obs.ToolName, got)
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: result %q does not contain %q", obs.ToolName, all, w)
		}
	}
}

// wantError checks an observation of a call that failed before a result.
func wantError(t *testing.T, obs *events.MCPToolObservation, want ...string) {
	t.Helper()
	all := strings.Join(texts(obs), "\n")
	if !obs.IsError {
		t.Errorf("%s: IsError = false, want true (%q)", obs.ToolName, all)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: %q does not contain %q", obs.ToolName, all, w)
		}
	}
}

// exerciseTools runs the common checks on a client whose tools have no
// prefix and which presented the right token.
func exerciseTools(t *testing.T, c *Client, server string) {
	t.Helper()
	var names []string
	byName := map[string]Tool{}
	for _, tl := range c.Tools() {
		names = append(names, tl.Name)
		byName[tl.Name] = tl
		if tl.Server != server {
			t.Errorf("tool %s: Server = %q, want %q", tl.Name, tl.Server, server)
		}
	}
	if got := strings.Join(names, ","); got != "add,echo,fail,getenv,image,slow,whoami" {
		t.Errorf("tools = %s", got)
	}
	echo := byName["echo"]
	var schema struct {
		Type       string
		Required   []string
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil || schema.Type != "object" ||
		len(schema.Required) != 1 || schema.Required[0] != "text" || schema.Properties["text"]["type"] != "string" {
		t.Errorf("echo schema = %s (%v)", echo.InputSchema, err)
	}
	if echo.Description != "Echo the text back." || echo.Annotations != nil || echo.ReadOnlyHint() {
		t.Errorf("echo = %+v", echo)
	}
	add := byName["add"]
	if add.Title != "Add numbers" || !add.ReadOnlyHint() || add.OutputSchema == nil {
		t.Errorf("add = %+v (annotations %s)", add, add.Annotations)
	}

	wantResult(t, call(t, c, "echo", `{"text":"hello"}`), false, "echo: hello")
	wantResult(t, call(t, c, "add", `{"a":2,"b":3.5}`), false, `"sum":5.5`)
	obs := call(t, c, "image", `{}`)
	wantResult(t, obs, false, "a tiny image")
	var img *events.ImageContent
	for _, ct := range obs.Content {
		if ic, ok := ct.(*events.ImageContent); ok {
			img = ic
		}
	}
	wantURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(mcptest.PNG)
	if img == nil || img.Type != "image" || len(img.ImageURLs) != 1 || img.ImageURLs[0] != wantURL {
		t.Errorf("image content = %+v", img)
	}
	wantResult(t, call(t, c, "fail", ``), true, "the tool failed on purpose")
	obs = call(t, c, "whoami", `null`)
	wantResult(t, obs, false, "you are token "+masked)

	// Arguments are checked before the call.
	wantError(t, call(t, c, "echo", `{}`), "invalid arguments", "argument 'text': required argument is missing")
	wantError(t, call(t, c, "echo", `{"text": 5}`), "argument 'text': must be string, got number")
	wantError(t, call(t, c, "add", `{"a": "1", "b": 2}`), "argument 'a': must be number, got string")
	wantError(t, call(t, c, "add", `[1, 2]`), "must be a JSON object")
	wantError(t, call(t, c, "nope", `{}`), "no such MCP tool", "echo")

	// Cancellation is the only Go error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if obs, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`)); err != context.Canceled || obs != nil {
		t.Errorf("Call with a cancelled context = %v, %v; want context.Canceled", obs, err)
	}
}

func TestStdioServer(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := connect(t, map[string]ServerConfig{"local": stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}"})}, opts())
	t.Logf("MEASURE stdio connect: %s", time.Since(start).Round(time.Millisecond))
	exerciseTools(t, c, "local")

	// The server gets its configured env on top of Options.Env, and nothing
	// else of this process's environment.
	wantResult(t, call(t, c, "getenv", `{"name":"API_TOKEN"}`), false, "API_TOKEN="+masked)
	wantResult(t, call(t, c, "getenv", `{"name":"PATH"}`), false, "PATH="+os.Getenv("PATH"))
}

// TestConnectPreExpanded connects with a configuration the caller expanded
// itself (Options.Lookup nil); errors then describe the expanded values, so
// only Mask protects them.
func TestConnectPreExpanded(t *testing.T) {
	t.Parallel()
	cfg, missing := Expand(stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}"}), lookup)
	if len(missing) != 0 || cfg.Env["API_TOKEN"] != testToken {
		t.Fatalf("Expand = %v, missing %v", cfg, missing)
	}
	o := opts()
	o.Lookup = nil
	c := connect(t, map[string]ServerConfig{"local": cfg}, o)
	wantResult(t, call(t, c, "echo", `{"text":"hi"}`), false, "echo: hi")
}

func TestStdioServerGetsOnlyConfiguredEnv(t *testing.T) {
	t.Setenv("AGENT_SERVER_SECRET", "must-not-leak")
	c := connect(t, map[string]ServerConfig{"local": stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}"})}, opts())
	wantResult(t, call(t, c, "getenv", `{"name":"AGENT_SERVER_SECRET"}`), false, "AGENT_SERVER_SECRET is unset")
	o := opts()
	o.Env = []string{"PATH=" + os.Getenv("PATH"), "EXTRA_BASE=from-options", "GORACE=atexit_sleep_ms=0"}
	c2 := connect(t, map[string]ServerConfig{"local": stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}"})}, o)
	wantResult(t, call(t, c2, "getenv", `{"name":"EXTRA_BASE"}`), false, "EXTRA_BASE=from-options")
	wantResult(t, call(t, c2, "getenv", `{"name":"HOME"}`), false, "HOME is unset")
}

func TestStdioServerRejectsCallsWithoutToken(t *testing.T) {
	t.Parallel()
	c := connect(t, map[string]ServerConfig{
		"notoken": stdioServer(t, "stdio", map[string]string{"MCP_TEST_PREFIX": "a_"}),
		"wrong":   stdioServer(t, "stdio", map[string]string{"MCP_TEST_PREFIX": "b_", "API_TOKEN": "${WRONG}"}),
	}, opts())
	wantResult(t, call(t, c, "a_echo", `{"text":"hi"}`), true, mcptest.Unauthorized)
	wantResult(t, call(t, c, "b_echo", `{"text":"hi"}`), true, mcptest.Unauthorized)
}

// httpServer serves the test MCP server over streamable HTTP.
func httpServer(t *testing.T, prefix string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcptest.HTTPHandler(prefix, testToken))
	mux.Handle("/locked", mcptest.RequireBearer(testToken, mcptest.HTTPHandler(prefix, testToken)))
	// The SSE transport does not pass request headers to tool handlers: the
	// token is checked on every HTTP request instead.
	mux.Handle("/sse", mcptest.RequireBearer(testToken, mcptest.SSEHandler(prefix, "")))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPServer(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, "")
	start := time.Now()
	c := connect(t, map[string]ServerConfig{"remote": {URL: ptr(srv.URL + "/mcp"),
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}}, opts())
	t.Logf("MEASURE http connect: %s", time.Since(start).Round(time.Millisecond))
	exerciseTools(t, c, "remote")
}

func TestHTTPServerAuthAndTransports(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, "")
	for name, cfg := range map[string]ServerConfig{
		"auth bearer":    {URL: ptr(srv.URL + "/locked"), Auth: &Auth{Strategy: AuthBearer, Token: ptr("${TOKEN}")}},
		"header":         {URL: ptr(srv.URL + "/locked"), Auth: &Auth{Strategy: AuthHeader, HeaderName: ptr("Authorization"), HeaderValue: ptr("Bearer ${TOKEN}")}},
		"type http":      {URL: ptr(srv.URL + "/mcp"), Type: ptr("http"), Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"sse":            {URL: ptr(srv.URL + "/sse"), Transport: ptr("sse"), Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"auth overrides": {URL: ptr(srv.URL + "/mcp"), Headers: map[string]string{"Authorization": "Bearer ${WRONG}"}, Auth: &Auth{Strategy: AuthBearer, Token: ptr("${TOKEN}")}},
	} {
		t.Run(name, func(t *testing.T) {
			c := connect(t, map[string]ServerConfig{"remote": cfg}, opts())
			wantResult(t, call(t, c, "echo", `{"text":"hi"}`), false, "echo: hi")
		})
	}
	t.Run("no token", func(t *testing.T) {
		c := connect(t, map[string]ServerConfig{"remote": {URL: ptr(srv.URL + "/mcp")}}, opts())
		wantResult(t, call(t, c, "echo", `{"text":"hi"}`), true, mcptest.Unauthorized)
	})
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, "h_")
	o := opts()
	c := connect(t, map[string]ServerConfig{
		"local":  withTimeout(stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}", "MCP_TEST_PREFIX": "s_"}), 1),
		"remote": withTimeout(ServerConfig{URL: ptr(srv.URL + "/mcp"), Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}, 1),
	}, o)
	for _, tool := range []string{"s_slow", "h_slow"} {
		start := time.Now()
		obs := call(t, c, tool, `{"seconds": 60}`)
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s took %s despite a 1s timeout", tool, d)
		}
		wantError(t, obs, "timed out after 1s")
	}
	// The servers are still usable after a timed-out call.
	wantResult(t, call(t, c, "s_echo", `{"text":"after"}`), false, "echo: after")
	wantResult(t, call(t, c, "h_echo", `{"text":"after"}`), false, "echo: after")
}

func withTimeout(cfg ServerConfig, seconds float64) ServerConfig {
	cfg.Timeout = &seconds
	return cfg
}

// connectErr connects to one server that must fail and returns its error.
func connectErr(t *testing.T, cfg ServerConfig, o Options) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	c, errs := Connect(context.Background(), map[string]ServerConfig{"broken": cfg}, o)
	d := time.Since(start)
	defer c.Close()
	if len(errs) != 1 {
		t.Fatalf("Connect errors = %v, want one", errs)
	}
	if len(c.Tools()) != 0 {
		t.Errorf("a failed server has tools: %v", c.Tools())
	}
	se, ok := errs[0].(*ServerError)
	if !ok || se.Server != "broken" {
		t.Errorf("error %T %v is not a ServerError for 'broken'", errs[0], errs[0])
	}
	msg := errs[0].Error()
	if !strings.HasPrefix(msg, "MCP server 'broken': ") {
		t.Errorf("error %q does not name the server", msg)
	}
	return msg, d
}

func wantContains(t *testing.T, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%q does not contain %q", s, w)
		}
	}
}

func TestConnectFailures(t *testing.T) {
	t.Parallel()
	t.Run("command not found", func(t *testing.T) {
		t.Parallel()
		msg, _ := connectErr(t, ServerConfig{Command: ptr("no-such-mcp-server-${TOKEN}")}, opts())
		wantContains(t, msg, `command "no-such-mcp-server-${TOKEN}"`, "not found in PATH")
	})
	t.Run("not executable", func(t *testing.T) {
		t.Parallel()
		p := filepath.Join(t.TempDir(), "server.sh")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		msg, _ := connectErr(t, ServerConfig{Command: &p}, opts())
		wantContains(t, msg, "is not executable")
	})
	t.Run("exits at once", func(t *testing.T) {
		t.Parallel()
		o := opts()
		o.Lookup = func(string) (string, bool) { return "", false }
		cfg := stdioServer(t, "crash", map[string]string{"API_TOKEN": testToken}) // a literal secret: only Mask hides it
		msg, _ := connectErr(t, cfg, o)
		wantContains(t, msg, "exited with status 3", "fatal: cannot reach the backend with key "+masked, "starting up")
	})
	t.Run("exits at once, no mask", func(t *testing.T) {
		t.Parallel()
		o := opts()
		o.Mask = nil // the substituted value is still scrubbed from errors
		msg, _ := connectErr(t, stdioServer(t, "crash", map[string]string{"API_TOKEN": "${TOKEN}"}), o)
		wantContains(t, msg, "exited with status 3", "fatal: cannot reach the backend with key ${TOKEN}")
	})
	t.Run("undefined variable", func(t *testing.T) {
		t.Parallel()
		msg, _ := connectErr(t, stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${NOPE}"}), opts())
		wantContains(t, msg, "undefined variable(s) ${NOPE}")
	})
	t.Run("missing cwd", func(t *testing.T) {
		t.Parallel()
		cfg := stdioServer(t, "stdio", nil)
		cfg.Cwd = ptr("/no/such/dir/${TOKEN}")
		msg, _ := connectErr(t, cfg, opts())
		wantContains(t, msg, `working directory "/no/such/dir/${TOKEN}" does not exist`)
	})
	t.Run("http 401", func(t *testing.T) {
		t.Parallel()
		srv := httpServer(t, "")
		msg, _ := connectErr(t, ServerConfig{URL: ptr(srv.URL + "/locked"), Headers: map[string]string{"Authorization": "Bearer ${WRONG}"}}, opts())
		wantContains(t, msg, "HTTP 401 Unauthorized", `url "`+srv.URL+`/locked"`)
	})
	t.Run("http 404", func(t *testing.T) {
		t.Parallel()
		srv := httpServer(t, "")
		msg, _ := connectErr(t, ServerConfig{URL: ptr(srv.URL + "/nope?key=${TOKEN}")}, opts())
		wantContains(t, msg, "HTTP 404 Not Found", `url "`+srv.URL+`/nope?key=${TOKEN}"`)
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		msg, _ := connectErr(t, ServerConfig{URL: ptr(url + "/mcp/${TOKEN}")}, opts())
		wantContains(t, msg, "/mcp/${TOKEN}", "failed")
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		_, errs := Connect(ctx, map[string]ServerConfig{"a": stdioServer(t, "stdio", nil)}, opts())
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "cancelled") || time.Since(start) > 20*time.Second {
			t.Errorf("Connect with a cancelled context = %v after %s", errs, time.Since(start))
		}
	})
	t.Run("invalid configuration", func(t *testing.T) {
		t.Parallel()
		msg, _ := connectErr(t, ServerConfig{Command: ptr("x"), URL: ptr("https://h/mcp")}, opts())
		wantContains(t, msg, "invalid configuration", "not both")
	})
	t.Run("bad url after expansion", func(t *testing.T) {
		t.Parallel()
		msg, _ := connectErr(t, ServerConfig{URL: ptr("${TOKEN}")}, opts())
		wantContains(t, msg, `url "${TOKEN}" is not an http or https URL`)
	})
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func TestHandshakeTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("checks processes through /proc")
	}
	pidfile := filepath.Join(t.TempDir(), "pids")
	o := opts()
	o.ConnectTimeout = 5 * time.Second
	msg, d := connectErr(t, stdioServer(t, "hang", map[string]string{"MCP_TEST_PIDFILE": pidfile}), o)
	wantContains(t, msg, "no answer within 5s during the MCP handshake", "the process was killed")
	if d < o.ConnectTimeout || d > o.ConnectTimeout+20*time.Second {
		t.Errorf("Connect took %s with a %s timeout", d, o.ConnectTimeout)
	}
	t.Logf("hanging server failed after %s", d.Round(time.Millisecond))
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Skipf("the server was killed before it wrote its pids (loaded machine?): %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	if len(pids) != 2 {
		t.Fatalf("pid file %q", b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		if !testwait.Until(time.Until(deadline), func() bool { return !alive(pid) }) {
			t.Errorf("process %d is still running after Connect failed", pid)
		}
	}
}

func TestHandshakeTimeoutSleep(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	o := opts()
	o.ConnectTimeout = 2 * time.Second
	msg, d := connectErr(t, ServerConfig{Command: ptr("sleep"), Args: []string{"60"}}, o)
	wantContains(t, msg, `command "sleep"`, "no answer within 2s")
	if d > o.ConnectTimeout+20*time.Second {
		t.Errorf("Connect took %s with a %s timeout", d, o.ConnectTimeout)
	}
}

func TestDuplicateToolNames(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, "")
	hdr := map[string]string{"Authorization": "Bearer ${TOKEN}"}
	c, errs := Connect(context.Background(), map[string]ServerConfig{
		"alpha":    {URL: ptr(srv.URL + "/mcp"), Headers: hdr},
		"beta":     {URL: ptr(srv.URL + "/mcp"), Headers: hdr},
		"disabled": {URL: ptr(srv.URL + "/nope"), Enabled: ptr(false)},
	}, opts())
	defer c.Close()
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one for beta", errs)
	}
	wantContains(t, errs[0].Error(), "MCP server 'beta'", "tool 'add' is also provided by MCP server 'alpha'")
	for _, tl := range c.Tools() {
		if tl.Server != "alpha" {
			t.Errorf("tool %s of server %s: only alpha should be used", tl.Name, tl.Server)
		}
	}
	wantResult(t, call(t, c, "echo", `{"text":"x"}`), false, "echo: x")
}

func TestServerGone(t *testing.T) {
	t.Parallel()
	c := connect(t, map[string]ServerConfig{"local": stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}"})}, opts())
	p := c.servers[0].proc
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	obs := call(t, c, "echo", `{"text":"x"}`)
	wantError(t, obs, "MCP server 'local' is no longer running", "signal: killed")
}

func TestClose(t *testing.T) {
	t.Parallel()
	c := connect(t, map[string]ServerConfig{"local": stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}"})}, opts())
	p := c.servers[0].proc
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %s", time.Since(start).Round(time.Millisecond))
	select {
	case <-p.done:
	default:
		t.Errorf("the server is still running after Close")
	}
	if p.cmd.ProcessState == nil || !p.cmd.ProcessState.Exited() || p.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the server did not exit cleanly on closing stdin: %v", p.cmd.ProcessState)
	}
	wantError(t, call(t, c, "echo", `{"text":"x"}`), "closed")
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSecretsNeverLeak runs successes and failures with the secret token
// and checks that it appears in no error, observation or log line. It does
// not run in parallel: it replaces the default logger.
func TestSecretsNeverLeak(t *testing.T) {
	var logs testwait.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)

	srv := httpServer(t, "h_")
	pidfile := filepath.Join(t.TempDir(), "pids")
	hdr := map[string]string{"Authorization": "Bearer ${TOKEN}"}
	servers := map[string]ServerConfig{
		"stdio":   stdioServer(t, "stdio", map[string]string{"API_TOKEN": "${TOKEN}", "MCP_TEST_PREFIX": "s_"}),
		"http":    {URL: ptr(srv.URL + "/mcp?k=${TOKEN}"), Headers: hdr, Timeout: ptr(1.0)},
		"crash":   stdioServer(t, "crash", map[string]string{"API_TOKEN": "${TOKEN}"}),
		"hang":    stdioServer(t, "hang", map[string]string{"API_TOKEN": "${TOKEN}", "MCP_TEST_PIDFILE": pidfile}),
		"404":     {URL: ptr(srv.URL + "/nope/${TOKEN}"), Headers: hdr},
		"401":     {URL: ptr(srv.URL + "/locked?token=${TOKEN}")},
		"missing": {Command: ptr("/no/such/${TOKEN}/server"), Args: []string{"${TOKEN}"}},
		"badcwd":  {Command: ptr("true"), Cwd: ptr("/nope/${TOKEN}")},
	}
	var all []string
	o := Options{ConnectTimeout: 5 * time.Second, Lookup: lookup, Mask: mask, Env: baseEnv()}
	c, errs := Connect(context.Background(), servers, o)
	for _, err := range errs {
		all = append(all, err.Error())
	}
	if len(errs) != 6 {
		t.Errorf("errors = %q, want 6", all)
	}
	for _, tc := range [][2]string{
		{"s_whoami", `{}`}, {"s_getenv", `{"name":"API_TOKEN"}`}, {"h_whoami", `{}`}, {"h_echo", `{"text":"` + testToken + `"}`},
		{"h_slow", `{"seconds": 30}`}, {"s_echo", `{"text": 1}`}, {"nope", `{}`},
	} {
		obs, err := c.Call(context.Background(), tc[0], json.RawMessage(tc[1]))
		if err != nil {
			t.Fatalf("Call(%s): %v", tc[0], err)
		}
		b, _ := json.Marshal(obs)
		all = append(all, string(b))
	}
	for _, s := range c.servers {
		if s.proc != nil {
			_ = s.proc.cmd.Process.Kill()
			<-s.proc.done
		}
	}
	obs, _ := c.Call(context.Background(), "s_echo", json.RawMessage(`{"text":"x"}`))
	b, _ := json.Marshal(obs)
	all = append(all, string(b))
	c.Close()
	all = append(all, logs.String())
	joined := strings.Join(all, "\n")
	if strings.Contains(joined, testToken) {
		t.Errorf("the secret token leaked:\n%s", joined)
	}
	if !strings.Contains(joined, "secret hidden") || !strings.Contains(joined, "${TOKEN}") {
		t.Errorf("expected masked values and placeholders in:\n%s", joined)
	}
	if !strings.Contains(logs.String(), "mcp: server connected") || !strings.Contains(logs.String(), "mcp: server not connected") {
		t.Errorf("logs:\n%s", logs.String())
	}
	t.Logf("errors, observations and logs:\n%s", joined)
}
