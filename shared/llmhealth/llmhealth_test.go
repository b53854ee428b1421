package llmhealth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/llmhealth"
)

// TestCheck runs the check against real endpoints: the scripted LLM server
// (with and without the key it requires), a port nothing listens on, and a
// name that does not resolve.
func TestCheck(t *testing.T) {
	const key = "sk-health-secret-key"
	srv := llmtest.New()
	defer srv.Close()
	locked := llmtest.New()
	defer locked.Close()
	locked.RequireKey(key)
	cases := []struct {
		name   string
		target llmhealth.Target
		status string
		detail []string
	}{
		{"hosted default without a key", llmhealth.Target{}, llmhealth.StatusUnusable, []string{"LLM_API_KEY is not set"}},
		{"scripted server", llmhealth.Target{BaseURL: srv.URL, Model: "m"}, llmhealth.StatusOK, []string{srv.URL}},
		{"key accepted", llmhealth.Target{BaseURL: locked.URL, APIKey: key}, llmhealth.StatusOK, nil},
		{"key refused", llmhealth.Target{BaseURL: locked.URL, APIKey: "sk-wrong-key"}, llmhealth.StatusUnusable, []string{"refuses LLM_API_KEY", "HTTP 401"}},
		{"key missing", llmhealth.Target{BaseURL: locked.URL}, llmhealth.StatusUnusable, []string{"LLM_API_KEY is not set"}},
		{"nothing listens", llmhealth.Target{BaseURL: llmtest.ClosedURL(), APIKey: key}, llmhealth.StatusUnusable, []string{"does not answer", "refused"}},
		{"name does not resolve", llmhealth.Target{BaseURL: "http://acs-no-such-llm.invalid/v1", APIKey: key}, llmhealth.StatusUnusable,
			[]string{"acs-no-such-llm.invalid does not resolve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := llmhealth.Check(context.Background(), nil, tc.target)
			if h.Status != tc.status || h.CheckedAt.IsZero() {
				t.Fatalf("health %+v, want %s", h, tc.status)
			}
			for _, want := range tc.detail {
				if !strings.Contains(h.Detail, want) {
					t.Errorf("detail lacks %q: %s", want, h.Detail)
				}
			}
			if strings.Contains(h.Detail, key) || strings.Contains(llmhealth.Advice(h), key) {
				t.Fatalf("the key leaked: %s", h.Detail)
			}
		})
	}
}

func TestAdviceNamesWhatToSet(t *testing.T) {
	a := llmhealth.Advice(llmhealth.Health{Status: llmhealth.StatusUnusable, Detail: "LLM_API_KEY is not set."})
	for _, want := range []string{"LLM_API_KEY is not set.", "LLM_MODEL", "LLM_BASE_URL", "LLM_API_KEY", "acs llmtest"} {
		if !strings.Contains(a, want) {
			t.Errorf("advice lacks %q:\n%s", want, a)
		}
	}
}

// TestMonitor: the monitor reads unknown until its first check, then the
// check's result, and reports each change.
func TestMonitor(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	m := llmhealth.NewMonitor(llmhealth.Target{BaseURL: srv.URL}, nil)
	if h := m.Current(); h.Status != llmhealth.StatusUnknown {
		t.Fatalf("before the first check: %+v", h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := make(chan llmhealth.Health, 4)
	m.Start(ctx, time.Hour, func(h llmhealth.Health) { changes <- h })
	select {
	case <-m.Checked():
	case <-time.After(10 * time.Second):
		t.Fatal("the first check did not end")
	}
	if h := m.Current(); h.Status != llmhealth.StatusOK {
		t.Fatalf("after the first check: %+v", h)
	}
	select {
	case h := <-changes:
		if h.Status != llmhealth.StatusOK {
			t.Fatalf("first change %+v", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first result was not reported")
	}
}
