package client_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestOpenHandsSettings: the frontend's whole settings object is accepted
// and answered back, agent_settings.llm sets the LLM settings, the key is
// never returned and analytics consent is never null.
func TestOpenHandsSettings(t *testing.T) {
	e := newWebEnv(t, startflow.Config{})
	ctx := ctxFor(t, time.Minute)
	status, body := e.raw(t, bobKey, "GET", "/api/v1/settings", "")
	if status != 200 || !strings.Contains(body, `"user_consents_to_analytics":false`) || !strings.Contains(body, `"language":"en"`) {
		t.Fatalf("fresh settings: %d %s", status, body)
	}
	post := `{"language":"fr","user_consents_to_analytics":true,"enable_sound_notifications":true,
		"enable_proactive_conversation_starters":false,"enable_solvability_analysis":true,"max_budget_per_task":2.5,
		"git_user_name":"Bob","git_user_email":"bob@example.com","confirmation_mode":true,"agent":"CodeActAgent",
		"agent_settings_diff":{"llm":{"model":"openai/gpt-x","api_key":"sk-secret-123","base_url":"https://llm.example.com/v1","temperature":0.2},"condenser":{"enabled":false}},
		"conversation_settings_diff":{"max_iterations":50}}`
	if status, body = e.raw(t, bobKey, "POST", "/api/v1/settings", post); status != 200 {
		t.Fatalf("post: %d %s", status, body)
	}
	if strings.Contains(body, "sk-secret-123") {
		t.Fatalf("the key came back: %s", body)
	}
	c := client.New(e.url, bobKey)
	st, err := c.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.LLMModel == nil || *st.LLMModel != "openai/gpt-x" || st.LLMBaseURL == nil || *st.LLMBaseURL != "https://llm.example.com/v1" || !st.LLMAPIKeySet {
		t.Errorf("LLM settings from agent_settings_diff: %+v", st)
	}
	if st.Language != "fr" || !st.UserConsentsToAnalytics || !st.EnableSoundNotifications || st.EnableProactiveConversationStarters ||
		!st.EnableSolvabilityAnalysis || st.MaxBudgetPerTask == nil || *st.MaxBudgetPerTask != 2.5 || st.GitUserName == nil || *st.GitUserName != "Bob" {
		t.Errorf("UI fields: %+v", st.OpenHandsSettings)
	}
	var agent map[string]map[string]any
	_ = json.Unmarshal(st.AgentSettings, &agent)
	if agent["llm"]["model"] != "openai/gpt-x" || agent["llm"]["api_key"] != nil || agent["llm"]["temperature"] != 0.2 || agent["condenser"]["enabled"] != false {
		t.Errorf("agent_settings %s", st.AgentSettings)
	}
	if string(st.ConversationSettings) != `{"max_iterations":50}` {
		t.Errorf("conversation_settings %s", st.ConversationSettings)
	}
	_, body = e.raw(t, bobKey, "GET", "/api/v1/settings", "")
	if strings.Contains(body, "sk-secret-123") || !strings.Contains(body, `"agent":"CodeActAgent"`) || !strings.Contains(body, `"confirmation_mode":true`) {
		t.Errorf("GET settings: %s", body)
	}
	// A diff keeps the rest; null consent stays a boolean; another user
	// sees none of it.
	if status, body = e.raw(t, bobKey, "POST", "/api/v1/settings", `{"user_consents_to_analytics":null,"agent_settings_diff":{"condenser":{"max_size":80}}}`); status != 200 {
		t.Fatalf("diff: %d %s", status, body)
	}
	st, _ = c.GetSettings(ctx)
	_ = json.Unmarshal(st.AgentSettings, &agent)
	if st.UserConsentsToAnalytics || agent["condenser"]["enabled"] != false || agent["condenser"]["max_size"] != 80.0 || !st.LLMAPIKeySet {
		t.Errorf("after the diff: consent %v agent %s", st.UserConsentsToAnalytics, st.AgentSettings)
	}
	// The personal settings pages post agent_settings itself: it merges
	// too, and an empty key keeps the stored one.
	if status, body = e.raw(t, bobKey, "POST", "/api/v1/settings", `{"agent_settings":{"llm":{"model":"openai/other","api_key":""}}}`); status != 200 {
		t.Fatalf("agent_settings: %d %s", status, body)
	}
	st, _ = c.GetSettings(ctx)
	agent = nil
	_ = json.Unmarshal(st.AgentSettings, &agent)
	if st.LLMModel == nil || *st.LLMModel != "openai/other" || !st.LLMAPIKeySet || agent["condenser"]["max_size"] != 80.0 || agent["llm"]["temperature"] != 0.2 {
		t.Errorf("after agent_settings: model %v key %v agent %s", st.LLMModel, st.LLMAPIKeySet, st.AgentSettings)
	}
	other, _ := client.New(e.url, adminKey).GetSettings(ctx)
	if other.LLMModel != nil || other.Language != "en" {
		t.Errorf("admin sees bob's settings: %+v", other)
	}
}

// TestLLMProfilesAndSchemas: save, list, get, activate and delete profiles;
// keys are never returned; activating sets the LLM settings.
func TestLLMProfilesAndSchemas(t *testing.T) {
	e := newWebEnv(t, startflow.Config{})
	ctx := ctxFor(t, time.Minute)
	c := client.New(e.url, bobKey)
	for _, get := range []func() (string, int, error){
		func() (string, int, error) {
			s, err := c.AgentSettingsSchema(ctx)
			return s.ModelName, len(s.Sections), err
		},
		func() (string, int, error) {
			s, err := c.ConversationSettingsSchema(ctx)
			return s.ModelName, len(s.Sections), err
		},
	} {
		if name, n, err := get(); err != nil || name == "" || n == 0 {
			t.Errorf("schema %q with %d sections: %v", name, n, err)
		}
	}
	if _, body := e.raw(t, bobKey, "GET", "/api/v1/settings/agent-schema", ""); !strings.Contains(body, `"key":"llm.model"`) || !strings.Contains(body, `"section_label":"Condenser"`) {
		t.Errorf("agent schema %s", body)
	}
	llm := json.RawMessage(`{"model":"anthropic/claude-x","base_url":"https://a.example.com","api_key":"sk-prof-1","temperature":0.1}`)
	if m, err := c.SaveLLMProfile(ctx, "work", &v1wire.SaveProfileRequest{IncludeSecrets: true, LLM: llm}); err != nil || m.Name != "work" {
		t.Fatalf("save: %+v %v", m, err)
	}
	if _, err := c.SaveLLMProfile(ctx, "empty", nil); err != nil {
		t.Fatalf("save the current settings: %v", err)
	}
	list, err := c.ListLLMProfiles(ctx)
	if err != nil || len(list.Profiles) != 2 || list.ActiveProfile != nil || !list.Profiles[0].APIKeySet || list.Profiles[1].APIKeySet {
		t.Fatalf("list: %+v %v", list, err)
	}
	d, err := c.GetLLMProfile(ctx, "work")
	if err != nil || !d.APIKeySet || !strings.Contains(string(d.Config), `"api_key":null`) || !strings.Contains(string(d.Config), `"temperature":0.1`) {
		t.Fatalf("get: %s %v", d.Config, err)
	}
	if a, err := c.ActivateLLMProfile(ctx, "work"); err != nil || a.Model == nil || *a.Model != "anthropic/claude-x" {
		t.Fatalf("activate: %+v %v", a, err)
	}
	st, _ := c.GetSettings(ctx)
	if st.LLMModel == nil || *st.LLMModel != "anthropic/claude-x" || !st.LLMAPIKeySet {
		t.Errorf("settings after activate: %+v", st)
	}
	if list, _ = c.ListLLMProfiles(ctx); list.ActiveProfile == nil || *list.ActiveProfile != "work" {
		t.Errorf("active %v", list.ActiveProfile)
	}
	for _, p := range []string{"/api/v1/settings/profiles", "/api/v1/settings/profiles/work"} {
		if _, body := e.raw(t, bobKey, "GET", p, ""); strings.Contains(body, "sk-prof-1") {
			t.Errorf("%s returned the key: %s", p, body)
		}
	}
	// Another user cannot see, activate or delete it.
	admin := client.New(e.url, adminKey)
	if _, err := admin.GetLLMProfile(ctx, "work"); statusOf(err) != 404 {
		t.Errorf("admin get: %v", err)
	}
	if _, err := admin.ActivateLLMProfile(ctx, "work"); statusOf(err) != 404 {
		t.Errorf("admin activate: %v", err)
	}
	if _, err := admin.DeleteLLMProfile(ctx, "work"); err != nil {
		t.Errorf("admin delete (idempotent): %v", err)
	}
	// Renaming keeps the key and the active mark; a taken name is 409.
	if _, err := c.RenameLLMProfile(ctx, "work", "empty"); statusOf(err) != 409 {
		t.Errorf("rename onto a taken name: %v", err)
	}
	if _, err := c.RenameLLMProfile(ctx, "nope", "other"); statusOf(err) != 404 {
		t.Errorf("rename an unknown profile: %v", err)
	}
	if m, err := c.RenameLLMProfile(ctx, "work", "job"); err != nil || m.Name != "job" {
		t.Fatalf("rename: %+v %v", m, err)
	}
	if list, _ = c.ListLLMProfiles(ctx); list.ActiveProfile == nil || *list.ActiveProfile != "job" || !list.Profiles[0].APIKeySet {
		t.Errorf("after rename: %+v", list)
	}
	if _, err := c.RenameLLMProfile(ctx, "job", "work"); err != nil {
		t.Fatal(err)
	}
	// Deleting the active profile activates the remaining one.
	if _, err := c.DeleteLLMProfile(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	if list, _ = c.ListLLMProfiles(ctx); len(list.Profiles) != 1 || list.ActiveProfile == nil || *list.ActiveProfile != "empty" {
		t.Errorf("after delete: %+v", list)
	}
}

// TestSecretsSearch: the literal route wins over a secret named "search",
// which cannot be created.
func TestSecretsSearch(t *testing.T) {
	e := newWebEnv(t, startflow.Config{})
	ctx := ctxFor(t, time.Minute)
	c := client.New(e.url, bobKey)
	for _, n := range []string{"ALPHA", "BETA", "GAMMA_ALPHA"} {
		if _, err := c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: n, Value: "v-" + n}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "search", Value: "v"}); statusOf(err) != 422 {
		t.Errorf("a secret named search: %v", err)
	}
	p, err := c.SearchSecrets(ctx, client.Filter{"limit": {"2"}})
	if err != nil || len(p.Items) != 2 || p.NextPageID == nil || p.Items[0].Name != "ALPHA" {
		t.Fatalf("page 1: %+v %v", p, err)
	}
	p2, err := c.SearchSecrets(ctx, client.Filter{"limit": {"2"}, "page_id": {*p.NextPageID}})
	if err != nil || len(p2.Items) != 1 || p2.NextPageID != nil || p2.Items[0].Name != "GAMMA_ALPHA" {
		t.Fatalf("page 2: %+v %v", p2, err)
	}
	if p, _ = c.SearchSecrets(ctx, client.Filter{"name__contains": {"alpha"}}); len(p.Items) != 2 {
		t.Errorf("name__contains: %+v", p)
	}
	if p, _ = client.New(e.url, adminKey).SearchSecrets(ctx, nil); len(p.Items) != 0 {
		t.Errorf("admin sees bob's secrets: %+v", p)
	}
	if _, body := e.raw(t, bobKey, "GET", "/api/v1/secrets/search", ""); strings.Contains(body, "v-ALPHA") {
		t.Errorf("values returned: %s", body)
	}
}

// fakeGitHub stands in for github.com's REST API (not reachable offline):
// it answers GitHub-shaped JSON and records the Authorization headers.
type fakeGitHub struct {
	mu    sync.Mutex
	auths []string
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer ghp_valid_token" {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"message":"Bad credentials"}`))
		return
	}
	switch r.URL.Path {
	case "/api/v3/user/repos":
		if r.URL.Query().Get("page") == "2" {
			_, _ = w.Write([]byte(`[]`))
			return
		}
		_, _ = w.Write([]byte(`[{"id":1,"full_name":"bob/app","private":true,"stargazers_count":3,"pushed_at":"2026-05-01T00:00:00Z","default_branch":"main","owner":{"type":"User"}},
			{"id":2,"full_name":"org/lib","private":false,"stargazers_count":9,"default_branch":"trunk","owner":{"type":"Organization"}}]`))
	case "/api/v3/search/repositories":
		_, _ = w.Write([]byte(`{"total_count":1,"items":[{"id":3,"full_name":"x/` + r.URL.Query().Get("q") + `","private":false,"owner":{"type":"User"}}]}`))
	case "/api/v3/repos/bob/app/branches":
		_, _ = w.Write([]byte(`[{"name":"main","commit":{"sha":"aaa"},"protected":true},{"name":"feature-x","commit":{"sha":"bbb"},"protected":false}]`))
	case "/api/v3/user/installations":
		_, _ = w.Write([]byte(`{"total_count":1,"installations":[{"id":77}]}`))
	default:
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"message":"Not Found"}`))
	}
}

// TestGitRepositoryPicker lists repositories, branches and installations
// from a GitHub-shaped API with the stored token, which is sent to the git
// host and never appears in an answer or a log line.
func TestGitRepositoryPicker(t *testing.T) {
	gh := &fakeGitHub{}
	ghSrv := httptest.NewServer(gh)
	t.Cleanup(ghSrv.Close)
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	e := newWebEnv(t, startflow.Config{GitHost: ghSrv.URL})
	ctx := ctxFor(t, time.Minute)
	c := client.New(e.url, bobKey)
	if _, err := c.SearchGitRepositories(ctx, client.Filter{"provider": {"github"}}); statusOf(err) != 401 {
		t.Errorf("without a token: %v", err)
	}
	if _, err := c.SetGitProviders(ctx, map[string]v1wire.ProviderTokenIn{"github": {Token: ptr("ghp_valid_token"), Host: ptr("github.com")}}); err != nil {
		t.Fatal(err)
	}
	st, _ := c.GetSettings(ctx)
	if h := st.ProviderTokensSet["github"]; h == nil || *h != "github.com" {
		t.Errorf("provider_tokens_set %v", st.ProviderTokensSet)
	}
	repos, err := c.SearchGitRepositories(ctx, client.Filter{"provider": {"github"}, "limit": {"1"}, "sort_order": {"desc"}})
	if err != nil || len(repos.Items) != 1 || repos.Items[0].FullName != "bob/app" || repos.Items[0].IsPublic ||
		repos.Items[0].MainBranch == nil || *repos.Items[0].MainBranch != "main" || repos.NextPageID == nil {
		t.Fatalf("repositories: %+v %v", repos, err)
	}
	if repos, err = c.SearchGitRepositories(ctx, client.Filter{"provider": {"github"}, "query": {"needle"}}); err != nil || len(repos.Items) != 1 || repos.Items[0].FullName != "x/needle" {
		t.Errorf("search: %+v %v", repos, err)
	}
	br, err := c.SearchGitBranches(ctx, client.Filter{"provider": {"github"}, "repository": {"bob/app"}, "query": {"FEAT"}})
	if err != nil || len(br.Items) != 1 || br.Items[0].Name != "feature-x" || br.Items[0].CommitSHA != "bbb" {
		t.Errorf("branches: %+v %v", br, err)
	}
	if br, err = c.SearchGitBranches(ctx, client.Filter{"provider": {"github"}, "repository": {"bob/app"}}); err != nil || len(br.Items) != 2 || !br.Items[0].Protected {
		t.Errorf("all branches: %+v %v", br, err)
	}
	inst, err := c.SearchGitInstallations(ctx, client.Filter{"provider": {"github"}})
	if err != nil || len(inst.Items) != 1 || inst.Items[0] != "77" {
		t.Errorf("installations: %+v %v", inst, err)
	}
	if _, err := c.SearchGitRepositories(ctx, client.Filter{"provider": {"gitlab"}}); statusOf(err) != 422 {
		t.Errorf("gitlab: %v", err)
	}
	// Another user has no token; a wrong token is GitHub's 401, as 502.
	if _, err := client.New(e.url, adminKey).SearchGitRepositories(ctx, client.Filter{"provider": {"github"}}); statusOf(err) != 401 {
		t.Errorf("admin without a token: %v", err)
	}
	if _, err := client.New(e.url, adminKey).SetGitProviders(ctx, map[string]v1wire.ProviderTokenIn{"github": {Token: ptr("ghp_wrong")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(e.url, adminKey).SearchGitRepositories(ctx, client.Filter{"provider": {"github"}}); statusOf(err) != 502 || strings.Contains(err.Error(), "ghp_wrong") {
		t.Errorf("a refused token: %v", err)
	}
	gh.mu.Lock()
	sent := strings.Join(gh.auths, "\n")
	gh.mu.Unlock()
	if !strings.Contains(sent, "Bearer ghp_valid_token") {
		t.Errorf("the token was not sent: %q", sent)
	}
	for _, p := range []string{"/api/v1/settings", "/api/v1/git/repositories/search?provider=github", "/api/v1/web-client/config"} {
		if _, body := e.raw(t, bobKey, "GET", p, ""); strings.Contains(body, "ghp_valid_token") {
			t.Errorf("%s leaks the token: %s", p, body)
		}
	}
	if strings.Contains(logs.String(), "ghp_") {
		t.Errorf("the logs hold a token:\n%s", logs.String())
	}
	// Unset: the picker needs a token again.
	if _, err := c.UnsetGitProviders(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SearchGitRepositories(ctx, client.Filter{"provider": {"github"}}); statusOf(err) != 401 {
		t.Errorf("after unset: %v", err)
	}
	// DELETE /api/v1/secrets/git-providers (not a secret named so) too.
	if _, err := c.SetGitProviders(ctx, map[string]v1wire.ProviderTokenIn{"github": {Token: ptr("ghp_valid_token")}}); err != nil {
		t.Fatal(err)
	}
	if status, body := e.raw(t, bobKey, "DELETE", "/api/v1/secrets/git-providers", ""); status != 200 || !strings.Contains(body, "Unset") {
		t.Errorf("DELETE git-providers: %d %s", status, body)
	}
	if st, _ := c.GetSettings(ctx); len(st.ProviderTokensSet) != 0 {
		t.Errorf("tokens left: %v", st.ProviderTokensSet)
	}
}
