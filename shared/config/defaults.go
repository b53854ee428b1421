package config

import "time"

// Every default of the control plane's configuration, in one place: Load
// applies them to unset variables, and code that needs a default (the
// start flow's in-code configurations, the AWS stacks' queue settings)
// takes it from here rather than restating it.
const (
	// DefaultAddr is ACS_ADDR's default.
	DefaultAddr = "127.0.0.1:3000"
	// DefaultDataDir is ACS_DATA_DIR's default (relative to the working
	// directory).
	DefaultDataDir = ".acs"
	// DefaultLLMModel is LLM_MODEL's default.
	DefaultLLMModel = "gpt-4o"
	// DefaultLLMRetryTotal is ACS_LLM_RETRY_TOTAL's default: with the
	// agent's backoff (8 s, then 64 s each) five retries, 4 min 24 s.
	DefaultLLMRetryTotal = 5 * time.Minute
	// DefaultSandboxStartupTimeout is ACS_SANDBOX_STARTUP_TIMEOUT's default.
	DefaultSandboxStartupTimeout = 120 * time.Second
	// DefaultGitHost is ACS_GIT_HOST's default.
	DefaultGitHost = "https://github.com"
	// DefaultMaxRunningSandboxes is ACS_MAX_RUNNING_SANDBOXES's default.
	DefaultMaxRunningSandboxes = 10
	// DefaultIdlePause is ACS_IDLE_PAUSE_AFTER's default.
	DefaultIdlePause = 30 * time.Minute
	// DefaultIdleCleanup is ACS_IDLE_CLEANUP_AFTER's default (7 days).
	DefaultIdleCleanup = 7 * 24 * time.Hour
	// DefaultResumeWait is ACS_RESUME_WAIT's default.
	DefaultResumeWait = 60 * time.Second
	// DefaultCloneTimeout is ACS_CLONE_TIMEOUT's default.
	DefaultCloneTimeout = 120 * time.Second
	// DefaultSetupTimeout is ACS_SETUP_TIMEOUT's default.
	DefaultSetupTimeout = 600 * time.Second
	// DefaultStartTaskTTL is ACS_START_TASK_TTL's default.
	DefaultStartTaskTTL = time.Hour
	// DefaultWorkers is ACS_WORKERS's default.
	DefaultWorkers = 4
	// DefaultWarmSandboxes is ACS_WARM_SANDBOXES's default.
	DefaultWarmSandboxes = 1
	// DefaultReconcileInterval is ACS_RECONCILE_INTERVAL's default.
	DefaultReconcileInterval = 30 * time.Second
	// DefaultSessionTTL is ACS_SESSION_TTL's default (7 days).
	DefaultSessionTTL = 7 * 24 * time.Hour
	// DefaultOIDCName is ACS_OIDC_NAME's default.
	DefaultOIDCName = "single sign-on"
	// DefaultKubeNamespace, DefaultKubeSeparator, DefaultKubeScheme and
	// DefaultKubeRouting are the defaults of ACS_KUBE_NAMESPACE,
	// ACS_KUBE_HOST_SEPARATOR, ACS_KUBE_SCHEME and ACS_KUBE_ROUTING.
	DefaultKubeNamespace = "acs-sandboxes"
	DefaultKubeSeparator = "."
	DefaultKubeScheme    = "https"
	DefaultKubeRouting   = "ingress"
	// DefaultRuntimeAddr and DefaultRuntimeRoot are the defaults of
	// ACS_RUNTIME_ADDR and ACS_RUNTIME_ROOT (`acs runtime-api`).
	DefaultRuntimeAddr = "127.0.0.1:5000"
	DefaultRuntimeRoot = ".acs-runtime"
)

// Start-flow settings no variable changes.
const (
	// DefaultPollInterval spaces status checks while a sandbox boots or a
	// setup command runs.
	DefaultPollInterval = 2 * time.Second
	// LocalPollInterval is `acs serve`'s poll interval: process sandboxes
	// boot in milliseconds.
	LocalPollInterval = 20 * time.Millisecond
	// DefaultVisibility is how long a start-task delivery is kept
	// invisible at a time while its steps run (the heartbeat renews it
	// every half of it). The AWS stacks derive the start queue's settings
	// from it.
	DefaultVisibility = 60 * time.Second
	// DefaultMaxAttempts is how many deliveries of one start-flow step may
	// fail before its task ends ERROR. The AWS stacks derive the start
	// queue's dead-letter redrive from it.
	DefaultMaxAttempts = 5
)

// DefaultTools are the tools every agent gets.
func DefaultTools() []string { return []string{"terminal", "file_editor", "task_tracker"} }

// Defaults is the shared configuration with every variable unset: each
// field at its default. PublicURL, the LLM's base URL and key, the secret
// key and the specs have none.
func Defaults() Common {
	return Common{
		LLMModel:              DefaultLLMModel,
		LLMRetryTotal:         DefaultLLMRetryTotal,
		SandboxStartupTimeout: DefaultSandboxStartupTimeout,
		GitHost:               DefaultGitHost,
		MaxRunningSandboxes:   DefaultMaxRunningSandboxes,
		IdlePause:             DefaultIdlePause,
		IdleCleanup:           DefaultIdleCleanup,
		ResumeWait:            DefaultResumeWait,
		CloneTimeout:          DefaultCloneTimeout,
		SetupTimeout:          DefaultSetupTimeout,
		StartTaskTTL:          DefaultStartTaskTTL,
		PollInterval:          DefaultPollInterval,
		Visibility:            DefaultVisibility,
		MaxAttempts:           DefaultMaxAttempts,
		Tools:                 DefaultTools(),
		BrowserTools:          true,
		SignIn:                SignIn{SessionTTL: DefaultSessionTTL, OIDC: OIDC{Name: DefaultOIDCName, CreateUsers: true}},
	}
}
