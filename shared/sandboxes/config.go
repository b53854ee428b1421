package sandboxes

import (
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
)

// Config configures the sandbox lifecycle: the part of the configuration
// tree it uses (ConfigFrom). The defaults are config's
// (shared/config/defaults.go).
type Config struct {
	// WebhookBaseURL is where sandboxes push events (…/api/v1/webhooks).
	WebhookBaseURL string
	// CORSOrigin may call agent servers from a browser ("" for none):
	// ConfigFrom sets it to the origin of the public URL, where the web
	// frontend is served (BrowserOrigin), so that the frontend can stop a
	// conversation, list its changes and open its event socket.
	CORSOrigin string
	// Specs are the sandbox specs; the first is the default.
	Specs []acs.SandboxSpec
	// MaxRunningSandboxes caps each user's running (and starting)
	// sandboxes; 0 means no cap.
	MaxRunningSandboxes int
	// IdlePause pauses a RUNNING sandbox without activity for this long;
	// IdleCleanup archives and cleans up a sandbox PAUSED for this long.
	// Zero disables a rule.
	IdlePause, IdleCleanup time.Duration
	// ResumeWait bounds a transparent resume before a message or a file
	// read.
	ResumeWait time.Duration
	// PollInterval spaces status checks while a sandbox boots or a setup
	// command runs.
	PollInterval time.Duration
}

// ConfigFrom is the lifecycle configuration of the shared part of a loaded
// configuration tree (config.Load), with the given sandbox specs: every
// field comes from c, none is defaulted here.
func ConfigFrom(c config.Common, specs []acs.SandboxSpec) Config {
	return Config{
		WebhookBaseURL:      strings.TrimRight(c.PublicURL, "/") + "/api/v1/webhooks",
		CORSOrigin:          BrowserOrigin(c.PublicURL),
		Specs:               specs,
		MaxRunningSandboxes: c.MaxRunningSandboxes,
		IdlePause:           c.IdlePause,
		IdleCleanup:         c.IdleCleanup,
		ResumeWait:          c.ResumeWait,
		PollInterval:        c.PollInterval,
	}
}

// BrowserOrigin is the origin (RFC 6454) a browser sends for pages under
// publicURL: the scheme and host in lower case, and the port unless it is
// the scheme's default ("https://acs.example.com", "http://127.0.0.1:3000").
// It returns "" for a URL that is not absolute http(s).
func BrowserOrigin(publicURL string) string {
	u, err := url.Parse(strings.TrimSpace(publicURL))
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return ""
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// Defaults returns c with a zero ResumeWait and PollInterval set to
// config's default (config.Defaults). A configuration made by ConfigFrom
// has them set already; this is for configurations built in code (tests,
// embedders). The cap and idle rules are left as they are (zero disables
// them).
func (c Config) Defaults() Config {
	d := ConfigFrom(config.Defaults(), nil)
	if c.ResumeWait == 0 {
		c.ResumeWait = d.ResumeWait
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	return c
}

// Spec returns the sandbox spec with the given id ("" for the default).
func (c Config) Spec(id string) (acs.SandboxSpec, bool) {
	if len(c.Specs) == 0 {
		return acs.SandboxSpec{}, false
	}
	if id == "" {
		return c.Specs[0], true
	}
	for _, s := range c.Specs {
		if s.ID == id {
			return s, true
		}
	}
	return acs.SandboxSpec{}, false
}

// SandboxEnv is the environment every sandbox gets.
func (c Config) SandboxEnv() map[string]string {
	env := map[string]string{}
	if c.WebhookBaseURL != "" {
		env["OH_WEBHOOKS_0_BASE_URL"] = c.WebhookBaseURL
	}
	if c.CORSOrigin != "" {
		env["OH_ALLOW_CORS_ORIGINS_0"] = c.CORSOrigin
	}
	return env
}

func mergeEnv(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
