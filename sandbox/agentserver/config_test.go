package agentserver_test

import (
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/agentserver"
)

func TestConfigFromEnv(t *testing.T) {
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := agentserver.ConfigFromEnv(get(map[string]string{
		"OH_SESSION_API_KEYS_0": "k0", "OH_SESSION_API_KEYS_1": "k1", "OH_SESSION_API_KEYS_3": "gap-ignored",
		"SESSION_API_KEY": "legacy", "ACS_WORKSPACE_DIR": "/w", "OH_WEBHOOKS_0_BASE_URL": "http://cp/api/v1/webhooks",
		"OH_ALLOW_CORS_ORIGINS_0": "https://app", "OH_RUNTIME_IDLE_TIMEOUT_SECONDS": "600",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.SessionKeys, ",") != "k0,k1" || cfg.ConversationsDir != "/w/conversations" ||
		cfg.WebhookURLs[0] != "http://cp/api/v1/webhooks" || cfg.CORSOrigins[0] != "https://app" || *cfg.IdleTimeoutSeconds != 600 {
		t.Fatalf("config %+v", cfg)
	}
	cfg, _ = agentserver.ConfigFromEnv(get(map[string]string{"SESSION_API_KEY": "legacy"}))
	if len(cfg.SessionKeys) != 1 || cfg.SessionKeys[0] != "legacy" {
		t.Fatalf("legacy key: %v", cfg.SessionKeys)
	}
	cfg, _ = agentserver.ConfigFromEnv(get(nil))
	if len(cfg.SessionKeys) != 0 {
		t.Fatal("keys without configuration")
	}
	_, err = agentserver.ConfigFromEnv(get(map[string]string{"OH_WEBHOOKS_0_BASE_URL": "cp:80", "OH_RUNTIME_IDLE_TIMEOUT_SECONDS": "-1"}))
	if err == nil || !strings.Contains(err.Error(), "OH_WEBHOOKS_0_BASE_URL") || !strings.Contains(err.Error(), "OH_RUNTIME_IDLE_TIMEOUT_SECONDS") {
		t.Fatalf("bad config: %v", err)
	}
}
