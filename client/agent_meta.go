package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
)

// The agent server's metadata, LLM profile and model switching routes.

// LLMProviders lists the providers of the models the agent server knows
// (configured ones and its LLM endpoint's).
func (a *Agent) LLMProviders(ctx context.Context) ([]string, error) {
	var out agentwire.ProvidersResponse
	err := a.get(ctx, "/api/llm/providers", nil, &out)
	return out.Providers, err
}

// LLMModels lists the models the agent server knows as provider/model,
// only provider's when it is not "".
func (a *Agent) LLMModels(ctx context.Context, provider string) ([]string, error) {
	var q url.Values
	if provider != "" {
		q = url.Values{"provider": {provider}}
	}
	var out agentwire.ModelsResponse
	err := a.get(ctx, "/api/llm/models", q, &out)
	return out.Models, err
}

// VerifiedLLMModels returns the configured models by provider (names
// without the provider).
func (a *Agent) VerifiedLLMModels(ctx context.Context) (map[string][]string, error) {
	var out agentwire.VerifiedModelsResponse
	err := a.get(ctx, "/api/llm/models/verified", nil, &out)
	return out.Models, err
}

// AgentSettingsSchema returns the schema of the agent settings forms.
func (a *Agent) AgentSettingsSchema(ctx context.Context) (settingsschema.Schema, error) {
	var out settingsschema.Schema
	err := a.get(ctx, "/api/settings/agent-schema", nil, &out)
	return out, err
}

// ConversationSettingsSchema returns the schema of the conversation
// settings.
func (a *Agent) ConversationSettingsSchema(ctx context.Context) (settingsschema.Schema, error) {
	var out settingsschema.Schema
	err := a.get(ctx, "/api/settings/conversation-schema", nil, &out)
	return out, err
}

// VSCodeStatus says whether the sandbox runs VS Code.
func (a *Agent) VSCodeStatus(ctx context.Context) (agentwire.VSCodeStatus, error) {
	var out agentwire.VSCodeStatus
	err := a.get(ctx, "/api/vscode/status", nil, &out)
	return out, err
}

// DesktopURL returns the sandbox desktop's URL (nil: none yet); a sandbox
// without a desktop is an error with status 503.
func (a *Agent) DesktopURL(ctx context.Context) (*string, error) {
	var out agentwire.DesktopURL
	err := a.get(ctx, "/api/desktop/url", nil, &out)
	return out.URL, err
}

// ListProfiles lists the saved LLM profiles and the active one.
func (a *Agent) ListProfiles(ctx context.Context) (agentwire.ProfileList, error) {
	var out agentwire.ProfileList
	err := a.get(ctx, "/api/profiles", nil, &out)
	return out, err
}

// GetProfile returns a profile. expose is "" (credentials null),
// "encrypted" (sealed with the server's key) or "plaintext"
// (X-Expose-Secrets).
func (a *Agent) GetProfile(ctx context.Context, name, expose string) (agentwire.ProfileDetail, error) {
	var h http.Header
	if expose != "" {
		h = http.Header{"X-Expose-Secrets": {expose}}
	}
	var out agentwire.ProfileDetail
	err := a.t.call(ctx, request{method: http.MethodGet, path: "/api/profiles/" + escape(name), idempotent: true, header: h}, &out)
	return out, err
}

// SaveProfile saves (creates or replaces) a profile.
func (a *Agent) SaveProfile(ctx context.Context, name string, req *agentwire.SaveProfileRequest) (agentwire.ProfileMutation, error) {
	var out agentwire.ProfileMutation
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/profiles/" + escape(name), body: req, idempotent: true}, &out)
	return out, err
}

// DeleteProfile deletes a profile (no error when there is none).
func (a *Agent) DeleteProfile(ctx context.Context, name string) (agentwire.ProfileMutation, error) {
	var out agentwire.ProfileMutation
	err := a.t.call(ctx, request{method: http.MethodDelete, path: "/api/profiles/" + escape(name), idempotent: true}, &out)
	return out, err
}

// ActivateProfile makes a profile the agent server's active one.
func (a *Agent) ActivateProfile(ctx context.Context, name string) (agentwire.ActivateProfileResponse, error) {
	var out agentwire.ActivateProfileResponse
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/profiles/" + escape(name) + "/activate", body: struct{}{}, idempotent: true}, &out)
	return out, err
}

// RenameProfile renames a profile (ECONFLICT when the new name is taken).
func (a *Agent) RenameProfile(ctx context.Context, name, newName string) (agentwire.ProfileMutation, error) {
	var out agentwire.ProfileMutation
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/profiles/" + escape(name) + "/rename",
		body: &agentwire.RenameProfileRequest{NewName: newName}}, &out)
	return out, err
}

// SwitchProfile makes a conversation's next LLM calls use a saved profile
// (ENOTFOUND for an unknown conversation or profile).
func (a *Agent) SwitchProfile(ctx context.Context, convID, profile string) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/switch_profile",
		body: &agentwire.SwitchProfileRequest{ProfileName: profile}, idempotent: true}, nil)
}

// SwitchLLM makes a conversation's next LLM calls use cfg.
func (a *Agent) SwitchLLM(ctx context.Context, convID string, cfg llmconfig.Config) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/switch_llm",
		body: &agentwire.SwitchLLMRequest{LLM: cfg}, idempotent: true}, nil)
}

// SwitchACPModel switches the model of an ACP conversation (EINVALID for
// any other conversation: ACS runs no ACP agents).
func (a *Agent) SwitchACPModel(ctx context.Context, convID, model string) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/switch_acp_model",
		body: &agentwire.SwitchACPModelRequest{Model: model}, idempotent: true}, nil)
}
