package procenv_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/procenv"
)

func TestWithheld(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"OH_SESSION_API_KEYS_0", true},
		{"OH_SESSION_API_KEYS_12", true},
		{"SESSION_API_KEY", true},
		{"OH_SECRET_KEY", true},
		{"OH_WEBHOOKS_0_BASE_URL", true},
		{"OH_WEBHOOKS_0_HEADERS", true},
		{"OTEL_EXPORTER_OTLP_HEADERS", true},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", true},
		{"PATH", false},
		{"HOME", false},
		{"GITHUB_TOKEN", false}, // a user's secret: the tools are meant to have it
		{"OH_CONVERSATIONS_PATH", false},
		{"ACS_WORKSPACE_DIR", false},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", false},
		{"session_api_key", false}, // names are case-sensitive, as the server reads them
	} {
		if got := procenv.Withheld(tc.name); got != tc.want {
			t.Errorf("Withheld(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFilter(t *testing.T) {
	in := []string{"PATH=/bin", "OH_SESSION_API_KEYS_0=k0", "HOME=/h", "SESSION_API_KEY=k", "OH_SECRET_KEY=s",
		"OH_WEBHOOKS_0_BASE_URL=http://cp/api/v1/webhooks", "GITHUB_TOKEN=ghp", "MALFORMED"}
	orig := slices.Clone(in)
	got := procenv.Filter(in)
	want := []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=ghp", "MALFORMED"}
	if !slices.Equal(got, want) {
		t.Fatalf("Filter\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(in, orig) {
		t.Fatalf("Filter modified its input: %q", in)
	}
}

func TestSecrets(t *testing.T) {
	env := []string{
		"PATH=/bin",
		"OH_SESSION_API_KEYS_0=session-key-0",
		"OH_SESSION_API_KEYS_1=session-key-1",
		"SESSION_API_KEY=single-key",
		"OH_SECRET_KEY=sealing-key",
		"OH_WEBHOOKS_0_BASE_URL=http://cp/api/v1/webhooks",
		`OH_WEBHOOKS_0_HEADERS={"Authorization":"Bearer hook-token"}`,
		"OTEL_EXPORTER_OTLP_HEADERS=x-api-key=otel%20token,x-other=plain-value",
		"GITHUB_TOKEN=ghp-user-secret",
		"SESSION_API_KEY_EMPTY=",
	}
	got := procenv.Secrets(env)
	for _, want := range []string{"session-key-0", "session-key-1", "single-key", "sealing-key",
		`{"Authorization":"Bearer hook-token"}`, "Bearer hook-token",
		"x-api-key=otel%20token,x-other=plain-value", "otel%20token", "otel token", "plain-value"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets lacks %q: %q", want, got)
		}
	}
	for _, v := range got {
		if strings.Contains(v, "cp/api/v1/webhooks") || v == "/bin" || v == "ghp-user-secret" || v == "" {
			t.Errorf("Secrets returns %q, which is not one of the server's credentials", v)
		}
	}
}
