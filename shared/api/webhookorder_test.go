package api_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/acs"
)

// TestWebhookAgentStateIgnoresOlderReports: a conversation info captured
// before an agent_state event but delivered after it (the two webhooks are
// separate requests) must not undo it — here the rate-limit mark that makes
// the conversation read PAUSED.
func TestWebhookAgentStateIgnoresOlderReports(t *testing.T) {
	e := newEnv(t, false)
	const conv = "0000000000000000000000000000abcd"
	hdr := hookSandbox(t, e, "sb-order", "order-key-0123456789", conv, acs.SandboxRunning)
	now := time.Now().UTC()
	until := now.Add(time.Hour).Format(time.RFC3339)
	// The reading (PAUSED while rate limited) comes from the stored mark;
	// the sandbox here is not in the runtime, so read the record.
	reading := func() string {
		t.Helper()
		c := record(t, e, conv)
		if c.RateLimitedUntil != nil && time.Now().Before(*c.RateLimitedUntil) {
			return "PAUSED"
		}
		return "RUNNING"
	}
	info := func(at time.Time, agentState string) {
		t.Helper()
		body := `{"id":"` + conv + `","execution_status":"running","updated_at":"` + events.At(at).String() + `","agent_state":` + agentState + `}`
		if r := e.do("POST", "/api/v1/webhooks/conversations", body, hdr); r.status != 200 {
			t.Fatalf("info: %d %s", r.status, r.body)
		}
	}
	// The rate-limit mark arrives as an event at now.
	batch := `[{"kind":"ConversationStateUpdateEvent","id":"as1","timestamp":"` + events.At(now).String() +
		`","key":"agent_state","value":{"llm_rate_limited_until":"` + until + `"}}]`
	if r := e.do("POST", "/api/v1/webhooks/events/"+conv, batch, hdr); r.status != 200 {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	if got := reading(); got != "PAUSED" {
		t.Fatalf("rate limited: reads %s, want PAUSED", got)
	}
	// An info captured a second earlier, without the mark, comes late.
	info(now.Add(-time.Second), `{}`)
	if got := reading(); got != "PAUSED" {
		t.Fatalf("after an older info: reads %s, want PAUSED", got)
	}
	// A newer one, after the backoff ended, clears it.
	info(now.Add(time.Second), `{}`)
	if got := reading(); got != "RUNNING" {
		t.Fatalf("after a newer info: reads %s, want RUNNING", got)
	}
}

// TestWebhookMetricsIgnoreOlderReports: a conversation info captured
// before a stats event but delivered after it must not put the older
// metrics back.
func TestWebhookMetricsIgnoreOlderReports(t *testing.T) {
	e := newEnv(t, false)
	const conv = "0000000000000000000000000000abce"
	hdr := hookSandbox(t, e, "sb-metrics", "metrics-key-0123456789", conv, acs.SandboxRunning)
	stats := func(tokens int) string {
		return fmt.Sprintf(`{"usage_to_metrics":{"agent":{"accumulated_token_usage":{"prompt_tokens":%d}}}}`, tokens)
	}
	tokens := func() string {
		t.Helper()
		c := record(t, e, conv)
		var m struct {
			Usage struct {
				Prompt json.Number `json:"prompt_tokens"`
			} `json:"accumulated_token_usage"`
		}
		if len(c.Metrics) > 0 {
			if err := json.Unmarshal(c.Metrics, &m); err != nil {
				t.Fatal(err)
			}
		}
		return m.Usage.Prompt.String()
	}
	info := func(at time.Time, tokens int) {
		t.Helper()
		body := `{"id":"` + conv + `","execution_status":"running","updated_at":"` + events.At(at).String() + `","stats":` + stats(tokens) + `}`
		if r := e.do("POST", "/api/v1/webhooks/conversations", body, hdr); r.status != 200 {
			t.Fatalf("info: %d %s", r.status, r.body)
		}
	}
	now := time.Now().UTC()
	batch := `[{"kind":"ConversationStateUpdateEvent","id":"st1","timestamp":"` + events.At(now).String() +
		`","key":"stats","value":` + stats(300) + `}]`
	if r := e.do("POST", "/api/v1/webhooks/events/"+conv, batch, hdr); r.status != 200 {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	if got := tokens(); got != "300" {
		t.Fatalf("after the stats event: %s prompt tokens, want 300", got)
	}
	info(now.Add(-time.Second), 200)
	if got := tokens(); got != "300" {
		t.Fatalf("after an older info: %s prompt tokens, want 300", got)
	}
	info(now.Add(time.Second), 400)
	if got := tokens(); got != "400" {
		t.Fatalf("after a newer info: %s prompt tokens, want 400", got)
	}
}
