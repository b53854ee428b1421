// Package agentserver is the agent server's HTTP and WebSocket API: the
// OpenHands-compatible routes under /api, the event socket under /sockets, and
// the server-details routes. It manages the conversations of one sandbox.
package agentserver

import (
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
	"github.com/acs-project/acs/sandbox/secrets"
	"github.com/acs-project/acs/sandbox/skills"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is the agent server's semver, reported by /server_info: the
// OpenHands agent server version whose API it covers (1.44: goals,
// navigate, profiles, LLM metadata, OpenAPI). OpenHands clients require at
// least 1.23.0 for their workspace features.
const Version = "1.44.0"

// Config configures the agent server.
type Config struct {
	// SessionKeys are accepted in X-Session-API-Key. Empty disables auth.
	SessionKeys []string
	// SecretKey (OH_SECRET_KEY) seals conversation secrets at rest; the first
	// session key is used when it is empty.
	SecretKey string
	// ConversationsDir holds one directory per conversation.
	ConversationsDir string
	// BashEventsDir holds the bash API's events.
	BashEventsDir string
	// WorkspaceDir is the default working directory.
	WorkspaceDir string
	// WebhookURLs receive events and conversation info.
	WebhookURLs []string
	// CORSOrigins may call the API from a browser.
	CORSOrigins []string
	// IdleTimeoutSeconds is reported in server_info (runtime idle timeout).
	IdleTimeoutSeconds *int64
	// Masker hides secret values; nil gives the server its own. Pass the one
	// the process's log handler uses so log lines are masked too.
	Masker *secrets.Masker
	// SkillDirs are the user (ACS_SKILLS_DIR), organisation
	// (ACS_ORG_SKILLS_DIR), public (ACS_PUBLIC_SKILLS_DIR) and sandbox
	// (ACS_SANDBOX_SKILLS_DIR) skill directories.
	SkillDirs skills.Dirs
	// Prewarm (ACS_AGENT_PREWARM=1) has the server create and remove a
	// throwaway conversation before it listens (see Server.Prewarm): set
	// for the pre-started agent servers of a warm pool.
	Prewarm bool
	// MCPConnectTimeout bounds connecting one MCP server
	// (ACS_MCP_CONNECT_TIMEOUT_SECONDS, default 30).
	MCPConnectTimeout time.Duration
	// TracerProvider makes the conversations' spans; nil uses the global
	// provider.
	TracerProvider trace.TracerProvider
	// ProfilesDir holds the saved LLM profiles (ACS_PROFILES_DIR; default
	// "profiles" next to the conversations directory).
	ProfilesDir string
	// LLMModel (LLM_MODEL) and LLMModels (ACS_LLM_MODELS, comma-separated)
	// are the models /api/llm/models lists as configured (verified).
	LLMModel  string
	LLMModels []string
	// LLMBaseURL (LLM_BASE_URL) and LLMAPIKey (LLM_API_KEY) are the
	// OpenAI-compatible endpoint whose /models /api/llm/models adds, when
	// no active profile names one.
	LLMBaseURL, LLMAPIKey string
	// DesktopURL (ACS_DESKTOP_URL) is the sandbox desktop's URL; empty:
	// there is no desktop (/api/desktop/url answers 503).
	DesktopURL string
	// BuildSHA and BuildRef identify the build.
	BuildSHA, BuildRef string
	// NoBrowser turns the browser tools off (ACS_BROWSER_TOOLS=false, e.g.
	// from a sandbox spec's initial_env): server_info then leaves
	// browser_tool_set out of usable_tools, as it does when no Chromium is
	// found, so V1 starts do not give agents the browser.
	NoBrowser bool
}

// indexed collects PREFIX_0, PREFIX_1, ... until the first gap.
func indexed(getenv func(string) string, prefix string) []string {
	var out []string
	for i := 0; ; i++ {
		v := getenv(fmt.Sprintf("%s_%d", prefix, i))
		if v == "" {
			break
		}
		out = append(out, v)
	}
	return out
}

// ConfigFromEnv reads the configuration the way the OpenHands agent server
// does: OH_SESSION_API_KEYS_0..n (else SESSION_API_KEY), OH_SECRET_KEY, OH_CONVERSATIONS_PATH
// (default <workspace>/conversations), OH_BASH_EVENTS_DIR (default next to
// the conversations directory), OH_WEBHOOKS_0_BASE_URL..n,
// OH_ALLOW_CORS_ORIGINS_0..n, OH_RUNTIME_IDLE_TIMEOUT_SECONDS,
// ACS_WORKSPACE_DIR (default ./workspace) for the default working directory,
// and ACS_AGENT_PREWARM.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	var problems []string
	cfg.SessionKeys = indexed(getenv, "OH_SESSION_API_KEYS")
	if len(cfg.SessionKeys) == 0 && getenv("SESSION_API_KEY") != "" {
		cfg.SessionKeys = []string{getenv("SESSION_API_KEY")}
	}
	cfg.SecretKey = getenv("OH_SECRET_KEY")
	cfg.SkillDirs = skills.Dirs{User: getenv("ACS_SKILLS_DIR"), Org: getenv("ACS_ORG_SKILLS_DIR"),
		Public: getenv("ACS_PUBLIC_SKILLS_DIR"), Sandbox: getenv("ACS_SANDBOX_SKILLS_DIR")}
	if cfg.SkillDirs.User == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cfg.SkillDirs.User = filepath.Join(home, ".openhands", "skills")
		}
	}
	cfg.Prewarm = getenv("ACS_AGENT_PREWARM") == "1"
	if v := getenv("ACS_MCP_CONNECT_TIMEOUT_SECONDS"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			problems = append(problems, "ACS_MCP_CONNECT_TIMEOUT_SECONDS must be a positive number")
		} else {
			cfg.MCPConnectTimeout = time.Duration(n * float64(time.Second))
		}
	}
	cfg.WorkspaceDir = getenv("ACS_WORKSPACE_DIR")
	if cfg.WorkspaceDir == "" {
		cfg.WorkspaceDir = "workspace"
	}
	abs, err := filepath.Abs(cfg.WorkspaceDir)
	if err != nil {
		problems = append(problems, "ACS_WORKSPACE_DIR: "+err.Error())
	}
	cfg.WorkspaceDir = abs
	cfg.ConversationsDir = getenv("OH_CONVERSATIONS_PATH")
	if cfg.ConversationsDir == "" {
		cfg.ConversationsDir = filepath.Join(cfg.WorkspaceDir, "conversations")
	}
	if abs, err := filepath.Abs(cfg.ConversationsDir); err == nil {
		cfg.ConversationsDir = abs
	}
	cfg.BashEventsDir = getenv("OH_BASH_EVENTS_DIR")
	if cfg.BashEventsDir == "" {
		cfg.BashEventsDir = filepath.Join(filepath.Dir(cfg.ConversationsDir), "bash_events")
	}
	if abs, err := filepath.Abs(cfg.BashEventsDir); err == nil {
		cfg.BashEventsDir = abs
	}
	var hooks []string
	for i := 0; ; i++ {
		v := getenv(fmt.Sprintf("OH_WEBHOOKS_%d_BASE_URL", i))
		if v == "" {
			break
		}
		if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
			problems = append(problems, fmt.Sprintf("OH_WEBHOOKS_%d_BASE_URL must be an http(s) URL", i))
		}
		hooks = append(hooks, v)
	}
	cfg.WebhookURLs = hooks
	cfg.CORSOrigins = indexed(getenv, "OH_ALLOW_CORS_ORIGINS")
	if v := getenv("OH_RUNTIME_IDLE_TIMEOUT_SECONDS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			problems = append(problems, "OH_RUNTIME_IDLE_TIMEOUT_SECONDS must be a positive integer")
		} else {
			cfg.IdleTimeoutSeconds = &n
		}
	}
	cfg.ProfilesDir = getenv("ACS_PROFILES_DIR")
	if cfg.ProfilesDir == "" {
		cfg.ProfilesDir = filepath.Join(filepath.Dir(cfg.ConversationsDir), "profiles")
	}
	if abs, err := filepath.Abs(cfg.ProfilesDir); err == nil {
		cfg.ProfilesDir = abs
	}
	cfg.LLMModel, cfg.LLMBaseURL, cfg.LLMAPIKey = getenv("LLM_MODEL"), getenv("LLM_BASE_URL"), getenv("LLM_API_KEY")
	for _, m := range strings.Split(getenv("ACS_LLM_MODELS"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.LLMModels = append(cfg.LLMModels, m)
		}
	}
	if v := cfg.LLMBaseURL; v != "" && !llmconfig.HTTPURL(v) {
		problems = append(problems, "LLM_BASE_URL must be an http(s) URL")
	}
	cfg.DesktopURL = getenv("ACS_DESKTOP_URL")
	if v := getenv("ACS_BROWSER_TOOLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, "ACS_BROWSER_TOOLS must be true or false")
		}
		cfg.NoBrowser = !b
	}
	cfg.BuildSHA, cfg.BuildRef = orUnknown(getenv("OPENHANDS_BUILD_GIT_SHA")), orUnknown(getenv("OPENHANDS_BUILD_GIT_REF"))
	if len(problems) > 0 {
		sort.Strings(problems)
		return cfg, fmt.Errorf("agent server configuration: %s", strings.Join(problems, "; "))
	}
	return cfg, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// DefaultEnv reads the process environment.
func DefaultEnv(key string) string { return os.Getenv(key) }
