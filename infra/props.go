package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/config"
)

// Props configure the stacks. FromContext reads them from the CDK context
// (`-c key=value`, or the "context" of cdk.json); infra/README.md lists the
// keys.
type Props struct {
	// Routes is the route table the API and its functions are made from
	// (api.Routes; tests vary it).
	Routes []api.Route
	// AssetDir holds the functions' zips, <name>.zip (`make lambdas`:
	// dist/lambda).
	AssetDir string
	// WebDir holds the web UI's static files, deployed to the web UI's
	// bucket (webDir, default web/static; none deployed when it does not
	// exist).
	WebDir string
	// Stage is the API stage's name (stage, default "prod").
	Stage string
	// DomainName and CertificateARN give the API a custom domain
	// (domainName, certificateArn; optional, both or neither).
	DomainName, CertificateARN string
	// The sandbox runtime: an existing EKS cluster (eksCluster, with
	// eksEndpoint and eksCaData as `aws eks describe-cluster` shows them,
	// kubeBaseHost, sandboxImage, kubeNamespace) or a sandbox runtime API
	// (runtimeApiUrl, with runtimeApiKeySecret naming the Secrets Manager
	// secret holding its key; one is generated when that is empty).
	EKSCluster, EKSEndpoint, EKSCAData        string
	KubeBaseHost, SandboxImage, KubeNamespace string
	RuntimeAPIURL, RuntimeAPIKeySecret        string
	// LLMAPIKeySecret names the Secrets Manager secret holding the agents'
	// LLM key (llmApiKeySecret; optional).
	LLMAPIKeySecret string
	// AdminKeySHA256 is the hex SHA-256 of the first admin API key
	// (adminKeySha256; optional).
	AdminKeySHA256 string
	// LogRetention keeps the functions' and the API's logs
	// (logRetentionDays, default 30).
	LogRetention awslogs.RetentionDays
	// ThrottleRate and ThrottleBurst throttle the stage (throttleRateLimit
	// requests per second, default 50; throttleBurstLimit, default 100).
	ThrottleRate, ThrottleBurst float64
	// AuthorizerCacheTTL caches the authorizer's answer per Authorization
	// header (authorizerCacheTtlSeconds, default 0: off). Caching needs an
	// identity source, and API Gateway refuses a request lacking one before
	// the authorizer runs: with a TTL only Bearer keys get through and
	// browser sessions (the acs_session cookie) are refused at the gateway.
	AuthorizerCacheTTL time.Duration
	// XRay turns on X-Ray tracing of the API and the functions
	// (tracing=xray; default off).
	XRay bool
	// ArchiveExpiryDays deletes workspace archives this many days after
	// they are made (archiveExpiryDays, default 90).
	ArchiveExpiryDays int
	// AlarmEmail is subscribed to the alarms' topic (alarmEmail; optional).
	AlarmEmail string
	// OIDC is how people sign in from a browser with OpenID Connect (oidc):
	// OIDCCognito (the default) makes a Cognito user pool the issuer;
	// OIDCIssuer uses the issuer OIDCIssuerURL (implied by oidcIssuer);
	// OIDCNone offers the one-time links and API keys only.
	OIDC string
	// CognitoDomainPrefix is the Cognito hosted UI's domain prefix
	// (cognitoDomainPrefix, default acs-<account id>):
	// https://<prefix>.auth.<region>.amazoncognito.com. CognitoSelfSignUp
	// lets people create their own Cognito account (cognitoSelfSignUp,
	// default false: an administrator creates them).
	CognitoDomainPrefix string
	CognitoSelfSignUp   bool
	// OIDCIssuerURL, OIDCClientID and OIDCClientSecret are your own issuer
	// (oidcIssuer, oidcClientId, oidcClientSecret: the name or ARN of the
	// Secrets Manager secret holding the client secret; without one the
	// client is public and relies on PKCE).
	OIDCIssuerURL, OIDCClientID, OIDCClientSecret string
	// OIDCName is what the sign-in page calls the issuer (oidcName, default
	// config.DefaultOIDCName). OIDCAllowedDomains and OIDCAllowedEmails
	// restrict who may sign in (oidcAllowedDomains, oidcAllowedEmails:
	// comma-separated); OIDCCreateUsers creates a user on an identity's first
	// sign-in (oidcCreateUsers; unset: the functions' default, true).
	OIDCName                              string
	OIDCAllowedDomains, OIDCAllowedEmails string
	OIDCCreateUsers                       *bool
	// Env are further plain variables of every function (env, a JSON
	// object: LLM_BASE_URL, LLM_MODEL, ACS_SANDBOX_SPECS, ACS_IDLE_*,
	// ACS_KUBE_* settings, …). Secret variables are refused: they come from
	// Secrets Manager.
	Env map[string]string
}

// ContextKeys are the context keys FromContext reads.
var ContextKeys = []string{"stage", "domainName", "certificateArn", "eksCluster", "eksEndpoint", "eksCaData",
	"kubeBaseHost", "sandboxImage", "kubeNamespace", "runtimeApiUrl", "runtimeApiKeySecret", "llmApiKeySecret",
	"adminKeySha256", "logRetentionDays", "throttleRateLimit", "throttleBurstLimit", "authorizerCacheTtlSeconds",
	"tracing", "archiveExpiryDays", "alarmEmail", "env", "assetDir", "webDir", "oidc", "cognitoDomainPrefix", "cognitoSelfSignUp",
	"oidcIssuer", "oidcClientId", "oidcClientSecret", "oidcName", "oidcAllowedDomains", "oidcAllowedEmails", "oidcCreateUsers"}

// The ways of OpenID Connect sign-in (Props.OIDC).
const (
	OIDCCognito = "cognito"
	OIDCIssuer  = "issuer"
	OIDCNone    = "none"
)

var retentions = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
	1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

// FromContext reads Props through get (the CDK context; "" when a key is
// unset). The error lists every invalid value.
func FromContext(get func(key string) string) (Props, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	or := func(key, def string) string {
		if v := strings.TrimSpace(get(key)); v != "" {
			return v
		}
		return def
	}
	number := func(key string, def float64, lo, hi float64) float64 {
		v := or(key, "")
		if v == "" {
			return def
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < lo || f > hi {
			bad("%s %q must be a number from %g to %g", key, v, lo, hi)
			return def
		}
		return f
	}
	p := Props{
		Routes: api.Routes, AssetDir: or("assetDir", "dist/lambda"), WebDir: or("webDir", "web/static"), Stage: or("stage", "prod"),
		DomainName: or("domainName", ""), CertificateARN: or("certificateArn", ""),
		EKSCluster: or("eksCluster", ""), EKSEndpoint: or("eksEndpoint", ""), EKSCAData: or("eksCaData", ""),
		KubeBaseHost: or("kubeBaseHost", ""), SandboxImage: or("sandboxImage", ""), KubeNamespace: or("kubeNamespace", "acs-sandboxes"),
		RuntimeAPIURL: or("runtimeApiUrl", ""), RuntimeAPIKeySecret: or("runtimeApiKeySecret", ""),
		LLMAPIKeySecret: or("llmApiKeySecret", ""), AdminKeySHA256: strings.ToLower(or("adminKeySha256", "")),
		ThrottleRate:        number("throttleRateLimit", 50, 1, 10000),
		ThrottleBurst:       number("throttleBurstLimit", 100, 1, 5000),
		AuthorizerCacheTTL:  time.Duration(number("authorizerCacheTtlSeconds", 0, 0, 3600)) * time.Second,
		ArchiveExpiryDays:   int(number("archiveExpiryDays", 90, 1, 36500)),
		AlarmEmail:          or("alarmEmail", ""),
		CognitoDomainPrefix: or("cognitoDomainPrefix", ""),
		OIDCIssuerURL:       strings.TrimRight(or("oidcIssuer", ""), "/"), OIDCClientID: or("oidcClientId", ""),
		OIDCClientSecret: or("oidcClientSecret", ""), OIDCName: or("oidcName", ""),
		OIDCAllowedDomains: or("oidcAllowedDomains", ""), OIDCAllowedEmails: or("oidcAllowedEmails", ""),
	}
	boolean := func(key string) *bool {
		v := or(key, "")
		if v == "" {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("%s %q must be true or false", key, v)
			return nil
		}
		return &b
	}
	if b := boolean("cognitoSelfSignUp"); b != nil {
		p.CognitoSelfSignUp = *b
	}
	p.OIDCCreateUsers = boolean("oidcCreateUsers")
	p.OIDC = or("oidc", OIDCCognito)
	if p.OIDCIssuerURL != "" && or("oidc", "") == "" {
		p.OIDC = OIDCIssuer
	}
	problems = append(problems, p.checkOIDC()...)
	days := int(number("logRetentionDays", 30, 1, 3653))
	if r, ok := retentions[days]; ok {
		p.LogRetention = r
	} else {
		var allowed []int
		for d := range retentions {
			allowed = append(allowed, d)
		}
		sort.Ints(allowed)
		bad("logRetentionDays %d must be one of CloudWatch's retentions %v", days, allowed)
	}
	switch t := or("tracing", "none"); t {
	case "xray":
		p.XRay = true
	case "none":
	default:
		bad("tracing %q must be xray or none", t)
	}
	if !validStage(p.Stage) {
		bad("stage %q must be letters, digits, hyphens or underscores", p.Stage)
	}
	if (p.DomainName == "") != (p.CertificateARN == "") {
		bad("domainName and certificateArn go together")
	}
	if p.AdminKeySHA256 != "" {
		if b, err := hex.DecodeString(p.AdminKeySHA256); err != nil || len(b) != 32 {
			bad("adminKeySha256 must be 64 hex digits (the SHA-256 of the admin API key, never the key)")
		}
	}
	switch {
	case p.EKSCluster != "" && p.RuntimeAPIURL != "":
		bad("eksCluster and runtimeApiUrl exclude each other: sandboxes run in one runtime")
	case p.EKSCluster != "":
		if u, err := url.Parse(p.EKSEndpoint); err != nil || u.Scheme != "https" || u.Host == "" {
			bad("eksEndpoint %q must be the cluster's https API server URL (aws eks describe-cluster --query cluster.endpoint)", p.EKSEndpoint)
		}
		if p.EKSCAData == "" {
			bad("eksCaData is required with eksCluster (aws eks describe-cluster --query cluster.certificateAuthority.data)")
		}
		if p.KubeBaseHost == "" {
			bad("kubeBaseHost is required with eksCluster (agent servers are at https://<sandbox>.<kubeBaseHost>)")
		}
	case p.RuntimeAPIURL != "":
		if u, err := url.Parse(p.RuntimeAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("runtimeApiUrl %q must be an http(s) URL", p.RuntimeAPIURL)
		}
	}
	if raw := or("env", ""); raw != "" {
		if err := json.Unmarshal([]byte(raw), &p.Env); err != nil {
			bad("env must be a JSON object of strings: %v", err)
		}
	}
	for k := range p.Env {
		switch {
		case slices.Contains(config.SecretVariables, k) || strings.HasSuffix(k, config.SecretARNSuffix):
			bad("env %s: a secret never goes into plain configuration (use llmApiKeySecret, runtimeApiKeySecret; the secret key is generated)", k)
		case stackSet[k]:
			bad("env %s is set by the stacks", k)
		case strings.HasPrefix(k, "ACS_OIDC_"):
			bad("env %s: OpenID Connect is configured with the oidc* context keys", k)
		}
	}
	if p.EKSCluster != "" && p.SandboxImage == "" && p.Env["ACS_KUBE_POD_TEMPLATES"] == "" {
		bad("sandboxImage (or ACS_KUBE_POD_TEMPLATES in env) is required with eksCluster")
	}
	if len(problems) > 0 {
		return p, errors.New("infra: " + strings.Join(problems, "; "))
	}
	return p, nil
}

// checkOIDC names what is wrong with the sign-in props.
func (p Props) checkOIDC() []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch p.OIDC {
	case OIDCCognito:
		if pre := p.CognitoDomainPrefix; pre != "" && !validDomainPrefix(pre) {
			bad("cognitoDomainPrefix %q must be 1 to 63 lower-case letters, digits or hyphens, not starting or ending with a hyphen, "+
				"without aws, amazon or cognito", pre)
		}
	case OIDCIssuer:
		if u, err := url.Parse(p.OIDCIssuerURL); err != nil || u.Scheme != "https" || u.Host == "" {
			bad("oidcIssuer %q must be the issuer's https URL", p.OIDCIssuerURL)
		}
		if p.OIDCClientID == "" {
			bad("oidcClientId is required with oidcIssuer (ACS's client at the issuer)")
		}
	case OIDCNone:
	default:
		bad("oidc %q must be cognito, issuer or none", p.OIDC)
	}
	if p.OIDC != OIDCIssuer && (p.OIDCIssuerURL != "" || p.OIDCClientID != "" || p.OIDCClientSecret != "") {
		bad("oidcIssuer, oidcClientId and oidcClientSecret go with oidc=issuer, not %s", p.OIDC)
	}
	if p.OIDC != OIDCCognito && (p.CognitoDomainPrefix != "" || p.CognitoSelfSignUp) {
		bad("cognitoDomainPrefix and cognitoSelfSignUp go with oidc=cognito, not %s", p.OIDC)
	}
	if p.OIDC == OIDCNone && (p.OIDCName != "" || p.OIDCAllowedDomains != "" || p.OIDCAllowedEmails != "" || p.OIDCCreateUsers != nil) {
		bad("oidcName, oidcAllowedDomains, oidcAllowedEmails and oidcCreateUsers need OpenID Connect (oidc is none)")
	}
	return problems
}

// validDomainPrefix is what Cognito accepts as a hosted UI domain prefix.
func validDomainPrefix(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, reserved := range []string{"aws", "amazon", "cognito"} {
		if strings.Contains(s, reserved) {
			return false
		}
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Runtime is the sandbox runtime the props choose ("" for none).
func (p Props) Runtime() string {
	switch {
	case p.EKSCluster != "":
		return config.RuntimeKubernetes
	case p.RuntimeAPIURL != "":
		return config.RuntimeAPI
	}
	return ""
}

// stackSet are the variables the stacks set themselves.
var stackSet = func() map[string]bool {
	m := map[string]bool{config.EnvAdminKeySHA256: true, "AWS_REGION": true}
	for _, v := range config.BaseVariables {
		m[v] = true
	}
	for _, vs := range config.NeedVariables {
		for _, v := range vs {
			m[v] = true
		}
	}
	for _, vs := range config.RuntimeVariables {
		for _, v := range vs {
			m[v] = true
		}
	}
	return m
}()

func validStage(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
