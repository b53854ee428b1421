package client

import (
	"context"
	"net/http"

	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
	"github.com/acs-project/acs/shared/v1wire"
)

// The routes the OpenHands web frontend calls besides the conversation
// ones.

// WebClientConfig returns the web client configuration (it needs no key;
// with one, providers_configured lists the caller's git providers).
func (c *Client) WebClientConfig(ctx context.Context) (v1wire.WebClientConfig, error) {
	var out v1wire.WebClientConfig
	err := c.get(ctx, "/web-client/config", nil, &out)
	return out, err
}

// AgentSettingsSchema returns the schema of the agent settings pages.
func (c *Client) AgentSettingsSchema(ctx context.Context) (settingsschema.Schema, error) {
	var out settingsschema.Schema
	err := c.get(ctx, "/settings/agent-schema", nil, &out)
	return out, err
}

// ConversationSettingsSchema returns the schema of the conversation
// settings.
func (c *Client) ConversationSettingsSchema(ctx context.Context) (settingsschema.Schema, error) {
	var out settingsschema.Schema
	err := c.get(ctx, "/settings/conversation-schema", nil, &out)
	return out, err
}

// ListLLMProfiles lists the user's LLM profiles and the active one.
func (c *Client) ListLLMProfiles(ctx context.Context) (v1wire.ProfileList, error) {
	var out v1wire.ProfileList
	err := c.get(ctx, "/settings/profiles", nil, &out)
	return out, err
}

// GetLLMProfile returns one profile (its api_key is always null).
func (c *Client) GetLLMProfile(ctx context.Context, name string) (v1wire.ProfileDetail, error) {
	var out v1wire.ProfileDetail
	err := c.get(ctx, "/settings/profiles/"+escape(name), nil, &out)
	return out, err
}

// SaveLLMProfile saves (creates or replaces) a profile; a nil req saves
// the current LLM settings.
func (c *Client) SaveLLMProfile(ctx context.Context, name string, req *v1wire.SaveProfileRequest) (v1wire.ProfileMutation, error) {
	var out v1wire.ProfileMutation
	r := request{method: http.MethodPost, path: v1 + "/settings/profiles/" + escape(name), idempotent: true}
	if req != nil {
		r.body = req
	}
	err := c.t.call(ctx, r, &out)
	return out, err
}

// ActivateLLMProfile makes a profile the user's LLM settings.
func (c *Client) ActivateLLMProfile(ctx context.Context, name string) (v1wire.ActivateProfileResponse, error) {
	var out v1wire.ActivateProfileResponse
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/settings/profiles/" + escape(name) + "/activate", idempotent: true}, &out)
	return out, err
}

// DeleteLLMProfile deletes a profile (no error when there is none).
func (c *Client) DeleteLLMProfile(ctx context.Context, name string) (v1wire.ProfileMutation, error) {
	var out v1wire.ProfileMutation
	err := c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/settings/profiles/" + escape(name), idempotent: true}, &out)
	return out, err
}

// SetGitProviders stores the user's git provider tokens (a provider not
// named is dropped; an empty token keeps the stored one).
func (c *Client) SetGitProviders(ctx context.Context, tokens map[string]v1wire.ProviderTokenIn) (v1wire.Message, error) {
	var out v1wire.Message
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/secrets/git-providers",
		body: &v1wire.ProviderTokensRequest{ProviderTokens: tokens}, idempotent: true}, &out)
	return out, err
}

// UnsetGitProviders deletes the user's git provider tokens.
func (c *Client) UnsetGitProviders(ctx context.Context) (v1wire.Message, error) {
	var out v1wire.Message
	err := c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/secrets/git-providers/tokens", idempotent: true}, &out)
	return out, err
}

// SearchSecrets returns one page of the user's secrets (names and
// descriptions; f may hold name__contains, limit, page_id).
func (c *Client) SearchSecrets(ctx context.Context, f Filter) (v1wire.Page[v1wire.SecretInfo], error) {
	var p v1wire.Page[v1wire.SecretInfo]
	err := c.get(ctx, "/secrets/search", f, &p)
	return p, err
}

// SearchGitRepositories returns one page of the user's repositories at a
// provider (f: provider, query, installation_id, sort_order, limit,
// page_id).
func (c *Client) SearchGitRepositories(ctx context.Context, f Filter) (v1wire.Page[v1wire.Repository], error) {
	var p v1wire.Page[v1wire.Repository]
	err := c.get(ctx, "/git/repositories/search", f, &p)
	return p, err
}

// SearchGitBranches returns one page of a repository's branches (f:
// provider, repository, query, limit, page_id).
func (c *Client) SearchGitBranches(ctx context.Context, f Filter) (v1wire.Page[v1wire.Branch], error) {
	var p v1wire.Page[v1wire.Branch]
	err := c.get(ctx, "/git/branches/search", f, &p)
	return p, err
}

// SearchGitInstallations returns one page of the user's app installation
// ids at a provider.
func (c *Client) SearchGitInstallations(ctx context.Context, f Filter) (v1wire.Page[string], error) {
	var p v1wire.Page[string]
	err := c.get(ctx, "/git/installations/search", f, &p)
	return p, err
}

// SearchSkills returns one page of the skills conversations load.
func (c *Client) SearchSkills(ctx context.Context, f Filter) (v1wire.Page[v1wire.SkillInfo], error) {
	var p v1wire.Page[v1wire.SkillInfo]
	err := c.get(ctx, "/skills/search", f, &p)
	return p, err
}

// RenameLLMProfile renames a profile (ECONFLICT when the new name is
// taken).
func (c *Client) RenameLLMProfile(ctx context.Context, name, newName string) (v1wire.ProfileMutation, error) {
	var out v1wire.ProfileMutation
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/settings/profiles/" + escape(name) + "/rename",
		body: &v1wire.RenameProfileRequest{NewName: newName}}, &out)
	return out, err
}
