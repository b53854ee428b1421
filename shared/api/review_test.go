package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

// runningAt is a runtime whose every sandbox is RUNNING at one agent-server
// URL: with a test server there, it injects agent-server faults a real
// agent server does not produce on demand (dying in the middle of a
// request, failing with 500, or an older one naming host paths).
type runningAt struct{ url, key string }

func (r runningAt) Start(context.Context, acs.StartRequest) (acs.RuntimeStatus, error) {
	return acs.RuntimeStatus{}, errors.New("not supported")
}
func (r runningAt) Status(context.Context, string) (acs.RuntimeStatus, error) {
	return acs.RuntimeStatus{Status: acs.SandboxRunning, AgentURL: r.url, SessionKey: r.key}, nil
}
func (r runningAt) Pause(context.Context, string) error { return errors.New("not supported") }
func (r runningAt) Resume(context.Context, string, string, map[string]string) (acs.RuntimeStatus, error) {
	return acs.RuntimeStatus{}, errors.New("not supported")
}
func (r runningAt) Delete(context.Context, string) error { return nil }
func (r runningAt) Archive(context.Context, string, io.Writer) error {
	return errors.New("not supported")
}

// TestReviewRoutesAgentServerFailures: 502 is for an agent server that
// failed (5xx, a refused session key) or died in the middle of the request,
// and its detail never names the workspace's host path; an agent server's
// refusal of the path stays the caller's 4xx, named relative to the
// workspace even when the agent server names it by its host path.
// agentFaultEnv is a V1 API over a bolt store holding alice's conversation
// on a RUNNING sandbox whose agent server (at the workspace ws) answers
// every request but /alive with what answer holds. It returns the API's URL
// and the conversation's id.
func agentFaultEnv(t *testing.T, ws string, answer *atomic.Pointer[func(w http.ResponseWriter, r *http.Request)]) (string, string) {
	t.Helper()
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/alive" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		(*answer.Load())(w, r)
	}))
	t.Cleanup(agent.Close)

	store := openStore(t)
	queue := openQueue(t)
	ctx := context.Background()
	now := time.Now().UTC()
	conv := strings.Repeat("c7", 16)
	for _, err := range []error{
		store.CreateUser(ctx, acs.User{ID: "alice", Name: "alice"}),
		store.CreateAPIKey(ctx, acs.APIKey{ID: "alice-k", UserID: "alice", Hash: acs.HashKey(aliceKey)}),
		store.CreateSandbox(ctx, acs.Sandbox{ID: "sb-review", OwnerID: "alice", SpecID: "acs-local", Status: acs.SandboxRunning,
			AgentURL: agent.URL, SessionKeyHash: acs.HashKey("session-key"), WorkingDir: ws, Slots: []string{conv}, CreatedAt: now}),
		store.CreateConversation(ctx, acs.Conversation{ID: conv, OwnerID: "alice", SandboxID: "sb-review", WorkingDir: ws,
			CreatedAt: now, UpdatedAt: now}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	v1 := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: queue,
		Runtime: runningAt{agent.URL, "session-key"},
		Flow:    startflow.Config{Sandboxes: sandboxes.Config{PollInterval: 10 * time.Millisecond, ResumeWait: time.Second, Specs: []acs.SandboxSpec{{ID: "acs-local"}}}},
		Sealer:  sealbox.FromPassphrase("review test passphrase")})})
	srv := httptest.NewServer(v1.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, conv
}

func TestReviewRoutesAgentServerFailures(t *testing.T) {
	const ws = "/srv/acs/sandboxes/sb-review/workspace"
	var answer atomic.Pointer[func(w http.ResponseWriter, r *http.Request)]
	url, conv := agentFaultEnv(t, ws, &answer)

	dies := func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	status := func(code int, body string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write([]byte(body))
		}
	}
	routes := []string{"/file?file_path=src/main.go", "/git/changes", "/git/diff?path=src/main.go"}
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
		routes []string
		status int
		detail string // the body's detail (a string), or a substring of the 422's msg
	}{
		{"dies during the request", dies, routes, 502, "Failed to reach agent server."},
		{"fails with 500", status(500, `{"detail":"Git failed: fatal: `+ws+`/.git/index: index file corrupt"}`), routes, 502,
			"Agent server error: 500: Git failed: fatal: .git/index: index file corrupt"},
		{"refuses the session key", status(401, `{"detail":"Unauthorized"}`), routes, 502, "Agent server error: 401: Unauthorized"},
		{"an older one names the host path of a missing file", status(404, `{"detail":"File not found: `+ws+`/src/main.go"}`),
			routes[:1], 404, "File not found: src/main.go"},
		{"an older one names the host path of a directory", status(400, `{"detail":"Path is a directory: `+ws+`/src/main.go"}`),
			[]string{routes[0], routes[2]}, 422, "Value error, Path is a directory: src/main.go"},
		{"an older one names the host path of a large file", status(413, `{"detail":"`+ws+`/src/main.go: file larger than 5242880 bytes"}`),
			routes[2:], 413, "src/main.go: file larger than 5242880 bytes"},
	} {
		answer.Store(&tc.answer)
		for _, route := range tc.routes {
			req, _ := http.NewRequest("GET", url+"/api/v1/app-conversations/"+conv+route, nil)
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Errorf("%s: %s: %d, want %d: %s", tc.name, route, res.StatusCode, tc.status, body)
				continue
			}
			var got struct {
				Detail json.RawMessage `json:"detail"`
			}
			if err := json.Unmarshal(body, &got); err != nil || got.Detail == nil {
				t.Errorf("%s: %s: body is not {\"detail\": …}: %s", tc.name, route, body)
				continue
			}
			var detail string
			if tc.status == 422 {
				var items []struct {
					Loc []any  `json:"loc"`
					Msg string `json:"msg"`
				}
				if json.Unmarshal(got.Detail, &items) != nil || len(items) != 1 || items[0].Msg != tc.detail {
					t.Errorf("%s: %s: detail %s, want the msg %q", tc.name, route, got.Detail, tc.detail)
				}
			} else if json.Unmarshal(got.Detail, &detail) != nil || detail != tc.detail {
				t.Errorf("%s: %s: detail %s, want %q", tc.name, route, got.Detail, tc.detail)
			}
			if strings.Contains(string(body), "/srv/acs") {
				t.Errorf("%s: %s: the answer names the host path: %s", tc.name, route, body)
			}
		}
	}
}

// TestSendMessageToAFullSandboxIs507: an agent server whose disk is full
// answers 507; the V1 route passes that on as 507 with Retry-After (the
// sandbox's storage, not a failed agent server: it was 502).
func TestSendMessageToAFullSandboxIs507(t *testing.T) {
	var answer atomic.Pointer[func(w http.ResponseWriter, r *http.Request)]
	full := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusInsufficientStorage)
		w.Write([]byte(`{"detail":"Insufficient storage: the disk is full"}`))
	}
	answer.Store(&full)
	url, conv := agentFaultEnv(t, "/srv/acs/sandboxes/sb-review/workspace", &answer)
	req, _ := http.NewRequest("POST", url+"/api/v1/app-conversations/"+conv+"/send-message",
		strings.NewReader(`{"role":"user","content":[{"type":"text","text":"hello"}]}`))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var got struct {
		Detail string `json:"detail"`
	}
	if res.StatusCode != http.StatusInsufficientStorage || res.Header.Get("Retry-After") == "" ||
		json.Unmarshal(body, &got) != nil || !strings.Contains(got.Detail, "disk is full") {
		t.Fatalf("send-message to a full sandbox: %d (Retry-After %q) %s; want 507 with Retry-After and a detail saying the disk is full",
			res.StatusCode, res.Header.Get("Retry-After"), body)
	}
}
