// Package config reads the control plane's configuration from environment
// variables, once, reporting every problem in one error.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Local is the configuration of `acs serve`.
type Local struct {
	// Addr is where the V1 API listens (ACS_ADDR, default 127.0.0.1:3000).
	Addr string
	// DataDir holds the store, queue and sandboxes (ACS_DATA_DIR, default
	// ./.acs).
	DataDir string
	// APIKey is the admin user's key (ACS_API_KEY); when empty one is
	// generated on first start and kept in the data dir.
	APIKey string
	// PublicURL is how sandboxes reach the control plane (ACS_PUBLIC_URL,
	// default http://<Addr>, with 0.0.0.0 replaced by 127.0.0.1).
	PublicURL string
	// LLMBaseURL, LLMAPIKey and LLMModel configure the agents' LLM.
	LLMBaseURL, LLMAPIKey, LLMModel string
	// Workers is how many start tasks are processed at once (ACS_WORKERS,
	// default 4).
	Workers int
	// SandboxStartupTimeout bounds waiting for a sandbox
	// (ACS_SANDBOX_STARTUP_TIMEOUT, default 120s).
	SandboxStartupTimeout time.Duration
	// GitHost is where selected_repository is cloned from (ACS_GIT_HOST,
	// default https://github.com).
	GitHost string
	// MaxRunningSandboxes caps each user's running sandboxes
	// (ACS_MAX_RUNNING_SANDBOXES, default 10; 0 means no cap).
	MaxRunningSandboxes int
	// IdlePause pauses a sandbox idle this long (ACS_IDLE_PAUSE_AFTER,
	// default 30m); IdleCleanup archives and cleans up one paused this long
	// (ACS_IDLE_CLEANUP_AFTER, default 168h). 0 disables.
	IdlePause, IdleCleanup time.Duration
	// ReconcileInterval spaces the idle reconciler's passes
	// (ACS_RECONCILE_INTERVAL, default 30s).
	ReconcileInterval time.Duration
	// SecretKey seals stored secrets (ACS_SECRET_KEY); when empty a random
	// key is generated and kept in the data dir.
	SecretKey string
	// ResumeWait bounds a transparent resume (ACS_RESUME_WAIT, default
	// 60s); CloneTimeout and SetupTimeout bound cloning the repository
	// (ACS_CLONE_TIMEOUT, default 120s) and .openhands/setup.sh
	// (ACS_SETUP_TIMEOUT, default 600s).
	ResumeWait, CloneTimeout, SetupTimeout time.Duration
	// SpecsFile is a JSON array of sandbox specs (ACS_SANDBOX_SPECS); empty
	// means the built-in default spec.
	SpecsFile string
}

// LoadLocal reads the local configuration through getenv.
func LoadLocal(getenv func(string) string) (Local, error) {
	var c Local
	var problems []string
	c.Addr = or(getenv("ACS_ADDR"), "127.0.0.1:3000")
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		problems = append(problems, fmt.Sprintf("ACS_ADDR %q must be host:port", c.Addr))
	}
	dir, err := filepath.Abs(or(getenv("ACS_DATA_DIR"), ".acs"))
	if err != nil {
		problems = append(problems, "ACS_DATA_DIR: "+err.Error())
	}
	c.DataDir = dir
	c.APIKey = getenv("ACS_API_KEY")
	if c.APIKey != "" && len(c.APIKey) < 16 {
		problems = append(problems, "ACS_API_KEY must be at least 16 characters")
	}
	c.PublicURL = strings.TrimRight(getenv("ACS_PUBLIC_URL"), "/")
	if c.PublicURL == "" && err == nil {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		c.PublicURL = "http://" + net.JoinHostPort(host, port)
	}
	if u, err := url.Parse(c.PublicURL); c.PublicURL != "" && (err != nil || u.Scheme == "" || u.Host == "") {
		problems = append(problems, fmt.Sprintf("ACS_PUBLIC_URL %q must be an absolute URL", c.PublicURL))
	}
	c.LLMBaseURL = getenv("LLM_BASE_URL")
	if c.LLMBaseURL != "" {
		if u, err := url.Parse(c.LLMBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, fmt.Sprintf("LLM_BASE_URL %q must be an http(s) URL", c.LLMBaseURL))
		}
	}
	c.LLMAPIKey = getenv("LLM_API_KEY")
	c.LLMModel = or(getenv("LLM_MODEL"), "gpt-4o")
	c.Workers = 4
	if v := getenv("ACS_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			problems = append(problems, "ACS_WORKERS must be an integer from 1 to 64")
		} else {
			c.Workers = n
		}
	}
	c.SandboxStartupTimeout = 120 * time.Second
	if v := getenv("ACS_SANDBOX_STARTUP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problems = append(problems, "ACS_SANDBOX_STARTUP_TIMEOUT must be a positive duration such as 2m")
		} else {
			c.SandboxStartupTimeout = d
		}
	}
	c.GitHost = strings.TrimRight(or(getenv("ACS_GIT_HOST"), "https://github.com"), "/")
	if u, err := url.Parse(c.GitHost); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, fmt.Sprintf("ACS_GIT_HOST %q must be an http(s) URL", c.GitHost))
	}
	c.MaxRunningSandboxes = 10
	if v := getenv("ACS_MAX_RUNNING_SANDBOXES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			problems = append(problems, "ACS_MAX_RUNNING_SANDBOXES must be a non-negative integer (0: no cap)")
		} else {
			c.MaxRunningSandboxes = n
		}
	}
	dur := func(name string, def time.Duration, allowZero bool) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		if v == "0" && allowZero {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || (d == 0 && !allowZero) {
			problems = append(problems, name+" must be a duration such as 30m"+map[bool]string{true: " (0 disables)", false: ""}[allowZero])
			return def
		}
		return d
	}
	c.IdlePause = dur("ACS_IDLE_PAUSE_AFTER", 30*time.Minute, true)
	c.IdleCleanup = dur("ACS_IDLE_CLEANUP_AFTER", 7*24*time.Hour, true)
	c.ReconcileInterval = dur("ACS_RECONCILE_INTERVAL", 30*time.Second, false)
	c.ResumeWait = dur("ACS_RESUME_WAIT", 60*time.Second, false)
	c.CloneTimeout = dur("ACS_CLONE_TIMEOUT", 120*time.Second, false)
	c.SetupTimeout = dur("ACS_SETUP_TIMEOUT", 600*time.Second, false)
	c.SecretKey = getenv("ACS_SECRET_KEY")
	if c.SecretKey != "" && len(c.SecretKey) < 16 {
		problems = append(problems, "ACS_SECRET_KEY must be at least 16 characters")
	}
	c.SpecsFile = getenv("ACS_SANDBOX_SPECS")
	if len(problems) > 0 {
		return c, errors.New("configuration: " + strings.Join(problems, "; "))
	}
	return c, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
