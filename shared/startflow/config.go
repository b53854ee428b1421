package startflow

import (
	"time"

	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/sandboxes"
)

// Config configures the start flow: the part of the configuration tree it
// uses (ConfigFrom). The defaults are config's (shared/config/defaults.go).
type Config struct {
	// Sandboxes configures the sandbox lifecycle the flow creates, waits
	// for and resumes sandboxes with (specs, cap, poll interval, resume
	// wait).
	Sandboxes sandboxes.Config
	// LLM is the installation's LLM configuration (model, base URL, key);
	// a user's settings override the model, base URL and key.
	LLM llmconfig.Config
	// Tools are the tools every agent gets.
	Tools []string
	// BrowserTools adds browser_tool_set to a default agent's tools when
	// the sandbox's agent server lists it in usable_tools.
	BrowserTools bool
	// GitHost is where selected_repository is cloned from.
	GitHost string
	// StartupTimeout bounds waiting for a sandbox.
	StartupTimeout time.Duration
	// CloneTimeout and SetupTimeout bound cloning the repository and its
	// .openhands/setup.sh.
	CloneTimeout, SetupTimeout time.Duration
	// Visibility is the queue visibility timeout of a delivery.
	Visibility time.Duration
	// MaxAttempts bounds retries of a step after infrastructure errors.
	MaxAttempts int
}

// Defaults returns c with every zero timeout, bound, tool list and git
// host set to config's default (config.Defaults). A configuration made by
// ConfigFrom has them all set already; this is for configurations built in
// code (tests, embedders). The caps and idle rules are left as they are
// (zero disables them).
func (c Config) Defaults() Config {
	d := ConfigFrom(config.Defaults(), nil)
	set := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	c.Sandboxes = c.Sandboxes.Defaults()
	set(&c.StartupTimeout, d.StartupTimeout)
	set(&c.CloneTimeout, d.CloneTimeout)
	set(&c.SetupTimeout, d.SetupTimeout)
	set(&c.Visibility, d.Visibility)
	if c.MaxAttempts == 0 {
		c.MaxAttempts = d.MaxAttempts
	}
	if len(c.Tools) == 0 {
		c.Tools = d.Tools
	}
	if c.GitHost == "" {
		c.GitHost = d.GitHost
	}
	return c
}

// ConfigFrom is the start-flow configuration of the shared part of a
// loaded configuration tree (config.Load), with the given sandbox specs:
// every field comes from c, none is defaulted here. The LLM's num_retries
// is as many retries as fit in c.LLMRetryTotal.
func ConfigFrom(c config.Common, specs []acs.SandboxSpec) Config {
	l := llmconfig.Default()
	l.Model = c.LLMModel
	l.NumRetries = l.RetriesWithin(c.LLMRetryTotal)
	if c.LLMBaseURL != "" {
		base := c.LLMBaseURL
		l.BaseURL = &base
	}
	if c.LLMAPIKey != "" {
		key := c.LLMAPIKey
		l.APIKey = &key
	}
	return Config{
		Sandboxes:      sandboxes.ConfigFrom(c, specs),
		LLM:            l,
		GitHost:        c.GitHost,
		StartupTimeout: c.SandboxStartupTimeout,
		CloneTimeout:   c.CloneTimeout,
		SetupTimeout:   c.SetupTimeout,
		Visibility:     c.Visibility,
		MaxAttempts:    c.MaxAttempts,
		Tools:          append([]string(nil), c.Tools...),
		BrowserTools:   c.BrowserTools,
	}
}
