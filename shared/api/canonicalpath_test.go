package api_test

import (
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReviewRoutesTakeTheCanonicalWorkspace: the review routes take
// OpenHands' /workspace/project (and paths below it) as the conversation's
// project directory, and still refuse a path that leaves the workspace.
func TestReviewRoutesTakeTheCanonicalWorkspace(t *testing.T) {
	const ws = "/srv/acs/sandboxes/sb-review/workspace"
	var (
		mu    sync.Mutex
		asked []string
	)
	answer := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+" "+r.URL.Query().Get("path"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/file/download":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte("# Plan\n"))
		case "/api/git/diff":
			w.Write([]byte(`{"modified":"x","original":null}`))
		default:
			w.Write([]byte(`[]`))
		}
	}
	var holder atomic.Pointer[func(w http.ResponseWriter, r *http.Request)]
	holder.Store(&answer)
	base, conv := agentFaultEnv(t, ws, &holder)
	get := func(route string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/api/v1/app-conversations/"+conv+route, nil)
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	q := url.QueryEscape
	tests := []struct {
		route  string
		status int
		asked  string // what the agent server was asked, "" for nothing
	}{
		{"/file?file_path=" + q("/workspace/project/.agents_tmp/PLAN.md"), 200, "/api/file/download " + ws + "/.agents_tmp/PLAN.md"},
		{"/git/diff?path=" + q("/workspace/project/src/main.go"), 200, "/api/git/diff " + ws + "/src/main.go"},
		{"/git/changes?path=" + q("/workspace/project"), 200, "/api/git/changes " + ws},
		{"/file?file_path=" + q(ws+"/src/main.go"), 200, "/api/file/download " + ws + "/src/main.go"},
		{"/file?file_path=" + q("/workspace/project/../../etc/passwd"), 422, ""},
		{"/file?file_path=" + q("/workspace/projectx/a"), 422, ""},
	}
	for _, tc := range tests {
		mu.Lock()
		asked = nil
		mu.Unlock()
		status, body := get(tc.route)
		mu.Lock()
		got := ""
		if len(asked) > 0 {
			got = asked[len(asked)-1]
		}
		mu.Unlock()
		if status != tc.status || got != tc.asked {
			t.Errorf("%s: HTTP %d (%s), agent asked %q; want %d, %q", tc.route, status, body, got, tc.status, tc.asked)
		}
	}
}
