package api

import "net/http"

// Auth is how a route authenticates its caller.
type Auth int

// The authentication kinds.
const (
	// AuthUser requires Authorization: Bearer <API_KEY>.
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
	Path   string // net/http pattern path
	Auth   Auth
	Handle func(a *API, w http.ResponseWriter, r *http.Request)
}

// Routes is the one table of V1 routes.
var Routes = []Route{
	// App conversations.
	{"start_conversation", "POST", "/api/v1/app-conversations", AuthUser, (*API).startConversation},
	{"stream_start_conversation", "POST", "/api/v1/app-conversations/stream-start", AuthUser, (*API).streamStart},
	{"get_start_tasks", "GET", "/api/v1/app-conversations/start-tasks", AuthUser, (*API).getStartTasks},
	{"search_start_tasks", "GET", "/api/v1/app-conversations/start-tasks/search", AuthUser, (*API).searchStartTasks},
	{"count_start_tasks", "GET", "/api/v1/app-conversations/start-tasks/count", AuthUser, (*API).countStartTasks},
	{"get_conversations", "GET", "/api/v1/app-conversations", AuthUser, (*API).getConversations},
	{"search_conversations", "GET", "/api/v1/app-conversations/search", AuthUser, (*API).searchConversations},
	{"count_conversations", "GET", "/api/v1/app-conversations/count", AuthUser, (*API).countConversations},
	{"update_conversation", "PATCH", "/api/v1/app-conversations/{conversation_id}", AuthUser, (*API).updateConversation},
	{"delete_conversation", "DELETE", "/api/v1/app-conversations/{conversation_id}", AuthUser, (*API).deleteConversation},
	{"send_message", "POST", "/api/v1/app-conversations/{conversation_id}/send-message", AuthUser, (*API).sendMessage},
	{"download_conversation", "GET", "/api/v1/app-conversations/{conversation_id}/download", AuthUser, (*API).downloadConversation},
	{"read_file", "GET", "/api/v1/app-conversations/{conversation_id}/file", AuthUser, (*API).readFile},
	{"git_changes", "GET", "/api/v1/app-conversations/{conversation_id}/git/changes", AuthUser, (*API).gitChanges},
	{"git_diff", "GET", "/api/v1/app-conversations/{conversation_id}/git/diff", AuthUser, (*API).gitDiff},
	{"list_skills", "GET", "/api/v1/app-conversations/{conversation_id}/skills", AuthUser, (*API).listSkills},
	{"list_hooks", "GET", "/api/v1/app-conversations/{conversation_id}/hooks", AuthUser, (*API).listHooks},
	{"add_pending_message", "POST", "/api/v1/conversations/{conversation_id}/pending-messages", AuthUser, (*API).addPendingMessage},
	// Events, from the control plane's store.
	{"search_events", "GET", "/api/v1/conversation/{conversation_id}/events/search", AuthUser, (*API).searchEvents},
	{"count_events", "GET", "/api/v1/conversation/{conversation_id}/events/count", AuthUser, (*API).countEvents},
	{"get_events", "GET", "/api/v1/conversation/{conversation_id}/events", AuthUser, (*API).getEvents},
	// Sandboxes and specs.
	{"create_sandbox", "POST", "/api/v1/sandboxes", AuthUser, (*API).createSandbox},
	{"search_sandboxes", "GET", "/api/v1/sandboxes/search", AuthUser, (*API).searchSandboxes},
	{"get_sandboxes", "GET", "/api/v1/sandboxes", AuthUser, (*API).getSandboxes},
	{"pause_sandbox", "POST", "/api/v1/sandboxes/{sandbox_id}/pause", AuthUser, (*API).pauseSandbox},
	{"resume_sandbox", "POST", "/api/v1/sandboxes/{sandbox_id}/resume", AuthUser, (*API).resumeSandbox},
	{"delete_sandbox", "DELETE", "/api/v1/sandboxes/{sandbox_id}", AuthUser, (*API).deleteSandbox},
	{"delete_sandbox_by_query", "DELETE", "/api/v1/sandboxes", AuthUser, (*API).deleteSandbox},
	{"search_sandbox_specs", "GET", "/api/v1/sandbox-specs/search", AuthUser, (*API).searchSandboxSpecs},
	{"get_sandbox_specs", "GET", "/api/v1/sandbox-specs", AuthUser, (*API).getSandboxSpecs},
	// Settings, secrets, users and keys.
	{"get_settings", "GET", "/api/v1/settings", AuthUser, (*API).getSettings},
	{"update_settings", "POST", "/api/v1/settings", AuthUser, (*API).updateSettings},
	{"list_secrets", "GET", "/api/v1/secrets", AuthUser, (*API).listSecrets},
	{"create_secret", "POST", "/api/v1/secrets", AuthUser, (*API).createSecret},
	{"get_secret", "GET", "/api/v1/secrets/{name}", AuthUser, (*API).getSecret},
	{"update_secret", "PUT", "/api/v1/secrets/{name}", AuthUser, (*API).updateSecret},
	{"delete_secret", "DELETE", "/api/v1/secrets/{name}", AuthUser, (*API).deleteSecret},
	{"create_user", "POST", "/api/v1/users", AuthUser, (*API).createUser},
	{"get_me", "GET", "/api/v1/users/me", AuthUser, (*API).getMe},
	{"create_key", "POST", "/api/v1/keys", AuthUser, (*API).createKey},
	{"list_keys", "GET", "/api/v1/keys", AuthUser, (*API).listKeys},
	{"delete_key", "DELETE", "/api/v1/keys/{key_id}", AuthUser, (*API).deleteKey},
	// Webhooks from sandboxes.
	{"webhook_events", "POST", "/api/v1/webhooks/events/{conversation_id}", AuthSandbox, (*API).webhookEvents},
	{"webhook_conversations", "POST", "/api/v1/webhooks/conversations", AuthSandbox, (*API).webhookConversations},
}
