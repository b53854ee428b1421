package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestLLMProfileReachesTheAgent (a real `acs serve`, through the typed
// client): the web client configuration answers without a key; settings
// posted in the OpenHands frontend's shape are kept; activating an LLM
// profile makes new conversations use its model, base URL and key, which
// no answer returns.
func TestLLMProfileReachesTheAgent(t *testing.T) {
	installation := llmtest.New(llmtest.Reply{Repeat: true, Text: "from the installation's LLM"})
	defer installation.Close()
	mine := llmtest.New(llmtest.Reply{Repeat: true, Text: "from my profile's LLM"})
	defer mine.Close()
	s := startServe(t, t.TempDir(), installation.URL)
	ctx := t.Context()
	cfg, err := s.api("").WebClientConfig(ctx)
	if err != nil || cfg.AppMode != "oss" || cfg.AuthURL == nil || *cfg.AuthURL != "/login" {
		t.Fatalf("web client config without a key: %+v %v", cfg, err)
	}
	c := s.api(apiKey)
	var st map[string]any
	s.admin("POST", "/api/v1/settings", map[string]any{"language": "de", "user_consents_to_analytics": false,
		"enable_sound_notifications": true, "max_budget_per_task": nil, "git_user_name": "Ada", "git_user_email": "ada@example.com",
		"agent_settings_diff": map[string]any{"condenser": map[string]any{"enabled": true}}, "conversation_settings_diff": map[string]any{"max_iterations": 40}}).into(&st)
	if st["language"] != "de" || st["git_user_name"] != "Ada" || st["user_consents_to_analytics"] != false {
		t.Fatalf("settings answer %v", st)
	}
	llm := json.RawMessage(`{"model":"openai/profile-model","base_url":"` + mine.URL + `","api_key":"sk-profile-5678"}`)
	if _, err := c.SaveLLMProfile(ctx, "mine", &v1wire.SaveProfileRequest{IncludeSecrets: true, LLM: llm}); err != nil {
		t.Fatal(err)
	}
	if a, err := c.ActivateLLMProfile(ctx, "mine"); err != nil || a.Model == nil || *a.Model != "openai/profile-model" {
		t.Fatalf("activate: %+v %v", a, err)
	}
	tk := s.mustStart(apiKey, map[string]any{"initial_message": msg("hi")})
	s.waitConv(apiKey, *tk.AppConversationID, "finished", func(c *convInfo) bool { return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished" })
	if len(mine.Requests()) == 0 || len(installation.Requests()) != 0 || mine.Requests()[0].Model != "profile-model" {
		t.Fatalf("the agent called the installation's LLM (%d) instead of the profile's (%d)", len(installation.Requests()), len(mine.Requests()))
	}
	for _, p := range []string{"/api/v1/settings", "/api/v1/settings/profiles", "/api/v1/settings/profiles/mine"} {
		var out any
		s.admin("GET", p, nil).into(&out)
		if strings.Contains(string(mustJSON(out)), "sk-profile-5678") {
			t.Errorf("%s returned the key", p)
		}
	}
	if strings.Contains(s.log.String(), "sk-profile-5678") {
		t.Error("the server's log holds the key")
	}
}
