// Package config reads the control plane's configuration from environment
// variables, once (Load), into one tree that is passed down to the
// services and adapters, reporting every problem in one error. Every
// default is here (defaults.go); nothing after Load reads the environment.
package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/acs-project/acs/internal/httpserve"
	"github.com/acs-project/acs/shared/acs"
)

// Config is the control plane's one configuration tree. Load fills the
// parts its Target's program uses and leaves the others zero.
type Config struct {
	// Common is what both deployments share (acs serve and the
	// functions).
	Common
	// Log is how the process logs (LOG_LEVEL, LOG_JSON); every program.
	Log Log
	// HTTP bounds the HTTP server (ACS_MAX_CONNECTIONS,
	// ACS_MAX_CONNECTIONS_PER_IP, ACS_HTTP_READ_TIMEOUT); acs serve and acs
	// runtime-api.
	HTTP httpserve.Limits
	// Local is acs serve's own part.
	Local Local
	// AWS is a Lambda function's own part.
	AWS AWS
	// RuntimeServer is acs runtime-api's configuration.
	RuntimeServer RuntimeServer
}

// Program is the program a configuration is loaded for: it decides which
// variables are read and which are required.
type Program uint8

// The programs of the control plane.
const (
	// Serve is `acs serve`: Common, Local, HTTP and Log.
	Serve Program = iota + 1
	// Function is an AWS Lambda function: Common, AWS (as Target.Need
	// says) and Log.
	Function
	// RuntimeAPIServer is `acs runtime-api`: RuntimeServer, HTTP and Log.
	RuntimeAPIServer
)

// Target is what Load loads for: a program and, for a function, what it
// uses beyond the table.
type Target struct {
	Program Program
	// Need is a function's needs (Program Function only).
	Need Need
}

// Load reads the configuration of target's program through getenv (the
// one read of the environment) and returns the whole tree. Every missing
// or invalid variable of the shared and the program's own part is named in
// one error; the HTTP limits (and acs runtime-api's key) are checked after
// them. The tree is returned, as far as it could be read, with an error
// too.
func Load(getenv func(string) string, target Target) (Config, error) {
	p := &parser{getenv: getenv}
	c := Config{Log: Logging(getenv)}
	switch target.Program {
	case Serve:
		c.Common = p.common()
		p.local(&c)
	case Function:
		c.Common = p.common()
		p.aws(&c, target.Need)
	case RuntimeAPIServer:
	default:
		return c, fmt.Errorf("configuration: unknown program %d", target.Program)
	}
	if target.Program == RuntimeAPIServer {
		c.RuntimeServer = RuntimeServer{Addr: or(getenv("ACS_RUNTIME_ADDR"), DefaultRuntimeAddr),
			Root: or(getenv("ACS_RUNTIME_ROOT"), DefaultRuntimeRoot), APIKey: getenv(EnvRuntimeAPIKey)}
	}
	if err := p.err(); err != nil {
		return c, err
	}
	if target.Program == Serve || target.Program == RuntimeAPIServer {
		var err error
		if c.HTTP, err = httpserve.LimitsFromEnv(getenv); err != nil {
			return c, err
		}
	}
	if target.Program == RuntimeAPIServer {
		if len(c.RuntimeServer.APIKey) < 16 {
			return c, errors.New("runtime-api: ACS_RUNTIME_API_KEY must be set (at least 16 characters)")
		}
	}
	return c, nil
}

// Log is how a process logs.
type Log struct {
	// Level is LOG_LEVEL (debug, info, warn or warning, error; anything
	// else is info).
	Level slog.Level
	// JSON is LOG_JSON=true (any case): JSON lines instead of text.
	JSON bool
}

// Logging reads LOG_LEVEL and LOG_JSON through getenv. Every program of
// the binary logs this way, the agent server included, so it is read
// before a program's own configuration: Load reads it the same way.
func Logging(getenv func(string) string) Log {
	l := Log{Level: slog.LevelInfo, JSON: strings.EqualFold(getenv("LOG_JSON"), "true")}
	switch strings.ToLower(getenv("LOG_LEVEL")) {
	case "debug":
		l.Level = slog.LevelDebug
	case "warn", "warning":
		l.Level = slog.LevelWarn
	case "error":
		l.Level = slog.LevelError
	}
	return l
}

// RuntimeServer is the configuration of `acs runtime-api`.
type RuntimeServer struct {
	// Addr is where it listens (ACS_RUNTIME_ADDR, default 127.0.0.1:5000;
	// the -addr flag overrides it).
	Addr string
	// Root holds the sandboxes (ACS_RUNTIME_ROOT, default .acs-runtime;
	// the -root flag overrides it).
	Root string
	// APIKey is the key callers present (ACS_RUNTIME_API_KEY, at least 16
	// characters, required).
	APIKey string
}

// Common is the configuration both deployments share: the agents' LLM, the
// start flow and the lifecycle rules.
type Common struct {
	// PublicURL is how sandboxes reach the control plane (ACS_PUBLIC_URL);
	// their webhooks go to PublicURL/api/v1/webhooks.
	PublicURL string
	// LLMBaseURL, LLMAPIKey and LLMModel configure the agents' LLM.
	LLMBaseURL, LLMAPIKey, LLMModel string
	// LLMRetryTotal bounds the total wait of an agent's retries of one
	// LLM call that may heal (429, 5xx, timeouts) (ACS_LLM_RETRY_TOTAL,
	// default 5m; 0: no retries).
	LLMRetryTotal time.Duration
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
	// SecretKey seals stored secrets (ACS_SECRET_KEY).
	SecretKey string
	// ResumeWait bounds a transparent resume (ACS_RESUME_WAIT, default
	// 60s); CloneTimeout and SetupTimeout bound cloning the repository
	// (ACS_CLONE_TIMEOUT, default 120s) and .openhands/setup.sh
	// (ACS_SETUP_TIMEOUT, default 600s).
	ResumeWait, CloneTimeout, SetupTimeout time.Duration
	// StartTaskTTL bounds how long a start task may go without advancing
	// (ACS_START_TASK_TTL, default 1h): the reconciler then ends it ERROR.
	StartTaskTTL time.Duration
	// Specs is ACS_SANDBOX_SPECS: a JSON array of sandbox specs, inline or
	// the path of a file holding it; empty means the deployment's default
	// spec. ParseSpecs reads it.
	Specs string
	// PollInterval spaces the start flow's status checks while a sandbox
	// boots or a setup command runs (no variable: DefaultPollInterval,
	// LocalPollInterval for acs serve).
	PollInterval time.Duration
	// Visibility and MaxAttempts are the start queue's visibility timeout
	// of a delivery and the failed deliveries of a step before its task
	// ends ERROR (no variables: DefaultVisibility, DefaultMaxAttempts).
	Visibility  time.Duration
	MaxAttempts int
	// Tools are the tools every agent gets (DefaultTools).
	Tools []string
	// BrowserTools adds the browser tool set (browser_tool_set) to the
	// tools of conversations started through the V1 API when the sandbox's
	// agent server reports it usable (it can run Chromium), as OpenHands
	// V1 does (ACS_BROWSER_TOOLS, default true).
	BrowserTools bool
	// SignIn is how people sign in from a browser.
	SignIn SignIn
}

// SignIn configures browser sign-in: sessions and the ways in (one-time
// links and API keys always; OpenID Connect when OIDC.Issuer is set).
type SignIn struct {
	// SessionTTL is how long a browser session lasts (ACS_SESSION_TTL,
	// default 168h).
	SessionTTL time.Duration
	// OIDC is the OpenID Connect issuer people may sign in with.
	OIDC OIDC
}

// OIDC is an OpenID Connect issuer's configuration. Sign-in with it is
// enabled when Issuer is set.
type OIDC struct {
	// Issuer is the issuer URL (ACS_OIDC_ISSUER), as its discovery
	// document names it.
	Issuer string
	// ClientID and ClientSecret are ACS's client at the issuer
	// (ACS_OIDC_CLIENT_ID, required with an issuer; ACS_OIDC_CLIENT_SECRET,
	// empty for a public client, which then relies on PKCE alone).
	ClientID, ClientSecret string
	// Name is what the sign-in page calls the issuer (ACS_OIDC_NAME,
	// default "single sign-on").
	Name string
	// AllowedDomains and AllowedEmails restrict who may sign in by verified
	// e-mail address (ACS_OIDC_ALLOWED_DOMAINS, ACS_OIDC_ALLOWED_EMAILS:
	// comma-separated, case-insensitive). Both empty allows every identity
	// the issuer vouches for.
	AllowedDomains, AllowedEmails []string
	// CreateUsers creates a user on an identity's first sign-in
	// (ACS_OIDC_CREATE_USERS, default true); false refuses identities not
	// linked to a user yet.
	CreateUsers bool
}

// Enabled reports whether OpenID Connect sign-in is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// Local is acs serve's own configuration.
type Local struct {
	// Addr is where the V1 API listens (ACS_ADDR, default 127.0.0.1:3000).
	Addr string
	// DataDir holds the store, queue and sandboxes (ACS_DATA_DIR, default
	// ./.acs).
	DataDir string
	// APIKey is the admin user's key (ACS_API_KEY); when empty one is
	// generated on first start and kept in the data dir.
	APIKey string
	// Workers is how many start tasks are processed at once (ACS_WORKERS,
	// default 4).
	Workers int
	// ReconcileInterval spaces the idle reconciler's passes
	// (ACS_RECONCILE_INTERVAL, default 30s).
	ReconcileInterval time.Duration
	// PublicURLFromAddr is true when ACS_PUBLIC_URL is unset and PublicURL
	// was derived from Addr: with port 0 the caller replaces it with the
	// address it actually listens on.
	PublicURLFromAddr bool
	// WarmSandboxes is how many pre-started agent servers the local
	// runtime keeps ready for new sandboxes of the default spec
	// (ACS_WARM_SANDBOXES, default 1; 0 turns the pool off). A start claims
	// one and the pool is refilled in the background.
	WarmSandboxes int
	// WebDir is a directory of static files (a web frontend's build)
	// served at / with single-page-app fallback (ACS_WEB_DIR; empty: a
	// small page of ACS's own). It must exist.
	WebDir string
}

// parser collects every problem of one load.
type parser struct {
	getenv   func(string) string
	problems []string
}

func (p *parser) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	return errors.New("configuration: " + strings.Join(p.problems, "; "))
}

// required returns the variable, noting it as missing when empty.
func (p *parser) required(name, what string) string {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		p.problem("%s is required (%s)", name, what)
	}
	return v
}

func (p *parser) httpURL(name, def string) string {
	v := strings.TrimRight(or(p.getenv(name), def), "/")
	if v == "" {
		return ""
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.problem("%s %q must be an http(s) URL", name, v)
	}
	return v
}

func (p *parser) duration(name string, def time.Duration, allowZero bool) time.Duration {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	if v == "0" && allowZero {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !allowZero) {
		hint := ""
		if allowZero {
			hint = " (0 disables)"
		}
		p.problem("%s must be a duration such as 30m%s", name, hint)
		return def
	}
	return d
}

func (p *parser) integer(name string, def, lo, hi int) int {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.problem("%s must be an integer from %d to %d", name, lo, hi)
		return def
	}
	return n
}

// common reads the shared part; the public URL is left to the caller.
func (p *parser) common() Common {
	c := Defaults()
	c.LLMBaseURL = p.httpURL("LLM_BASE_URL", "")
	c.LLMAPIKey = p.getenv(EnvLLMAPIKey)
	c.LLMModel = or(p.getenv("LLM_MODEL"), DefaultLLMModel)
	c.LLMRetryTotal = p.duration("ACS_LLM_RETRY_TOTAL", DefaultLLMRetryTotal, true)
	c.SandboxStartupTimeout = p.duration("ACS_SANDBOX_STARTUP_TIMEOUT", DefaultSandboxStartupTimeout, false)
	c.GitHost = p.httpURL("ACS_GIT_HOST", DefaultGitHost)
	c.MaxRunningSandboxes = p.integer("ACS_MAX_RUNNING_SANDBOXES", DefaultMaxRunningSandboxes, 0, 1<<20)
	c.IdlePause = p.duration("ACS_IDLE_PAUSE_AFTER", DefaultIdlePause, true)
	c.IdleCleanup = p.duration("ACS_IDLE_CLEANUP_AFTER", DefaultIdleCleanup, true)
	c.ResumeWait = p.duration("ACS_RESUME_WAIT", DefaultResumeWait, false)
	c.CloneTimeout = p.duration("ACS_CLONE_TIMEOUT", DefaultCloneTimeout, false)
	c.SetupTimeout = p.duration("ACS_SETUP_TIMEOUT", DefaultSetupTimeout, false)
	c.StartTaskTTL = p.duration("ACS_START_TASK_TTL", DefaultStartTaskTTL, false)
	c.SecretKey = p.getenv(EnvSecretKey)
	if c.SecretKey != "" && len(c.SecretKey) < 16 {
		p.problem("ACS_SECRET_KEY must be at least 16 characters")
	}
	c.Specs = p.getenv("ACS_SANDBOX_SPECS")
	if c.Specs != "" {
		if _, err := ParseSpecs(c.Specs, nil); err != nil {
			p.problem("%v", err)
		}
	}
	if v := p.getenv("ACS_BROWSER_TOOLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.problem("ACS_BROWSER_TOOLS must be true or false")
		}
		c.BrowserTools = b
	}
	c.SignIn = p.signIn()
	return c
}

// signIn reads the browser sign-in settings.
func (p *parser) signIn() SignIn {
	s := SignIn{SessionTTL: p.duration(EnvSessionTTL, DefaultSessionTTL, false)}
	o := &s.OIDC
	o.Issuer = p.httpURL(EnvOIDCIssuer, "")
	o.ClientID = strings.TrimSpace(p.getenv(EnvOIDCClientID))
	o.ClientSecret = p.getenv(EnvOIDCClientSecret)
	o.Name = or(strings.TrimSpace(p.getenv("ACS_OIDC_NAME")), DefaultOIDCName)
	o.AllowedDomains = commaList(p.getenv("ACS_OIDC_ALLOWED_DOMAINS"))
	o.AllowedEmails = commaList(p.getenv("ACS_OIDC_ALLOWED_EMAILS"))
	o.CreateUsers = true
	if v := p.getenv("ACS_OIDC_CREATE_USERS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.problem("ACS_OIDC_CREATE_USERS must be true or false")
		}
		o.CreateUsers = b
	}
	if o.Issuer != "" && o.ClientID == "" {
		p.problem("%s is required with %s (ACS's client at the issuer)", EnvOIDCClientID, EnvOIDCIssuer)
	}
	if o.Issuer == "" && (o.ClientID != "" || o.ClientSecret != "") {
		p.problem("%s is required when an OIDC client is configured", EnvOIDCIssuer)
	}
	return s
}

// commaList splits a comma-separated list, trimmed and lower-cased,
// without empty items.
func commaList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// local reads acs serve's own part into t (with the public URL).
func (p *parser) local(t *Config) {
	getenv := p.getenv
	c := &t.Local
	t.PollInterval = LocalPollInterval
	c.Addr = or(getenv("ACS_ADDR"), DefaultAddr)
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		p.problem("ACS_ADDR %q must be host:port", c.Addr)
	}
	dir, derr := filepath.Abs(or(getenv("ACS_DATA_DIR"), DefaultDataDir))
	if derr != nil {
		p.problem("ACS_DATA_DIR: %v", derr)
	}
	c.DataDir = dir
	c.APIKey = getenv("ACS_API_KEY")
	if c.APIKey != "" && len(c.APIKey) < 16 {
		p.problem("ACS_API_KEY must be at least 16 characters")
	}
	c.PublicURLFromAddr = getenv("ACS_PUBLIC_URL") == ""
	t.PublicURL = strings.TrimRight(getenv("ACS_PUBLIC_URL"), "/")
	if t.PublicURL == "" && err == nil {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		t.PublicURL = "http://" + net.JoinHostPort(host, port)
	}
	if u, err := url.Parse(t.PublicURL); t.PublicURL != "" && (err != nil || u.Scheme == "" || u.Host == "") {
		p.problem("ACS_PUBLIC_URL %q must be an absolute URL", t.PublicURL)
	}
	if v := strings.TrimSpace(getenv("ACS_WEB_DIR")); v != "" {
		abs, err := filepath.Abs(v)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			p.problem("ACS_WEB_DIR %q must be a directory: %v", v, err)
		}
		c.WebDir = abs
	}
	c.Workers = p.integer("ACS_WORKERS", DefaultWorkers, 1, 64)
	c.WarmSandboxes = p.integer("ACS_WARM_SANDBOXES", DefaultWarmSandboxes, 0, 64)
	c.ReconcileInterval = p.duration("ACS_RECONCILE_INTERVAL", DefaultReconcileInterval, false)
}

// Need names what an AWS function uses beyond the table, so that it is
// configured (and checked) only where it is used.
type Need uint8

// The needs of AWS functions.
const (
	// NeedQueue: the start-task queue (ACS_QUEUE_URL).
	NeedQueue Need = 1 << iota
	// NeedDeadLetter: the start-task dead-letter queue (ACS_DLQ_URL).
	NeedDeadLetter
	// NeedBlobs: the archive bucket (ACS_BUCKET).
	NeedBlobs
	// NeedRuntime: the sandbox runtime and what sandboxes are given
	// (ACS_RUNTIME and the variables of the runtime it names,
	// ACS_PUBLIC_URL).
	NeedRuntime
	// NeedSignIn: signing people in from a browser (ACS_PUBLIC_URL, where
	// the sign-in pages and the OIDC redirect live; the optional
	// ACS_OIDC_* and ACS_SESSION_TTL are read by every function).
	NeedSignIn
)

// The variables of an AWS function's configuration that its infrastructure
// sets; Load reads them by these names.
const (
	EnvTable          = "ACS_TABLE"
	EnvSecretKey      = "ACS_SECRET_KEY"
	EnvQueueURL       = "ACS_QUEUE_URL"
	EnvDeadLetterURL  = "ACS_DLQ_URL"
	EnvBucket         = "ACS_BUCKET"
	EnvBucketPrefix   = "ACS_BUCKET_PREFIX"
	EnvPublicURL      = "ACS_PUBLIC_URL"
	EnvRuntime        = "ACS_RUNTIME"
	EnvRuntimeURL     = "ACS_RUNTIME_URL"
	EnvRuntimeAPIKey  = "ACS_RUNTIME_API_KEY"
	EnvKubeNamespace  = "ACS_KUBE_NAMESPACE"
	EnvKubeBaseHost   = "ACS_KUBE_BASE_HOST"
	EnvSandboxImage   = "ACS_SANDBOX_IMAGE"
	EnvEKSCluster     = "ACS_EKS_CLUSTER"
	EnvKubeServer     = "ACS_KUBE_SERVER"
	EnvKubeCAData     = "ACS_KUBE_CA_DATA"
	EnvAdminKeySHA256 = "ACS_ADMIN_KEY_SHA256"
	EnvLLMAPIKey      = "LLM_API_KEY"
	// EnvSessionTTL and the EnvOIDC* variables configure browser sign-in
	// (every program reads them; the stacks set them on the functions that
	// sign people in).
	EnvSessionTTL       = "ACS_SESSION_TTL"
	EnvOIDCIssuer       = "ACS_OIDC_ISSUER"
	EnvOIDCClientID     = "ACS_OIDC_CLIENT_ID"
	EnvOIDCClientSecret = "ACS_OIDC_CLIENT_SECRET"
	// EnvFunctionName is the function's name (set by Lambda), for its
	// logs.
	EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
	// EnvSecretsManagerEndpoint overrides the Secrets Manager endpoint
	// (a local server), as ACS_DYNAMODB_ENDPOINT does DynamoDB's.
	EnvSecretsManagerEndpoint = "ACS_SECRETSMANAGER_ENDPOINT"
)

// BaseVariables are the variables every AWS function requires beyond
// AWS_REGION (which Lambda sets).
var BaseVariables = []string{EnvTable, EnvSecretKey}

// NeedVariables lists, for each need, the variables Load reads for it:
// the stacks set these on a function with that need, and no others. With
// NeedRuntime, the variables of the runtime ACS_RUNTIME names follow
// (RuntimeVariables).
var NeedVariables = map[Need][]string{
	NeedQueue:      {EnvQueueURL},
	NeedDeadLetter: {EnvDeadLetterURL},
	NeedBlobs:      {EnvBucket, EnvBucketPrefix},
	NeedRuntime:    {EnvPublicURL, EnvRuntime},
	NeedSignIn:     {EnvPublicURL},
}

// RuntimeVariables lists the variables each sandbox runtime requires; for
// Kubernetes, with the credentials of an EKS cluster. Load reads further
// optional ACS_KUBE_* settings.
var RuntimeVariables = map[string][]string{
	RuntimeAPI:        {EnvRuntimeURL, EnvRuntimeAPIKey},
	RuntimeKubernetes: {EnvKubeNamespace, EnvKubeBaseHost, EnvSandboxImage, EnvEKSCluster, EnvKubeServer, EnvKubeCAData},
}

// SecretVariables are the variables whose values are secrets. A function
// may be given NAME+SecretARNSuffix instead of NAME: the ARN (or name) of a
// Secrets Manager secret whose string is the value, read once at cold
// start (functions/internal/awsenv), so that the value is in neither the
// function's configuration nor its infrastructure's template.
var SecretVariables = []string{EnvSecretKey, EnvLLMAPIKey, EnvRuntimeAPIKey, EnvOIDCClientSecret}

// SecretARNSuffix names the variable holding a secret variable's Secrets
// Manager secret (ACS_SECRET_KEY_SECRET_ARN for ACS_SECRET_KEY).
const SecretARNSuffix = "_SECRET_ARN"

// AWS is a Lambda function's own configuration, set by the
// infrastructure.
type AWS struct {
	// FunctionName is AWS_LAMBDA_FUNCTION_NAME (set by Lambda; for logs).
	FunctionName string
	// Region is AWS_REGION (set by Lambda).
	Region string
	// Table is the DynamoDB table (ACS_TABLE).
	Table string
	// QueueURL and DeadLetterURL are the start-task queue and its
	// dead-letter queue (ACS_QUEUE_URL, ACS_DLQ_URL).
	QueueURL, DeadLetterURL string
	// Bucket and BucketPrefix locate blobs (ACS_BUCKET, ACS_BUCKET_PREFIX).
	Bucket, BucketPrefix string
	// DynamoDBEndpoint, SQSEndpoint and S3Endpoint override the AWS
	// endpoints (ACS_DYNAMODB_ENDPOINT, ACS_SQS_ENDPOINT, ACS_S3_ENDPOINT:
	// local servers); S3PathStyle forces path-style bucket addressing
	// (ACS_S3_PATH_STYLE, default true when S3Endpoint is set).
	DynamoDBEndpoint, SQSEndpoint, S3Endpoint string
	S3PathStyle                               bool
	// Runtime is the sandbox runtime (ACS_RUNTIME): RuntimeKubernetes or
	// RuntimeAPI. It defaults to RuntimeAPI when ACS_RUNTIME_URL is set and
	// to RuntimeKubernetes otherwise.
	Runtime string
	// RuntimeURL and RuntimeAPIKey locate the sandbox runtime API
	// (ACS_RUNTIME_URL, ACS_RUNTIME_API_KEY).
	RuntimeURL, RuntimeAPIKey string
	// Kube configures the Kubernetes runtime.
	Kube Kube
	// AdminKeySHA256 is the hex SHA-256 of the admin user's API key
	// (ACS_ADMIN_KEY_SHA256, optional): the authorizer makes sure the admin
	// user and that key exist. Only the hash is in the configuration.
	AdminKeySHA256 string
}

// The sandbox runtimes an AWS deployment can use.
const (
	// RuntimeKubernetes runs sandboxes as pods through the Kubernetes API.
	RuntimeKubernetes = "kubernetes"
	// RuntimeAPI calls a sandbox runtime API (ACS_RUNTIME_URL), such as
	// `acs runtime-api`.
	RuntimeAPI = "runtime-api"
)

// Kube is the Kubernetes runtime's configuration. Pod templates are kept
// as text here (the runtime parses them), so that functions that never
// reach sandboxes do not link the Kubernetes API types.
type Kube struct {
	// Namespace holds the sandboxes (ACS_KUBE_NAMESPACE, default
	// acs-sandboxes).
	Namespace string
	// BaseHost, Separator and Scheme build agent-server URLs:
	// {Scheme}://{runtime_id}{Separator}{BaseHost} (ACS_KUBE_BASE_HOST,
	// required; ACS_KUBE_HOST_SEPARATOR, default "."; ACS_KUBE_SCHEME,
	// default https).
	BaseHost, Separator, Scheme string
	// Routing is how agent servers are reached (ACS_KUBE_ROUTING):
	// "ingress" (default) or "gateway" (a Gateway API HTTPRoute per
	// sandbox, attached to GatewayNamespace/GatewayName, from
	// ACS_KUBE_GATEWAY "namespace/name" or "name" in Namespace).
	Routing                       string
	GatewayNamespace, GatewayName string
	// IngressClass and TLSSecret shape each sandbox's Ingress
	// (ACS_KUBE_INGRESS_CLASS, ACS_KUBE_TLS_SECRET; optional).
	IngressClass, TLSSecret string
	// Image is the default spec's sandbox image (ACS_SANDBOX_IMAGE);
	// PodTemplates is ACS_KUBE_POD_TEMPLATES, a JSON object from spec id
	// to pod template, inline (starting with '{') or the path of a file
	// holding it. At least one of them is required.
	Image, PodTemplates string
	// WarmPool is the default spec's warm-pool size (ACS_KUBE_WARM_POOL,
	// default 0).
	WarmPool int
	// NodeSelector places sandbox pods (ACS_KUBE_NODE_SELECTOR:
	// "key=value,key=value"); Tolerations is ACS_KUBE_TOLERATIONS, a JSON
	// array of Kubernetes tolerations kept as text (the runtime parses it).
	NodeSelector map[string]string
	Tolerations  string
	// Credentials: exactly one of Kubeconfig (ACS_KUBECONFIG, a file),
	// InCluster (ACS_KUBE_IN_CLUSTER=true) or an EKS cluster
	// (ACS_EKS_CLUSTER with ACS_KUBE_SERVER and ACS_KUBE_CA_DATA, the
	// base64 PEM of its certificate authority; the token is signed with
	// the function's IAM role).
	Kubeconfig string
	InCluster  bool
	EKSCluster string
	Server     string
	CAData     []byte
}

// aws reads a function's own part into t (with the public URL when it
// needs the runtime). The table, the region and the secret key are always
// required; need adds what the function uses.
func (p *parser) aws(t *Config, need Need) {
	getenv := p.getenv
	c := &t.AWS
	c.FunctionName = getenv(EnvFunctionName)
	c.Region = or(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
	if c.Region == "" {
		p.problem("AWS_REGION is required (set by Lambda)")
	}
	c.Table = p.required(EnvTable, "the DynamoDB table")
	if t.SecretKey == "" {
		p.required(EnvSecretKey, "seals stored secrets")
	}
	c.DynamoDBEndpoint = p.httpURL("ACS_DYNAMODB_ENDPOINT", "")
	c.SQSEndpoint = p.httpURL("ACS_SQS_ENDPOINT", "")
	c.S3Endpoint = p.httpURL("ACS_S3_ENDPOINT", "")
	c.S3PathStyle = c.S3Endpoint != ""
	if v := getenv("ACS_S3_PATH_STYLE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.problem("ACS_S3_PATH_STYLE must be true or false")
		}
		c.S3PathStyle = b
	}
	c.AdminKeySHA256 = strings.ToLower(strings.TrimSpace(getenv(EnvAdminKeySHA256)))
	if c.AdminKeySHA256 != "" {
		if b, err := hex.DecodeString(c.AdminKeySHA256); err != nil || len(b) != 32 {
			p.problem("ACS_ADMIN_KEY_SHA256 must be 64 hex digits (the SHA-256 of the admin API key)")
		}
	}
	if need&NeedQueue != 0 {
		c.QueueURL = p.queueURL(EnvQueueURL, "the start-task queue")
	}
	if need&NeedDeadLetter != 0 {
		c.DeadLetterURL = p.queueURL(EnvDeadLetterURL, "the start-task dead-letter queue")
	}
	if need&NeedBlobs != 0 {
		c.Bucket = p.required(EnvBucket, "the archive bucket")
		c.BucketPrefix = strings.Trim(getenv(EnvBucketPrefix), "/")
	}
	if need&NeedRuntime != 0 {
		c.Runtime = getenv(EnvRuntime)
		if c.Runtime == "" {
			c.Runtime = RuntimeKubernetes
			if getenv(EnvRuntimeURL) != "" {
				c.Runtime = RuntimeAPI
			}
		}
		switch c.Runtime {
		case RuntimeAPI:
			if p.required(EnvRuntimeURL, "the sandbox runtime API") != "" {
				c.RuntimeURL = p.httpURL(EnvRuntimeURL, "")
			}
			c.RuntimeAPIKey = p.required(EnvRuntimeAPIKey, "the sandbox runtime API key")
		case RuntimeKubernetes:
			c.Kube = p.kube()
		default:
			p.problem("ACS_RUNTIME %q must be %s or %s", c.Runtime, RuntimeKubernetes, RuntimeAPI)
		}
		if p.required(EnvPublicURL, "the API's public URL, for sandbox webhooks") != "" {
			t.PublicURL = p.httpURL(EnvPublicURL, "")
		}
	}
	switch {
	case need&NeedRuntime != 0:
	case need&NeedSignIn != 0:
		if p.required(EnvPublicURL, "the API's public URL, for the sign-in pages") != "" {
			t.PublicURL = p.httpURL(EnvPublicURL, "")
		}
	case p.getenv(EnvPublicURL) != "":
		// Optional elsewhere: a browser session's writes are accepted
		// from the public URL's origin (the web UI's distribution).
		t.PublicURL = p.httpURL(EnvPublicURL, "")
	}
}

// kube reads the Kubernetes runtime's variables.
func (p *parser) kube() Kube {
	k := Kube{
		Namespace:    or(p.getenv(EnvKubeNamespace), DefaultKubeNamespace),
		BaseHost:     strings.TrimPrefix(p.required(EnvKubeBaseHost, "the agent servers' base host name"), "."),
		Separator:    or(p.getenv("ACS_KUBE_HOST_SEPARATOR"), DefaultKubeSeparator),
		Scheme:       or(p.getenv("ACS_KUBE_SCHEME"), DefaultKubeScheme),
		IngressClass: p.getenv("ACS_KUBE_INGRESS_CLASS"),
		TLSSecret:    p.getenv("ACS_KUBE_TLS_SECRET"),
		Image:        p.getenv(EnvSandboxImage),
		PodTemplates: p.getenv("ACS_KUBE_POD_TEMPLATES"),
		WarmPool:     p.integer("ACS_KUBE_WARM_POOL", 0, 0, 100),
		Kubeconfig:   p.getenv("ACS_KUBECONFIG"),
		Tolerations:  p.getenv("ACS_KUBE_TOLERATIONS"),
		EKSCluster:   p.getenv(EnvEKSCluster),
		Server:       p.getenv(EnvKubeServer),
	}
	if !dnsLabel.MatchString(k.Namespace) || len(k.Namespace) > 63 {
		p.problem("ACS_KUBE_NAMESPACE %q must be a DNS label", k.Namespace)
	}
	if k.BaseHost != "" && !hostName.MatchString(k.BaseHost) {
		p.problem("ACS_KUBE_BASE_HOST %q must be a host name", k.BaseHost)
	}
	if k.Separator != "." && k.Separator != "-" {
		p.problem("ACS_KUBE_HOST_SEPARATOR %q must be \".\" or \"-\"", k.Separator)
	}
	switch k.Routing = or(p.getenv("ACS_KUBE_ROUTING"), DefaultKubeRouting); k.Routing {
	case "ingress":
	case "gateway":
		gw := p.required("ACS_KUBE_GATEWAY", "the Gateway the sandboxes' HTTPRoutes attach to")
		ns, name, ok := strings.Cut(gw, "/")
		if !ok {
			ns, name = k.Namespace, gw
		}
		if gw != "" && (!dnsLabel.MatchString(ns) || !hostName.MatchString(name)) {
			p.problem("ACS_KUBE_GATEWAY %q must be \"namespace/name\" or \"name\"", gw)
		}
		k.GatewayNamespace, k.GatewayName = ns, name
	default:
		p.problem("ACS_KUBE_ROUTING %q must be ingress or gateway", k.Routing)
	}
	if k.Scheme != "http" && k.Scheme != "https" {
		p.problem("ACS_KUBE_SCHEME %q must be http or https", k.Scheme)
	}
	if k.Image == "" && strings.TrimSpace(k.PodTemplates) == "" {
		p.problem("ACS_SANDBOX_IMAGE or ACS_KUBE_POD_TEMPLATES is required (the sandbox image)")
	}
	if v := p.getenv("ACS_KUBE_NODE_SELECTOR"); v != "" {
		k.NodeSelector = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			key, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || key == "" {
				p.problem("ACS_KUBE_NODE_SELECTOR %q must be key=value pairs separated by commas", v)
				break
			}
			k.NodeSelector[key] = val
		}
	}
	if v := p.getenv("ACS_KUBE_IN_CLUSTER"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.problem("ACS_KUBE_IN_CLUSTER must be true or false")
		}
		k.InCluster = b
	}
	sources := 0
	for _, set := range []bool{k.Kubeconfig != "", k.InCluster, k.EKSCluster != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		p.problem("the Kubernetes runtime needs exactly one of ACS_KUBECONFIG, ACS_KUBE_IN_CLUSTER=true or ACS_EKS_CLUSTER (got %d)", sources)
	}
	if k.EKSCluster != "" {
		if u, err := url.Parse(k.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			p.problem("ACS_KUBE_SERVER %q must be the EKS cluster's https API server URL", k.Server)
		}
		ca, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p.getenv(EnvKubeCAData)))
		if err != nil || !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
			p.problem("ACS_KUBE_CA_DATA must be the base64 of the EKS cluster's PEM certificate authority")
		}
		k.CAData = ca
	}
	return k
}

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	hostName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func (p *parser) queueURL(name, what string) string {
	v := p.required(name, what)
	if v == "" {
		return ""
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.problem("%s %q must be a queue URL", name, v)
	}
	return v
}

// ParseSpecs reads ACS_SANDBOX_SPECS: a JSON array of {id, command,
// initial_env, working_dir} inline (starting with '[') or in the named
// file. It returns def when v is empty. Ids must be unique; the first spec
// is the default.
func ParseSpecs(v string, def []acs.SandboxSpec) ([]acs.SandboxSpec, error) {
	if strings.TrimSpace(v) == "" {
		return def, nil
	}
	raw, where := []byte(v), "ACS_SANDBOX_SPECS"
	if !strings.HasPrefix(strings.TrimSpace(v), "[") {
		b, err := os.ReadFile(v)
		if err != nil {
			return nil, fmt.Errorf("ACS_SANDBOX_SPECS: %w", err)
		}
		raw, where = b, "ACS_SANDBOX_SPECS "+v
	}
	var specs []acs.SandboxSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s: no specs", where)
	}
	seen := map[string]bool{}
	for i := range specs {
		s := &specs[i]
		if s.ID == "" || seen[s.ID] {
			return nil, fmt.Errorf("%s: spec %d needs a unique id", where, i)
		}
		seen[s.ID] = true
		if s.InitialEnv == nil {
			s.InitialEnv = map[string]string{}
		}
		if s.CreatedAt.IsZero() {
			s.CreatedAt = time.Unix(0, 0).UTC()
		}
	}
	return specs, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
