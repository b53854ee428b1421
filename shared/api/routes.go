package api

import (
	"net/http"

	"github.com/acs-project/acs/shared/config"
)

// Auth is how a route authenticates its caller.
type Auth int

// The authentication kinds.
const (
	// AuthUser requires Authorization: Bearer <API_KEY>, or a browser
	// session's cookie (then state-changing requests must come from ACS's
	// own origin).
	AuthUser Auth = iota
	// AuthSandbox requires the X-Session-API-Key of a sandbox.
	AuthSandbox
	// AuthNone is open.
	AuthNone
)

// Route is one V1 route. Name is stable: it names the route's Lambda
// function and its API Gateway resource.
type Route struct {
	Name   string
	Method string
	Path   string // net/http pattern path; also the API Gateway resource path
	Auth   Auth
	// Needs says which adapters beyond the store the route uses
	// (config.NeedQueue, config.NeedRuntime, config.NeedBlobs): its Lambda function
	// links, configures and is granted only those.
	Needs  config.Need
	Handle func(a *API, w http.ResponseWriter, r *http.Request)
}

// RouteNamed returns the route named name.
func RouteNamed(name string) (Route, bool) {
	for _, rt := range Routes {
		if rt.Name == name {
			return rt, true
		}
	}
	return Route{}, false
}

// Routes is the one table of V1 routes.
var Routes = []Route{
	// App conversations.
	{"start_conversation", "POST", "/api/v1/app-conversations", AuthUser, config.NeedQueue, (*API).startConversation},
	{"stream_start_conversation", "POST", "/api/v1/app-conversations/stream-start", AuthUser, config.NeedQueue, (*API).streamStart},
	{"get_start_tasks", "GET", "/api/v1/app-conversations/start-tasks", AuthUser, 0, (*API).getStartTasks},
	{"search_start_tasks", "GET", "/api/v1/app-conversations/start-tasks/search", AuthUser, 0, (*API).searchStartTasks},
	{"count_start_tasks", "GET", "/api/v1/app-conversations/start-tasks/count", AuthUser, 0, (*API).countStartTasks},
	{"get_conversations", "GET", "/api/v1/app-conversations", AuthUser, config.NeedRuntime, (*API).getConversations},
	{"search_conversations", "GET", "/api/v1/app-conversations/search", AuthUser, config.NeedRuntime, (*API).searchConversations},
	{"count_conversations", "GET", "/api/v1/app-conversations/count", AuthUser, 0, (*API).countConversations},
	{"update_conversation", "PATCH", "/api/v1/app-conversations/{conversation_id}", AuthUser, config.NeedRuntime, (*API).updateConversation},
	{"delete_conversation", "DELETE", "/api/v1/app-conversations/{conversation_id}", AuthUser, config.NeedRuntime | config.NeedBlobs, (*API).deleteConversation},
	{"send_message", "POST", "/api/v1/app-conversations/{conversation_id}/send-message", AuthUser, config.NeedRuntime, (*API).sendMessage},
	{"download_conversation", "GET", "/api/v1/app-conversations/{conversation_id}/download", AuthUser, config.NeedRuntime | config.NeedBlobs, (*API).downloadConversation},
	{"read_file", "GET", "/api/v1/app-conversations/{conversation_id}/file", AuthUser, config.NeedRuntime, (*API).readFile},
	{"git_changes", "GET", "/api/v1/app-conversations/{conversation_id}/git/changes", AuthUser, config.NeedRuntime, (*API).gitChanges},
	{"git_diff", "GET", "/api/v1/app-conversations/{conversation_id}/git/diff", AuthUser, config.NeedRuntime, (*API).gitDiff},
	{"list_skills", "GET", "/api/v1/app-conversations/{conversation_id}/skills", AuthUser, config.NeedRuntime, (*API).listSkills},
	{"list_hooks", "GET", "/api/v1/app-conversations/{conversation_id}/hooks", AuthUser, config.NeedRuntime, (*API).listHooks},
	{"add_pending_message", "POST", "/api/v1/conversations/{conversation_id}/pending-messages", AuthUser, config.NeedRuntime, (*API).addPendingMessage},
	// Events, from the control plane's store.
	{"search_events", "GET", "/api/v1/conversation/{conversation_id}/events/search", AuthUser, config.NeedBlobs, (*API).searchEvents},
	{"count_events", "GET", "/api/v1/conversation/{conversation_id}/events/count", AuthUser, 0, (*API).countEvents},
	{"get_events", "GET", "/api/v1/conversation/{conversation_id}/events", AuthUser, config.NeedBlobs, (*API).getEvents},
	// Sandboxes and specs.
	{"create_sandbox", "POST", "/api/v1/sandboxes", AuthUser, config.NeedRuntime, (*API).createSandbox},
	{"search_sandboxes", "GET", "/api/v1/sandboxes/search", AuthUser, config.NeedRuntime, (*API).searchSandboxes},
	{"get_sandboxes", "GET", "/api/v1/sandboxes", AuthUser, config.NeedRuntime, (*API).getSandboxes},
	{"pause_sandbox", "POST", "/api/v1/sandboxes/{sandbox_id}/pause", AuthUser, config.NeedRuntime, (*API).pauseSandbox},
	{"resume_sandbox", "POST", "/api/v1/sandboxes/{sandbox_id}/resume", AuthUser, config.NeedRuntime, (*API).resumeSandbox},
	{"delete_sandbox", "DELETE", "/api/v1/sandboxes/{sandbox_id}", AuthUser, config.NeedRuntime | config.NeedBlobs, (*API).deleteSandbox},
	{"delete_sandbox_by_query", "DELETE", "/api/v1/sandboxes", AuthUser, config.NeedRuntime | config.NeedBlobs, (*API).deleteSandbox},
	{"search_sandbox_specs", "GET", "/api/v1/sandbox-specs/search", AuthUser, 0, (*API).searchSandboxSpecs},
	{"get_sandbox_specs", "GET", "/api/v1/sandbox-specs", AuthUser, 0, (*API).getSandboxSpecs},
	// Settings, secrets, users and keys.
	{"get_settings", "GET", "/api/v1/settings", AuthUser, 0, (*API).getSettings},
	{"update_settings", "POST", "/api/v1/settings", AuthUser, 0, (*API).updateSettings},
	{"get_agent_schema", "GET", "/api/v1/settings/agent-schema", AuthUser, 0, (*API).getAgentSchema},
	{"get_conversation_schema", "GET", "/api/v1/settings/conversation-schema", AuthUser, 0, (*API).getConversationSchema},
	{"list_profiles", "GET", "/api/v1/settings/profiles", AuthUser, 0, (*API).listProfiles},
	{"get_profile", "GET", "/api/v1/settings/profiles/{name}", AuthUser, 0, (*API).getProfile},
	{"save_profile", "POST", "/api/v1/settings/profiles/{name}", AuthUser, 0, (*API).saveProfile},
	{"delete_profile", "DELETE", "/api/v1/settings/profiles/{name}", AuthUser, 0, (*API).deleteProfile},
	{"activate_profile", "POST", "/api/v1/settings/profiles/{name}/activate", AuthUser, 0, (*API).activateProfile},
	{"rename_profile", "POST", "/api/v1/settings/profiles/{name}/rename", AuthUser, 0, (*API).renameProfile},
	{"list_secrets", "GET", "/api/v1/secrets", AuthUser, 0, (*API).listSecrets},
	{"search_secrets", "GET", "/api/v1/secrets/search", AuthUser, 0, (*API).searchSecrets},
	{"set_git_providers", "POST", "/api/v1/secrets/git-providers", AuthUser, 0, (*API).setGitProviders},
	{"unset_git_providers", "DELETE", "/api/v1/secrets/git-providers/tokens", AuthUser, 0, (*API).unsetGitProviders},
	{"delete_git_providers", "DELETE", "/api/v1/secrets/git-providers", AuthUser, 0, (*API).unsetGitProviders},
	{"create_secret", "POST", "/api/v1/secrets", AuthUser, 0, (*API).createSecret},
	{"get_secret", "GET", "/api/v1/secrets/{name}", AuthUser, 0, (*API).getSecret},
	{"update_secret", "PUT", "/api/v1/secrets/{name}", AuthUser, 0, (*API).updateSecret},
	{"delete_secret", "DELETE", "/api/v1/secrets/{name}", AuthUser, 0, (*API).deleteSecret},
	{"create_user", "POST", "/api/v1/users", AuthUser, 0, (*API).createUser},
	{"get_me", "GET", "/api/v1/users/me", AuthUser, 0, (*API).getMe},
	{"create_key", "POST", "/api/v1/keys", AuthUser, 0, (*API).createKey},
	{"list_keys", "GET", "/api/v1/keys", AuthUser, 0, (*API).listKeys},
	{"delete_key", "DELETE", "/api/v1/keys/{key_id}", AuthUser, 0, (*API).deleteKey},
	{"revoke_sessions", "DELETE", "/api/v1/users/{user_id}/sessions", AuthUser, 0, (*API).revokeSessions},
	// Browser sign-in pages (HTML; see pages.go).
	{"login_page", "GET", "/login", AuthNone, config.NeedSignIn, (*API).getLogin},
	{"login", "POST", "/login", AuthNone, config.NeedSignIn, (*API).postLogin},
	{"login_oidc", "GET", "/login/oidc", AuthNone, config.NeedSignIn, (*API).loginOIDC},
	{"login_oidc_callback", "GET", "/login/oidc/callback", AuthNone, config.NeedSignIn, (*API).loginOIDCCallback},
	{"logout_page", "GET", "/logout", AuthNone, config.NeedSignIn, (*API).getLogout},
	{"logout", "POST", "/logout", AuthNone, config.NeedSignIn, (*API).postLogout},
	// The OpenHands web frontend's configuration, profiles, schemas and pickers.
	{"get_web_client_config", "GET", "/api/v1/web-client/config", AuthNone, 0, (*API).getWebClientConfig},
	{"search_skills", "GET", "/api/v1/skills/search", AuthUser, 0, (*API).searchSkills},
	{"search_git_repositories", "GET", "/api/v1/git/repositories/search", AuthUser, 0, (*API).searchGitRepositories},
	{"search_git_branches", "GET", "/api/v1/git/branches/search", AuthUser, 0, (*API).searchGitBranches},
	{"search_git_installations", "GET", "/api/v1/git/installations/search", AuthUser, 0, (*API).searchGitInstallations},
	// Webhooks from sandboxes.
	{"webhook_events", "POST", "/api/v1/webhooks/events/{conversation_id}", AuthSandbox, config.NeedBlobs, (*API).webhookEvents},
	{"webhook_conversations", "POST", "/api/v1/webhooks/conversations", AuthSandbox, 0, (*API).webhookConversations},
}
