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
	{"start_conversation", "POST", "/api/v1/app-conversations", AuthUser, (*API).startConversation},
	{"get_start_tasks", "GET", "/api/v1/app-conversations/start-tasks", AuthUser, (*API).getStartTasks},
	{"get_conversations", "GET", "/api/v1/app-conversations", AuthUser, (*API).getConversations},
	{"search_events", "GET", "/api/v1/conversation/{conversation_id}/events/search", AuthUser, (*API).searchEvents},
	{"count_events", "GET", "/api/v1/conversation/{conversation_id}/events/count", AuthUser, (*API).countEvents},
	{"get_events", "GET", "/api/v1/conversation/{conversation_id}/events", AuthUser, (*API).getEvents},
	{"create_sandbox", "POST", "/api/v1/sandboxes", AuthUser, (*API).createSandbox},
	{"search_sandboxes", "GET", "/api/v1/sandboxes/search", AuthUser, (*API).searchSandboxes},
	{"get_sandboxes", "GET", "/api/v1/sandboxes", AuthUser, (*API).getSandboxes},
	{"search_sandbox_specs", "GET", "/api/v1/sandbox-specs/search", AuthUser, (*API).searchSandboxSpecs},
	{"webhook_events", "POST", "/api/v1/webhooks/events/{conversation_id}", AuthSandbox, (*API).webhookEvents},
	{"webhook_conversations", "POST", "/api/v1/webhooks/conversations", AuthSandbox, (*API).webhookConversations},
}
