// Package llmhealth checks whether the installation's LLM is usable: an API
// key for the hosted default, and an endpoint that answers GET /models. It
// backs `acs serve`'s start-up warning and the llm field of the web client
// configuration, so that a user learns at once that agents cannot run.
package llmhealth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Status values of Health.
const (
	StatusOK       = "ok"       // the endpoint answered /models with the key
	StatusUnusable = "unusable" // agents cannot call it: Detail says why
	StatusUnknown  = "unknown"  // not checked yet, or an answer that proves nothing
)

// DefaultBaseURL is where agents go when LLM_BASE_URL is not set.
const DefaultBaseURL = "https://api.openai.com/v1"

// Timeout bounds one check.
const Timeout = 3 * time.Second

// Health is the result of a check. Detail never contains the API key.
type Health struct {
	Status    string
	Detail    string
	CheckedAt time.Time
}

// Target is what a check looks at: the installation's LLM variables.
type Target struct {
	BaseURL, APIKey, Model string
}

// Check checks t within Timeout (or ctx's deadline, if earlier): the hosted
// default without a key is unusable without a request; otherwise GET
// <base>/models must answer. A name that does not resolve, a refused or
// timed-out connection and a 401/403 are unusable; another error status is
// unknown (some endpoints have no /models); a 2xx is ok.
func Check(ctx context.Context, hc *http.Client, t Target) Health {
	now := time.Now().UTC()
	base := strings.TrimRight(t.BaseURL, "/")
	if base == "" {
		if t.APIKey == "" {
			return Health{Status: StatusUnusable, CheckedAt: now,
				Detail: "LLM_API_KEY is not set, and without LLM_BASE_URL agents call OpenAI's hosted API, which needs a key."}
		}
		base = DefaultBaseURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return Health{Status: StatusUnusable, CheckedAt: now, Detail: fmt.Sprintf("LLM_BASE_URL %q is not a usable URL.", base)}
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Health{Status: StatusUnusable, CheckedAt: now, Detail: fmt.Sprintf("the LLM endpoint %s does not answer: %s.", base, reason(err))}
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if t.APIKey == "" {
			return Health{Status: StatusUnusable, CheckedAt: now,
				Detail: fmt.Sprintf("the LLM endpoint %s needs an API key (HTTP %d to /models) and LLM_API_KEY is not set.", base, resp.StatusCode)}
		}
		return Health{Status: StatusUnusable, CheckedAt: now,
			Detail: fmt.Sprintf("the LLM endpoint %s refuses LLM_API_KEY (HTTP %d to /models).", base, resp.StatusCode)}
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return Health{Status: StatusOK, CheckedAt: now, Detail: fmt.Sprintf("the LLM endpoint %s answers; model %s.", base, t.Model)}
	}
	return Health{Status: StatusUnknown, CheckedAt: now,
		Detail: fmt.Sprintf("the LLM endpoint %s answered /models with HTTP %d; agents may still work.", base, resp.StatusCode)}
}

// reason is a short, key-free description of a failed request.
func reason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the name %s does not resolve", dnsErr.Name)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %v", Timeout)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Err.Error()
	}
	return err.Error()
}

// Advice is the paragraph `acs serve` prints when h is unusable: what is
// missing, the three variables, and `acs llmtest` to try ACS without a
// model.
func Advice(h Health) string {
	return "No usable LLM: " + h.Detail + "\n" +
		"Agents need an OpenAI-compatible chat completions endpoint. Set LLM_MODEL (the model, default gpt-4o),\n" +
		"LLM_BASE_URL (the endpoint, default OpenAI's) and LLM_API_KEY (its key), then restart. To try ACS\n" +
		"without a model, run `acs llmtest -script examples/llmtest-demo.json` and start ACS with\n" +
		"LLM_BASE_URL=http://127.0.0.1:4000/v1. Until then, conversations end at once with an LLM error."
}

// Monitor keeps the latest Health of a target, checked at Start and again
// every interval. Its zero value is not usable; make one with NewMonitor.
type Monitor struct {
	target Target
	client *http.Client

	mu      sync.Mutex
	current Health
	checked chan struct{} // closed after the first check
}

// NewMonitor returns a monitor whose health is unknown until Start's first
// check ends.
func NewMonitor(t Target, hc *http.Client) *Monitor {
	return &Monitor{target: t, client: hc, current: Health{Status: StatusUnknown, Detail: "not checked yet"},
		checked: make(chan struct{})}
}

// Start checks now and then every interval until ctx ends, in the
// background; onChange (optional) is called with each health whose status
// differs from the previous one (the first included).
func (m *Monitor) Start(ctx context.Context, interval time.Duration, onChange func(Health)) {
	go func() {
		prev := ""
		t := time.NewTicker(interval)
		defer t.Stop()
		for first := true; ; first = false {
			h := Check(ctx, m.client, m.target)
			if ctx.Err() != nil {
				return
			}
			m.mu.Lock()
			m.current = h
			m.mu.Unlock()
			if first {
				close(m.checked)
			}
			if h.Status != prev && onChange != nil {
				onChange(h)
			}
			prev = h.Status
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Checked is closed once the first check has ended.
func (m *Monitor) Checked() <-chan struct{} { return m.checked }

// Current returns the latest health.
func (m *Monitor) Current() Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}
