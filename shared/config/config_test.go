package config_test

import (
	"strings"
	"testing"

	"github.com/acs-project/acs/shared/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := config.LoadLocal(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:3000" || !strings.HasSuffix(c.DataDir, ".acs") || c.PublicURL != "http://127.0.0.1:3000" ||
		c.LLMModel != "gpt-4o" || c.Workers != 4 || c.SandboxStartupTimeout.Seconds() != 120 {
		t.Fatalf("defaults %+v", c)
	}
	c, err = config.LoadLocal(env(map[string]string{"ACS_ADDR": "0.0.0.0:8080"}))
	if err != nil || c.PublicURL != "http://127.0.0.1:8080" {
		t.Fatalf("0.0.0.0 public URL: %+v %v", c, err)
	}
}

func TestOneErrorListsEveryProblem(t *testing.T) {
	_, err := config.LoadLocal(env(map[string]string{
		"ACS_ADDR": "nonsense", "ACS_API_KEY": "short", "LLM_BASE_URL": "ftp://x", "ACS_WORKERS": "0",
		"ACS_SANDBOX_STARTUP_TIMEOUT": "soon",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, name := range []string{"ACS_ADDR", "ACS_API_KEY", "LLM_BASE_URL", "ACS_WORKERS", "ACS_SANDBOX_STARTUP_TIMEOUT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}
