package runtimeapi_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root, RestartBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	srv := httptest.NewServer(runtimeapi.Handler(rt, "runtime-key", func(image string) acs.SandboxSpec { return acs.SandboxSpec{ID: image} }))
	t.Cleanup(srv.Close)
	c := runtimeapi.NewClient(srv.URL, "runtime-key")
	sandboxtest.Run(t, c, sandboxtest.Options{
		AgentReachable:  true,
		Spec:            acs.SandboxSpec{ID: "acs-local"},
		KillAgent:       sandboxtest.KillByPIDFile(func(id string) string { return filepath.Join(root, id, "agent.pid") }),
		RestartBackoff:  500 * time.Millisecond,
		RemoveWorkspace: sandboxtest.RemoveWorkingDir,
		WriteFile: func(t *testing.T, st acs.RuntimeStatus, name, content string) {
			if err := os.WriteFile(filepath.Join(st.WorkingDir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		ReadFile: func(t *testing.T, st acs.RuntimeStatus, name string) (string, error) {
			b, err := os.ReadFile(filepath.Join(st.WorkingDir, name))
			return string(b), err
		},
	})
}

// TestNeedsTheKey: every call but /health needs X-API-Key.
func TestNeedsTheKey(t *testing.T) {
	rt, _ := procsandbox.New(procsandbox.Config{Binary: "/nonexistent", Root: t.TempDir()})
	srv := httptest.NewServer(runtimeapi.Handler(rt, "runtime-key", func(string) acs.SandboxSpec { return acs.SandboxSpec{} }))
	defer srv.Close()
	for _, tc := range []struct {
		path, key string
		want      int
	}{{"/sessions/x", "", 401}, {"/sessions/x", "wrong", 401}, {"/sessions/x", "runtime-key", 404}, {"/health", "", 200}} {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
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
	if _, err := runtimeapi.NewClient(srv.URL, "wrong").Status(t.Context(), "x"); err == nil {
		t.Fatal("a wrong key must be an error")
	}
}
