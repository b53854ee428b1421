package main_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testwait"
)

// TestServeWithoutUsableLLM: `acs serve` pointed at an LLM nothing answers
// says so on its console (what to set, `acs llmtest`) and in the web client
// configuration, and a conversation started anyway ends in error with the
// reason in its V1 events within seconds, not minutes of retries.
func TestServeWithoutUsableLLM(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	s := startServe(t, t.TempDir(), dead)

	if !testwait.Until(20*time.Second, func() bool { return strings.Contains(s.log.String(), "No usable LLM") }) {
		t.Fatalf("no LLM warning on the console:\n%s", s.log)
	}
	for _, want := range []string{"LLM_MODEL", "LLM_BASE_URL", "LLM_API_KEY", "acs llmtest", dead} {
		if !strings.Contains(s.log.String(), want) {
			t.Errorf("the console's LLM warning lacks %q:\n%s", want, s.log)
		}
	}
	cfg, err := client.New(s.url, "").WebClientConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.Status != "unusable" || cfg.LLM.CheckedAt == nil || cfg.ErrorMessage == nil || !strings.Contains(*cfg.ErrorMessage, "LLM_BASE_URL") {
		t.Fatalf("web client config's LLM health %+v, error message %v", cfg.LLM, cfg.ErrorMessage)
	}

	begin := time.Now()
	conv, _ := lcStart(s, apiKey, "hello")
	c := s.waitConv(apiKey, conv, "error", func(c *convInfo) bool { return lcExec(c) == "error" })
	var errEv map[string]any
	if !testwait.Until(30*time.Second, func() bool {
		for _, ev := range lcEvents(s, apiKey, conv) {
			if ev["kind"] == "ConversationErrorEvent" {
				errEv = ev
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no ConversationErrorEvent in the V1 events (conversation %+v)\n%s", c, s.log)
	}
	detail, _ := errEv["detail"].(string)
	if errEv["code"] != "LLMConnectionError" || !strings.Contains(detail, "LLM_BASE_URL") || strings.Contains(detail, "sk-e2e") {
		t.Fatalf("error event %v", errEv)
	}
	t.Logf("start to error event: %v", time.Since(begin))
}
