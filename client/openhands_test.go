package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

// webEnv is a control plane without sandboxes (the web frontend's routes
// need none): the V1 API over a bbolt store behind an httptest server.
type webEnv struct {
	url   string
	store *boltstore.Store
}

func newWebEnv(t *testing.T, flow startflow.Config, opts ...func(*api.Deps)) *webEnv {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	for _, u := range []struct{ id, key string }{{"admin", adminKey}, {"bob", bobKey}} {
		if err := store.CreateUser(ctx, acs.User{ID: u.id, Name: u.id, Admin: u.id == "admin"}); err != nil {
			t.Fatal(err)
		}
		if err := store.CreateAPIKey(ctx, acs.APIKey{ID: u.id + "-k", UserID: u.id, Hash: acs.HashKey(u.key)}); err != nil {
			t.Fatal(err)
		}
	}
	d := api.Deps{Services: services.Build(services.Adapters{Store: store, Flow: flow,
		Sealer: sealbox.FromPassphrase("web test")})}
	for _, o := range opts {
		o(&d)
	}
	srv := httptest.NewServer(api.New(d).Handler())
	t.Cleanup(srv.Close)
	return &webEnv{url: srv.URL, store: store}
}

// raw sends a request with key (none when "") and returns status and body.
func (e *webEnv) raw(t *testing.T, key, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func statusOf(err error) int {
	var ae *client.Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// TestWebClientConfig: the configuration answers without a key, in
// OpenHands' shape, and lists the caller's git providers when it has a key.
func TestWebClientConfig(t *testing.T) {
	e := newWebEnv(t, startflow.Config{})
	ctx := ctxFor(t, time.Minute)
	status, body := e.raw(t, "", "GET", "/api/v1/web-client/config", "")
	if status != 200 {
		t.Fatalf("anonymous config: %d %s", status, body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"app_mode": "oss", "posthog_client_key": nil, "providers_configured": []any{},
		"maintenance_start_time": nil, "auth_url": "/login", "recaptcha_site_key": nil, "faulty_models": []any{},
		"error_message": nil, "github_app_slug": nil,
		// No LLM health source (as in a Lambda function): unknown, no banner.
		"llm": map[string]any{"checked_at": nil, "detail": "not checked", "status": "unknown"}}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("config lacks %s: %s", k, body)
			continue
		}
		if gb, _ := json.Marshal(got); string(gb) != mustJSON(v) {
			t.Errorf("config %s = %s, want %s", k, gb, mustJSON(v))
		}
	}
	if _, err := time.Parse(time.RFC3339, m["updated_at"].(string)); err != nil {
		t.Errorf("updated_at %v: %v", m["updated_at"], err)
	}
	flags, _ := m["feature_flags"].(map[string]any)
	for _, f := range []string{"enable_billing", "hide_llm_settings", "enable_jira", "enable_jira_dc", "enable_linear",
		"hide_users_page", "hide_billing_page", "hide_integrations_page", "enable_onboarding"} {
		if _, ok := flags[f].(bool); !ok {
			t.Errorf("feature_flags.%s is not a boolean: %s", f, body)
		}
	}
	if flags["enable_billing"] != false || flags["hide_llm_settings"] != false || flags["hide_integrations_page"] != false {
		t.Errorf("feature flags %v", flags)
	}

	// With a key and a GitHub token stored: github is configured for that
	// user only.
	if _, err := client.New(e.url, bobKey).SetGitProviders(ctx, map[string]v1wire.ProviderTokenIn{"github": {Token: ptr("ghp_bobs")}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		want string
	}{{bobKey, `["github"]`}, {adminKey, `[]`}, {"", `[]`}, {"not-a-key", `[]`}} {
		cfg, err := client.New(e.url, c.key).WebClientConfig(ctx)
		if err != nil {
			t.Fatalf("config with key %q: %v", c.key, err)
		}
		if got := mustJSON(cfg.ProvidersConfigured); got != c.want {
			t.Errorf("providers_configured with key %q = %s, want %s", c.key, got, c.want)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

var _ = bytes.NewReader

// TestSkillsSearch pages the installation's skills by name.
func TestSkillsSearch(t *testing.T) {
	skills := []v1wire.SkillInfo{{Name: "zeta", Type: "knowledge", Source: "user", Triggers: []string{"z"}},
		{Name: "alpha", Type: "repo", Source: "public", Triggers: []string{}}}
	e := newWebEnv(t, startflow.Config{}, func(d *api.Deps) {
		d.Skills = func(context.Context) ([]v1wire.SkillInfo, error) { return skills, nil }
	})
	ctx := ctxFor(t, time.Minute)
	c := client.New(e.url, bobKey)
	p, err := c.SearchSkills(ctx, client.Filter{"limit": {"1"}})
	if err != nil || len(p.Items) != 1 || p.Items[0].Name != "alpha" || p.NextPageID == nil {
		t.Fatalf("page 1: %+v %v", p, err)
	}
	p, err = c.SearchSkills(ctx, client.Filter{"limit": {"1"}, "page_id": {*p.NextPageID}})
	if err != nil || len(p.Items) != 1 || p.Items[0].Name != "zeta" || p.Items[0].Source != "user" || p.NextPageID != nil {
		t.Fatalf("page 2: %+v %v", p, err)
	}
	if status, body := newWebEnv(t, startflow.Config{}).raw(t, bobKey, "GET", "/api/v1/skills/search", ""); status != 200 || body != `{"items":[],"next_page_id":null}` {
		t.Errorf("without skills: %d %s", status, body)
	}
}
