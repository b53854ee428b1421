package agentwire

import (
	"encoding/json"
	"regexp"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
)

// Server metadata, LLM profiles and model switching: the bodies of
// /api/llm/*, /api/vscode/status, /api/desktop/url, /api/profiles* and
// /api/conversations/{id}/switch_* (OpenHands' shapes).

// ProvidersResponse is GET /api/llm/providers.
type ProvidersResponse struct {
	Providers []string `json:"providers"`
}

// ModelsResponse is GET /api/llm/models.
type ModelsResponse struct {
	Models []string `json:"models"`
}

// VerifiedModelsResponse is GET /api/llm/models/verified: model names
// (without the provider prefix) by provider.
type VerifiedModelsResponse struct {
	Models map[string][]string `json:"models"`
}

// VSCodeStatus is GET /api/vscode/status.
type VSCodeStatus struct {
	Running bool    `json:"running"`
	Enabled bool    `json:"enabled"`
	Message *string `json:"message"`
}

// DesktopURL is GET /api/desktop/url.
type DesktopURL struct {
	URL *string `json:"url" acs:"emitnull"`
}

// ProfileNameRE is what an LLM profile's name must match (besides not
// being "." or "..").
var ProfileNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidProfileName reports whether name may name a profile.
func ValidProfileName(name string) bool {
	return ProfileNameRE.MatchString(name) && name != "." && name != ".."
}

// ProfileNameMsg is the validation message of a bad profile name.
const ProfileNameMsg = "String should match pattern '^[A-Za-z0-9._-]{1,64}$' (and not be '.' or '..')"

// ProfileInfo is one profile of GET /api/profiles.
type ProfileInfo struct {
	Name      string  `json:"name"`
	Model     *string `json:"model" acs:"emitnull"`
	BaseURL   *string `json:"base_url" acs:"emitnull"`
	APIKeySet bool    `json:"api_key_set"`
}

// ProfileList is GET /api/profiles.
type ProfileList struct {
	Profiles      []ProfileInfo `json:"profiles"`
	ActiveProfile *string       `json:"active_profile" acs:"emitnull"`
}

// ProfileDetail is GET /api/profiles/{name}: config is the LLM
// configuration, its api_key null unless X-Expose-Secrets asked for it.
type ProfileDetail struct {
	Name      string          `json:"name"`
	Config    json.RawMessage `json:"config"`
	APIKeySet bool            `json:"api_key_set"`
}

// SaveProfileRequest is the body of POST /api/profiles/{name}.
type SaveProfileRequest struct {
	LLM llmconfig.Config `json:"llm" acs:"required"`
	// IncludeSecrets false saves the profile without its credentials
	// (absent or null: with them).
	IncludeSecrets *bool `json:"include_secrets"`
}

// ProfileMutation answers saving, deleting and renaming a profile.
type ProfileMutation struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// ActivateProfileResponse answers POST /api/profiles/{name}/activate.
type ActivateProfileResponse struct {
	Name       string `json:"name"`
	Message    string `json:"message"`
	LLMApplied bool   `json:"llm_applied"`
}

// RenameProfileRequest is the body of POST /api/profiles/{name}/rename.
type RenameProfileRequest struct {
	NewName string `json:"new_name" acs:"required"`
}

// ValidateStrict checks the new name.
func (r *RenameProfileRequest) ValidateStrict() []strictjson.Error {
	if !ValidProfileName(r.NewName) {
		return []strictjson.Error{{Loc: []any{"new_name"}, Msg: ProfileNameMsg, Type: "string_pattern_mismatch"}}
	}
	return nil
}

// SwitchProfileRequest is the body of POST
// /api/conversations/{id}/switch_profile.
type SwitchProfileRequest struct {
	ProfileName string `json:"profile_name" acs:"required"`
}

// SwitchLLMRequest is the body of POST /api/conversations/{id}/switch_llm.
type SwitchLLMRequest struct {
	LLM llmconfig.Config `json:"llm" acs:"required"`
}

// SwitchACPModelRequest is the body of POST
// /api/conversations/{id}/switch_acp_model.
type SwitchACPModelRequest struct {
	Model string `json:"model" acs:"required"`
}
