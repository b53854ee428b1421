package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/tools/browser"
	"github.com/acs-project/acs/shared/v1wire"
)

// frontendHost serves a page as a web frontend does, on its own origin,
// and forwards everything else to acs serve (the frontend's /api and
// /sockets, and the sandboxes' webhooks: ACS_PUBLIC_URL is this origin).
type frontendHost struct {
	ln     net.Listener
	origin string
	acs    *url.URL
}

func newFrontendHost(t *testing.T) *frontendHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &frontendHost{ln: ln, origin: "http://" + ln.Addr().String()}
}

// serve starts serving; acsURL is where the rest is forwarded (nil for a
// host that only serves the page).
func (f *frontendHost) serve(t *testing.T, acsURL string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>frontend</title><p>frontend</p>")
	})
	if acsURL != "" {
		u, err := url.Parse(acsURL)
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/", httputil.NewSingleHostReverseProxy(u))
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(f.ln)
	t.Cleanup(func() { srv.Close() })
}

// agentCalls is what the page at origin does with the agent server at base
// (conversation_url without /api/conversations/...), as the OpenHands
// frontend does: the event count, the Changes tab, a diff, Stop, and the
// event socket. Each result is {status, body}, or {error} when the
// browser refused.
const agentCalls = `(async () => {
  const base = %q, id = %q, key = %q;
  const out = {};
  const call = async (name, method, path) => {
    try {
      const r = await fetch(base + path, {method, headers: {"X-Session-API-Key": key, "Content-Type": "application/json"}});
      out[name] = {status: r.status, body: await r.text()};
    } catch (e) {
      out[name] = {error: String(e)};
    }
  };
  await call("count", "GET", "/api/conversations/" + id + "/events/count");
  await call("changes", "GET", "/api/git/changes?path=" + encodeURIComponent("/workspace/project"));
  await call("diff", "GET", "/api/git/diff?path=" + encodeURIComponent("/workspace/project/hello.txt"));
  await call("pause", "POST", "/api/conversations/" + id + "/pause");
  out.socket = await new Promise((resolve) => {
    const ws = new WebSocket(base.replace(/^http/, "ws") + "/sockets/events/" + id + "?resend_all=true&session_api_key=" + encodeURIComponent(key));
    const timer = setTimeout(() => resolve({error: "timeout"}), 15000);
    ws.onmessage = (m) => { clearTimeout(timer); ws.close(); resolve({status: 101, body: JSON.parse(m.data).kind}); };
    ws.onerror = () => { clearTimeout(timer); resolve({error: "refused"}); };
  });
  return JSON.stringify(out);
})()`

type callResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// runAgentCalls loads the page of origin in a fresh headless Chromium and
// runs agentCalls there.
func runAgentCalls(t *testing.T, origin, base, id, key string) map[string]callResult {
	t.Helper()
	chromium, err := browser.FindChromium()
	if err != nil {
		t.Fatalf("this test needs Chromium: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(origin+"/page.html")); err != nil {
		t.Fatalf("load the page at %s: %v", origin, err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(agentCalls, base, id, key), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page at %s: %v", origin, err)
	}
	out := map[string]callResult{}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("page results %s: %v", raw, err)
	}
	return out
}

// TestBrowserReachesAgentServers: the web frontend, served from ACS's
// public origin (ACS_PUBLIC_URL), calls a conversation's agent server
// directly from a browser, as the OpenHands frontend does: the event
// count, the Changes tab and a diff on /workspace/project, Stop, and the
// event socket all work; a page of another origin is refused every one
// (and its Stop never reaches the agent server).
func TestBrowserReachesAgentServers(t *testing.T) {
	// As the browser tool's tests: scripts/test.sh sets
	// ACS_REQUIRE_CHROMIUM=1, so that a missing Chromium fails the run.
	if _, err := browser.FindChromium(); err != nil {
		if os.Getenv("ACS_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("no Chromium binary found (%v), and ACS_REQUIRE_CHROMIUM=1 requires one", err)
		}
		t.Skipf("skipping: no Chromium binary found (%v)", err)
	}
	llm := llmtest.New(llmtest.Reply{Text: "Done.", Repeat: true})
	defer llm.Close()
	front, other := newFrontendHost(t), newFrontendHost(t)
	s := startServe(t, t.TempDir(), llm.URL, "ACS_PUBLIC_URL="+front.origin)
	front.serve(t, s.url)
	other.serve(t, "")
	ctx := t.Context()
	c := s.api(apiKey)

	// A conversation with no message yet: idle, so that Stop pauses it.
	task, err := c.StartConversationAndWait(ctx, &v1wire.StartRequest{}, 100*time.Millisecond)
	if err != nil || task.AppConversationID == nil {
		t.Fatalf("start: %+v %v\n%s", task, err, s.log)
	}
	id := *task.AppConversationID
	conv, err := c.GetConversation(ctx, id)
	if err != nil || conv.ConversationURL == nil || conv.SessionAPIKey == nil {
		t.Fatalf("conversation %+v %v", conv, err)
	}
	base, _, ok := strings.Cut(*conv.ConversationURL, "/api/conversations/")
	if !ok {
		t.Fatalf("conversation_url %s", *conv.ConversationURL)
	}
	key := *conv.SessionAPIKey
	work := filepath.Join(s.dataDir, "sandboxes", conv.SandboxID, "workspace")
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The preflight the browser sends before each call, in plain HTTP.
	for _, tc := range []struct{ origin, allow string }{{front.origin, front.origin}, {other.origin, ""}} {
		req, _ := http.NewRequest("OPTIONS", base+"/api/git/changes?path=/workspace/project", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "x-session-api-key")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		h := res.Header
		if h.Get("Access-Control-Allow-Origin") != tc.allow ||
			(tc.allow != "" && (res.StatusCode != 204 || !strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "x-session-api-key"))) {
			t.Fatalf("preflight from %s: HTTP %d %v", tc.origin, res.StatusCode, h)
		}
	}

	refused := runAgentCalls(t, other.origin, base, id, key)
	for _, name := range []string{"count", "changes", "diff", "pause", "socket"} {
		if r := refused[name]; r.Error == "" {
			t.Errorf("%s from another origin was not refused: %+v", name, r)
		}
	}
	if conv, err := c.GetConversation(ctx, id); err != nil || deref(conv.ExecutionStatus) != "idle" {
		t.Fatalf("after Stop from another origin: %v %v", deref(conv.ExecutionStatus), err)
	}

	got := runAgentCalls(t, front.origin, base, id, key)
	want := map[string]func(callResult) bool{
		"count": func(r callResult) bool {
			var n int
			return r.Status == 200 && json.Unmarshal([]byte(r.Body), &n) == nil
		},
		"changes": func(r callResult) bool {
			return r.Status == 200 && strings.Contains(r.Body, `{"status":"ADDED","path":"hello.txt"}`)
		},
		"diff": func(r callResult) bool {
			return r.Status == 200 && r.Body == `{"modified":"hello from the workspace\n","original":null}`
		},
		"pause":  func(r callResult) bool { return r.Status == 200 && r.Body == `{"success":true}` },
		"socket": func(r callResult) bool { return r.Status == 101 && r.Body == "ConversationStateUpdateEvent" },
	}
	for name, ok := range want {
		if !ok(got[name]) {
			t.Errorf("%s from ACS's origin: %+v", name, got[name])
		}
	}
	// Stop reached the agent server, whose report reached ACS.
	testwait.For(t, 30*time.Second, "the conversation to be paused", func() bool {
		conv, err := c.GetConversation(ctx, id)
		return err == nil && deref(conv.ExecutionStatus) == "paused"
	})
	// The session key is in the socket's URL: no log line may hold it.
	if strings.Contains(s.log.String(), key) {
		t.Fatalf("acs serve logged a session key:\n%s", s.log)
	}
	agentLog, err := os.ReadFile(filepath.Join(s.dataDir, "sandboxes", conv.SandboxID, "agent-server.log"))
	if err != nil || strings.Contains(string(agentLog), key) {
		t.Fatalf("the agent server's log (%v) holds its session key:\n%s", err, agentLog)
	}
}
