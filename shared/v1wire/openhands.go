package v1wire

// The bodies of the routes the OpenHands web frontend calls besides the
// conversation ones: its client configuration, LLM profiles, provider
// tokens, the secret and skill pages and the repository picker.

import (
	"encoding/json"
	"regexp"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// FeatureFlags are the web client's feature switches.
type FeatureFlags struct {
	EnableBilling        bool `json:"enable_billing"`
	HideLLMSettings      bool `json:"hide_llm_settings"`
	EnableJira           bool `json:"enable_jira"`
	EnableJiraDC         bool `json:"enable_jira_dc"`
	EnableLinear         bool `json:"enable_linear"`
	HideUsersPage        bool `json:"hide_users_page"`
	HideBillingPage      bool `json:"hide_billing_page"`
	HideIntegrationsPage bool `json:"hide_integrations_page"`
	EnableOnboarding     bool `json:"enable_onboarding"`
}

// WebClientConfig is GET /api/v1/web-client/config's answer (served without
// authentication: nothing in it is secret).
type WebClientConfig struct {
	AppMode              string       `json:"app_mode"`
	PosthogClientKey     *string      `json:"posthog_client_key" acs:"emitnull"`
	FeatureFlags         FeatureFlags `json:"feature_flags"`
	ProvidersConfigured  []string     `json:"providers_configured"`
	MaintenanceStartTime *events.Time `json:"maintenance_start_time" acs:"emitnull"`
	AuthURL              *string      `json:"auth_url" acs:"emitnull"`
	RecaptchaSiteKey     *string      `json:"recaptcha_site_key" acs:"emitnull"`
	FaultyModels         []string     `json:"faulty_models"`
	ErrorMessage         *string      `json:"error_message" acs:"emitnull"`
	UpdatedAt            events.Time  `json:"updated_at"`
	GithubAppSlug        *string      `json:"github_app_slug" acs:"emitnull"`
	// LLM is whether the installation's LLM looks usable (ACS's own
	// field), so that a UI can show a banner when it is not.
	LLM LLMHealth `json:"llm"`
}

// LLMHealth is the installation's LLM health: status "ok", "unusable"
// (detail says what is missing) or "unknown" (not checked, or an answer
// that proves nothing); checked_at is null before the first check.
type LLMHealth struct {
	Status    string       `json:"status"`
	Detail    string       `json:"detail"`
	CheckedAt *events.Time `json:"checked_at" acs:"emitnull"`
}

// Message is a {"message": ...} answer.
type Message struct {
	Message string `json:"message"`
}

// ProfileNameRE is what an LLM profile's name must match.
var ProfileNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// The profile bodies of /api/v1/settings/profiles* are the agent server's
// (OpenHands' shapes); the V1 detail's config has api_key always null.
type (
	ProfileInfo     = agentwire.ProfileInfo
	ProfileList     = agentwire.ProfileList
	ProfileDetail   = agentwire.ProfileDetail
	ProfileMutation = agentwire.ProfileMutation
)

// ActivateProfileResponse answers activating a profile.
type ActivateProfileResponse struct {
	Name    string  `json:"name"`
	Message string  `json:"message"`
	Model   *string `json:"model" acs:"emitnull"`
}

// SaveProfileRequest is the body of POST /api/v1/settings/profiles/{name}
// (optional). Without llm the current LLM settings are saved.
// preserve_existing_api_key keeps the profile's stored key.
type SaveProfileRequest struct {
	IncludeSecrets         bool            `json:"include_secrets" acs:"default=true"`
	LLM                    json.RawMessage `json:"llm" acs:"nullable,object"`
	PreserveExistingAPIKey bool            `json:"preserve_existing_api_key"`
}

// LLMConfig is the part of an OpenHands LLM object ACS uses; the other
// keys are kept for the UI.
type LLMConfig struct {
	// From names the settings field the object came from.
	From    string              `json:"-"`
	Model   strictjson.Optional `json:"model"`
	BaseURL strictjson.Optional `json:"base_url"`
	APIKey  strictjson.Optional `json:"api_key"`
}

// ProviderTokenIn is one provider's token as the frontend sends it: an
// empty token keeps the stored one (the host may still change).
type ProviderTokenIn struct {
	Token  *string `json:"token" acs:"nullable,maxlen=4096"`
	Host   *string `json:"host" acs:"nullable,maxlen=255"`
	UserID *string `json:"user_id" acs:"nullable"`
}

// ProviderTokensRequest is the body of POST /api/v1/secrets/git-providers.
type ProviderTokensRequest struct {
	ProviderTokens map[string]ProviderTokenIn `json:"provider_tokens" acs:"required"`
	MCPConfig      json.RawMessage            `json:"mcp_config" acs:"nullable"`
}

// GitProviders are the providers ACS knows (OpenHands' ProviderType).
var GitProviders = []string{"github", "gitlab", "bitbucket", "bitbucket_data_center", "azure_devops", "forgejo", "enterprise_sso"}

// IsGitProvider reports whether p is one of GitProviders.
func IsGitProvider(p string) bool {
	for _, g := range GitProviders {
		if g == p {
			return true
		}
	}
	return false
}

// ValidateStrict checks the provider names.
func (r *ProviderTokensRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	for p := range r.ProviderTokens {
		if !IsGitProvider(p) {
			errs = append(errs, strictjson.Error{Loc: []any{"provider_tokens", p}, Msg: "Input should be one of: github, gitlab, bitbucket, bitbucket_data_center, azure_devops, forgejo, enterprise_sso", Type: "enum"})
		}
	}
	return errs
}

// SecretInfo is one secret of GET /api/v1/secrets/search (never its value).
type SecretInfo struct {
	Name        string  `json:"name"`
	Description *string `json:"description" acs:"emitnull"`
}

// SkillInfo is one skill of GET /api/v1/skills/search.
type SkillInfo struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Source   string   `json:"source"`
	Triggers []string `json:"triggers"`
}

// Repository is one repository of GET /api/v1/git/repositories/search.
type Repository struct {
	ID              string  `json:"id"`
	FullName        string  `json:"full_name"`
	GitProvider     string  `json:"git_provider"`
	IsPublic        bool    `json:"is_public"`
	StargazersCount *int    `json:"stargazers_count" acs:"emitnull"`
	LinkHeader      *string `json:"link_header" acs:"emitnull"`
	PushedAt        *string `json:"pushed_at" acs:"emitnull"`
	OwnerType       *string `json:"owner_type" acs:"emitnull"`
	MainBranch      *string `json:"main_branch" acs:"emitnull"`
}

// Branch is one branch of GET /api/v1/git/branches/search.
type Branch struct {
	Name         string  `json:"name"`
	CommitSHA    string  `json:"commit_sha"`
	Protected    bool    `json:"protected"`
	LastPushDate *string `json:"last_push_date" acs:"emitnull"`
}

// RenameProfileRequest is the body of POST
// /api/v1/settings/profiles/{name}/rename.
type RenameProfileRequest struct {
	NewName string `json:"new_name" acs:"required"`
}

// ValidateStrict checks the new name's pattern.
func (r *RenameProfileRequest) ValidateStrict() []strictjson.Error {
	if !ProfileNameRE.MatchString(r.NewName) {
		return []strictjson.Error{{Loc: []any{"new_name"}, Msg: "String should match pattern '^[A-Za-z0-9._-]{1,64}$'", Type: "string_pattern_mismatch"}}
	}
	return nil
}
