package runtimeapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/runtimeapi"
	"github.com/acs-project/acs/shared/sandboxtest"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// TestConformance: process sandboxes served by the runtime API and driven
// through the client pass the runtime suite, restarts after a crash
// (RestartAfterCrash) included.
func TestConformance(t *testing.T) {
	root := t.TempDir()
	c := runtimeapi.NewClient(serve(t, testbin.ACS(t), root), "runtime-key")
	sandboxtest.Run(t, c, sandboxtest.LocalOptions(root, restartBackoff))
}

// restartBackoff is how long the served runtime waits before restarting a
// crashed agent server.
const restartBackoff = 500 * time.Millisecond

// serve serves process sandboxes of binary under root through the runtime
// API (key "runtime-key") for the test's duration and returns its URL.
func serve(t *testing.T, binary, root string) string {
	t.Helper()
	rt, err := procsandbox.New(procsandbox.Config{Binary: binary, Root: root, RestartBackoff: restartBackoff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	srv := httptest.NewServer(runtimeapi.Handler(rt, "runtime-key", func(image string) acs.SandboxSpec { return acs.SandboxSpec{ID: image} }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNeedsTheKey: every call but /health needs X-API-Key.
func TestNeedsTheKey(t *testing.T) {
	url := serve(t, "/nonexistent", t.TempDir())
	for _, tc := range []struct {
		path, key string
		want      int
	}{{"/sessions/x", "", 401}, {"/sessions/x", "wrong", 401}, {"/sessions/x", "runtime-key", 404}, {"/health", "", 200}} {
		req, _ := http.NewRequest("GET", url+tc.path, nil)
		if tc.key != "" {
			req.Header.Set("X-API-Key", tc.key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s with key %q: %d, want %d", tc.path, tc.key, res.StatusCode, tc.want)
		}
	}
	// The client turns a wrong key into an error, not a MISSING sandbox.
	if _, err := runtimeapi.NewClient(url, "wrong").Status(t.Context(), "x"); err == nil {
		t.Fatal("a wrong key must be an error")
	}
}
