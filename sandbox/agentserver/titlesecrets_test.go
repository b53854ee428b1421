package agentserver_test

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
)

// TestTitleRefusesSecretValues: a title set on the agent server (PATCH,
// a fork's title) that holds the value of one of the conversation's
// secrets, or of another value the server hides such as the LLM key, is
// refused with 422 at body.title, naming the secret as the control plane
// does. Nothing changes: the title, the conversations, meta.json and
// what the webhooks push never hold the value.
func TestTitleRefusesSecretValues(t *testing.T) {
	const (
		token  = "tok-title-5a6b7c8d"
		llmKey = "sk-secret-llm-key"
	)
	var hookMu sync.Mutex
	var hookBodies [][]byte
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hookBodies = append(hookBodies, b)
		hookMu.Unlock()
	}))
	defer hooks.Close()
	hooked := func() []byte {
		hookMu.Lock()
		defer hookMu.Unlock()
		return bytes.Join(hookBodies, []byte("\n"))
	}
	e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) { c.WebhookURLs = []string{hooks.URL} }})
	id := e.create(map[string]any{"secrets": map[string]any{"API_TOKEN": token}})
	cases := []struct {
		name, method, path, title, msg string
	}{
		{"PATCH, the conversation's secret", "PATCH", "/api/conversations/" + id, "deploy " + token,
			"the title contains the value of secret API_TOKEN; secret values may not appear in titles"},
		{"PATCH, the LLM key", "PATCH", "/api/conversations/" + id, llmKey + " title",
			"the title contains a secret value; secret values may not appear in titles"},
		{"fork title, the source's secret", "POST", "/api/conversations/" + id + "/fork", token,
			"the title contains the value of secret API_TOKEN; secret values may not appear in titles"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, map[string]any{"title": tc.title})
			assert422(t, r, "body.title")
			if !strings.Contains(string(r.body), tc.msg) {
				t.Fatalf("refusal %s, want %q", r.body, tc.msg)
			}
			if n := e.call("GET", "/api/conversations/count", nil); string(n.body) != "1" {
				t.Fatalf("conversations after a refused %s: %s", tc.name, n.body)
			}
		})
	}
	// Titles without a secret's value pass, and reach the control plane.
	if r := e.call("PATCH", "/api/conversations/"+id, map[string]any{"title": "uses $API_TOKEN"}); r.status != 200 {
		t.Fatalf("clean PATCH: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/conversations/"+id+"/fork", map[string]any{"title": "a clean fork"}); r.status != 201 {
		t.Fatalf("clean fork: %d %s", r.status, r.body)
	}
	if !testwait.Until(20*time.Second, func() bool {
		all := hooked()
		return bytes.Contains(all, []byte(`"title":"uses $API_TOKEN"`)) && bytes.Contains(all, []byte(`"title":"a clean fork"`))
	}) {
		t.Fatalf("the webhooks never pushed the clean titles:\n%s", hooked())
	}
	var info map[string]any
	e.call("GET", "/api/conversations/"+id, nil).json(t, &info)
	if info["title"] != "uses $API_TOKEN" {
		t.Fatalf("title %v", info["title"])
	}
	for _, v := range []string{token, llmKey} {
		if bytes.Contains(hooked(), []byte(v)) {
			t.Errorf("a webhook pushed %q", v)
		}
	}
	filepath.WalkDir(e.cfg.ConversationsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, v := range []string{token, llmKey} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("file %s holds %q", p, v)
			}
		}
		return nil
	})
}
