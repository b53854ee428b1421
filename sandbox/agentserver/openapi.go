package agentserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/skills"
)

// The agent server's OpenAPI document (GET /openapi.json, and the page
// GET /docs) is generated: its operations are the patterns routes()
// really registers (recorded by recordingMux), each described by its entry
// in routeDocs (body types and statuses), its schemas reflected from those
// Go types (internal/openapi). A registered pattern without an entry makes
// the document fail to build, and the tests fail. Schema names follow
// OpenHands' agent server (whose TypeScript client generates its types from
// this document).

// recordingMux is the server's mux, recording every pattern registered.
type recordingMux struct {
	*http.ServeMux
	patterns []string
}

func (m *recordingMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m *recordingMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// Patterns returns the route patterns the server registered, in order.
func (s *Server) Patterns() []string { return append([]string(nil), s.patterns...) }

// undocumented are the registered patterns that are not operations: the
// /api/ fallback answering 404 for unknown routes.
var undocumented = map[string]bool{"/api/": true}

// routeDoc documents one route.
type routeDoc struct {
	id        string
	summary   string
	tag       string
	open      bool // no X-Session-API-Key
	request   any
	optional  bool // the body may be empty
	reqType   string
	query     []openapi.Param
	header    []openapi.Param
	responses []openapi.Response
}

// ok200 is a 200 response with body v.
func ok200(v any) openapi.Response { return openapi.Response{Status: http.StatusOK, Body: v} }

func resp(status int, v any) openapi.Response { return openapi.Response{Status: status, Body: v} }

// withErrors appends the error statuses.
func withErrors(rs []openapi.Response, statuses ...int) []openapi.Response {
	return append(rs, openapi.Errors(statuses...)...)
}

// EventPage is a page of conversation events (as httpjson.WriteEventPage
// writes it).
type EventPage struct {
	Items      []events.Event `json:"items"`
	NextPageID *string        `json:"next_page_id" acs:"emitnull"`
}

// BashEventPage is a page of bash events.
type BashEventPage struct {
	Items      []agentwire.BashEvent `json:"items"`
	NextPageID *string               `json:"next_page_id" acs:"emitnull"`
}

// ServerStatus answers /alive, /health and /ready.
type ServerStatus struct {
	Message *string `json:"message"`
	Status  string  `json:"status"`
}

// InstalledSkillList answers GET /api/skills/installed.
type InstalledSkillList struct {
	Skills []agentwire.InstalledSkill `json:"skills"`
}

// SkillEnabled answers PATCH /api/skills/installed/{name}.
type SkillEnabled struct {
	Enabled bool   `json:"enabled"`
	Name    string `json:"name"`
}

// SkillMessage answers DELETE /api/skills/installed/{name}.
type SkillMessage struct {
	Message string `json:"message"`
}

// SkillRefreshed answers POST /api/skills/installed/{name}/refresh.
type SkillRefreshed struct {
	Message string                   `json:"message"`
	Skill   agentwire.InstalledSkill `json:"skill"`
}

func conversationQuery(extra ...openapi.Param) []openapi.Param {
	return append([]openapi.Param{{Name: "include_skills", Type: false, Description: "keep agent.agent_context.skills (emptied otherwise)"}}, extra...)
}

var eventFilterQuery = []openapi.Param{
	{Name: "kind", Type: ""}, {Name: "source", Type: events.Source("")}, {Name: "body", Type: ""},
	{Name: "timestamp__gte", Type: ""}, {Name: "timestamp__lt", Type: ""},
}

var pageQuery = []openapi.Param{{Name: "page_id", Type: ""}, {Name: "limit", Type: 0}}

func routeDocs() map[string]routeDoc {
	success := ok200(agentwire.Success{})
	info := ok200(agentwire.ConversationInfo{})
	conv := func(id, summary string, req any, rs ...openapi.Response) routeDoc {
		return routeDoc{id: id, summary: summary, tag: "Conversations", request: req,
			responses: withErrors(rs, 401, 404, 422)}
	}
	git := routeDoc{tag: "Git", query: []openapi.Param{{Name: "ref", Type: ""}},
		responses: withErrors([]openapi.Response{ok200([]agentwire.GitChange(nil))}, 400, 401, 404, 422, 500)}
	diff := routeDoc{tag: "Git", query: []openapi.Param{{Name: "ref", Type: ""}, {Name: "commit", Type: ""}},
		responses: withErrors([]openapi.Response{ok200(agentwire.GitDiff{})}, 400, 401, 404, 413, 422, 500)}
	upload := routeDoc{tag: "Files", request: openapi.FileUpload{}, reqType: "multipart/form-data",
		responses: withErrors([]openapi.Response{success}, 400, 401, 413, 422, 507)}
	download := routeDoc{tag: "Files", query: []openapi.Param{{Name: "path", Type: ""}},
		responses: withErrors([]openapi.Response{{Status: 200, Body: openapi.Binary{}, ContentType: "application/octet-stream"}}, 400, 401, 404, 422)}
	named := func(d routeDoc, id, summary string) routeDoc { d.id, d.summary = id, summary; return d }
	profile := func(id, summary string, req any, rs ...openapi.Response) routeDoc {
		return routeDoc{id: id, summary: summary, tag: "Profiles", request: req, responses: withErrors(rs, 401, 404, 409, 422)}
	}
	skill := func(id, summary string, req any, rs ...openapi.Response) routeDoc {
		return routeDoc{id: id, summary: summary, tag: "Skills", request: req, responses: withErrors(rs, 400, 401, 404, 409, 422)}
	}
	statusOK := ok200(ServerStatus{})
	return map[string]routeDoc{
		"GET /alive":       {id: "alive", summary: "Liveness", tag: "Server Details", open: true, responses: []openapi.Response{statusOK}},
		"GET /health":      {id: "health", summary: "Health", tag: "Server Details", open: true, responses: []openapi.Response{statusOK}},
		"GET /ready":       {id: "ready", summary: "Readiness: 503 until initialised", tag: "Server Details", open: true, responses: []openapi.Response{statusOK, resp(503, ServerStatus{})}},
		"GET /server_info": {id: "get_server_info", summary: "Server details", tag: "Server Details", open: true, responses: []openapi.Response{ok200(agentwire.ServerInfo{})}},
		"GET /{$}":         {id: "get_root", summary: "Server details", tag: "Server Details", open: true, responses: []openapi.Response{ok200(agentwire.ServerInfo{})}},
		"GET /openapi.json": {id: "get_openapi", summary: "This OpenAPI document", tag: "Server Details", open: true,
			responses: []openapi.Response{ok200(openapi.Any{}), resp(500, openapi.Detail{})}},
		"GET /docs": {id: "get_docs", summary: "This document as an HTML page", tag: "Server Details", open: true,
			responses: []openapi.Response{{Status: 200, Body: openapi.Binary{}, ContentType: "text/html"}, resp(500, openapi.Detail{})}},

		"POST /api/conversations": {id: "start_conversation", summary: "Start a conversation (200 when conversation_id exists)", tag: "Conversations",
			request: agentwire.StartConversationRequest{}, query: conversationQuery(),
			responses: withErrors([]openapi.Response{info, resp(201, agentwire.ConversationInfo{})}, 400, 401, 404, 409, 422, 500, 507)},
		"GET /api/conversations": {id: "batch_get_conversations", summary: "Conversations by id (null for unknown ids)", tag: "Conversations",
			query: conversationQuery(openapi.Param{Name: "ids", Type: []string{}, Required: true}), responses: withErrors([]openapi.Response{ok200([]*agentwire.ConversationInfo(nil))}, 401, 422)},
		"GET /api/conversations/search": {id: "search_conversations", summary: "Search conversations", tag: "Conversations",
			query:     conversationQuery(append([]openapi.Param{{Name: "status", Type: agentwire.ExecutionStatus("")}, {Name: "sort_order", Type: ""}}, pageQuery...)...),
			responses: withErrors([]openapi.Response{ok200(agentwire.ConversationPage{})}, 401, 422)},
		"GET /api/conversations/count": {id: "count_conversations", summary: "Count conversations", tag: "Conversations",
			query: []openapi.Param{{Name: "status", Type: agentwire.ExecutionStatus("")}}, responses: withErrors([]openapi.Response{ok200(0)}, 401, 422)},
		"GET /api/conversations/{id}":    conv("get_conversation", "A conversation", nil, info),
		"DELETE /api/conversations/{id}": conv("delete_conversation", "Delete a conversation", nil, success, resp(500, openapi.Detail{})),
		"PATCH /api/conversations/{id}":  conv("update_conversation", "Update title or tags", agentwire.UpdateConversationRequest{}, success),
		"POST /api/conversations/{id}/events": conv("send_message", "Send a message (run: start the agent)", agentwire.SendMessageRequest{}, success,
			resp(409, openapi.Detail{}), resp(507, openapi.Detail{})),
		"POST /api/conversations/{id}/run":       conv("run_conversation", "Run the agent", nil, success, resp(409, openapi.Detail{})),
		"POST /api/conversations/{id}/pause":     conv("pause_conversation", "Pause the agent", nil, success),
		"POST /api/conversations/{id}/interrupt": conv("interrupt_conversation", "Interrupt the agent", nil, success),
		"POST /api/conversations/{id}/condense":  conv("condense_conversation", "Condense the history", nil, success, resp(400, openapi.Detail{})),
		"GET /api/conversations/{id}/events/search": {id: "search_events", summary: "Search events", tag: "Events",
			query:     append(append([]openapi.Param{{Name: "sort_order", Type: events.EventSortOrder("")}}, pageQuery...), eventFilterQuery...),
			responses: withErrors([]openapi.Response{ok200(EventPage{})}, 401, 404, 422, 500)},
		"GET /api/conversations/{id}/events/count": {id: "count_events", summary: "Count events", tag: "Events",
			query: eventFilterQuery, responses: withErrors([]openapi.Response{ok200(0)}, 401, 404, 422)},
		"GET /api/conversations/{id}/events/{event_id}": {id: "get_event", summary: "An event", tag: "Events",
			responses: withErrors([]openapi.Response{ok200((*events.Event)(nil))}, 401, 404, 422, 500)},
		"GET /api/conversations/{id}/events": {id: "batch_get_events", summary: "Events by id (null for unknown ids)", tag: "Events",
			query: []openapi.Param{{Name: "event_ids", Type: []string{}}}, request: []string(nil), optional: true,
			responses: withErrors([]openapi.Response{ok200([]*events.Event(nil))}, 401, 404, 422)},
		"POST /api/conversations/{id}/events/respond_to_confirmation": conv("respond_to_confirmation", "Accept or reject the pending actions",
			agentwire.ConfirmationResponse{}, success, resp(409, openapi.Detail{})),
		"POST /api/conversations/{id}/secrets":             conv("update_conversation_secrets", "Add or replace secrets", agentwire.UpdateSecretsRequest{}, success),
		"POST /api/conversations/{id}/confirmation_policy": conv("set_confirmation_policy", "Set the confirmation policy", agentwire.SetConfirmationPolicyRequest{}, success),
		"POST /api/conversations/{id}/security_analyzer":   conv("set_security_analyzer", "Set the security analyzer", agentwire.SetSecurityAnalyzerRequest{}, success),
		"POST /api/conversations/{id}/ask_agent":           conv("ask_agent", "Ask the agent a side question", agentwire.AskAgentRequest{}, ok200(agentwire.FinalResponse{}), resp(502, openapi.Detail{})),
		"GET /api/conversations/{id}/agent_final_response": conv("get_agent_final_response", "The agent's final answer", nil, ok200(agentwire.FinalResponse{})),
		"POST /api/conversations/{id}/fork": conv("fork_conversation", "Fork the conversation", agentwire.ForkRequest{},
			resp(201, agentwire.ConversationInfo{}), resp(409, openapi.Detail{})),
		"POST /api/conversations/{id}/navigate":       conv("navigate_conversation", "Move the conversation's head (leaf_event_id)", agentwire.NavigateConversationRequest{}, info),
		"POST /api/conversations/{id}/goal":           conv("start_goal", "Start a goal loop", agentwire.StartGoalRequest{}, success, resp(400, openapi.Detail{}), resp(409, openapi.Detail{})),
		"POST /api/conversations/{id}/goal/resume":    conv("resume_goal", "Resume the goal loop", nil, success, resp(400, openapi.Detail{})),
		"POST /api/conversations/{id}/goal/stop":      conv("stop_goal", "Stop the goal loop", nil, success),
		"POST /api/conversations/{id}/switch_profile": conv("switch_profile", "Use a saved LLM profile", agentwire.SwitchProfileRequest{}, info),
		"POST /api/conversations/{id}/switch_llm":     conv("switch_llm", "Switch the conversation's LLM", agentwire.SwitchLLMRequest{}, info),
		"POST /api/conversations/{id}/switch_acp_model": conv("switch_acp_model", "Switch an ACP conversation's model (400 otherwise)",
			agentwire.SwitchACPModelRequest{}, info, resp(400, openapi.Detail{})),
		"GET /api/file/download-trajectory/{id}": {id: "download_trajectory", summary: "The conversation's state and events, zipped (secrets masked)", tag: "Files",
			responses: withErrors([]openapi.Response{{Status: 200, Body: openapi.Binary{}, ContentType: "application/zip"}}, 401, 404, 422, 500)},

		"POST /api/skills": {id: "get_skills", summary: "The skills available to an agent", tag: "Skills",
			request: skills.Request{}, optional: true, responses: withErrors([]openapi.Response{ok200(skills.Response{})}, 401, 422)},
		"POST /api/skills/install":                  skill("install_skill", "Install a skill", agentwire.InstallSkillRequest{}, ok200(agentwire.InstalledSkill{})),
		"GET /api/skills/installed":                 skill("list_installed_skills", "The installed skills", nil, ok200(InstalledSkillList{})),
		"GET /api/skills/installed/{name}":          skill("get_installed_skill", "An installed skill", nil, ok200(agentwire.InstalledSkill{})),
		"PATCH /api/skills/installed/{name}":        skill("set_skill_enabled", "Enable or disable an installed skill", setSkillEnabledRequest{}, ok200(SkillEnabled{})),
		"DELETE /api/skills/installed/{name}":       skill("uninstall_skill", "Uninstall a skill", nil, ok200(SkillMessage{})),
		"POST /api/skills/installed/{name}/refresh": skill("refresh_skill", "Reinstall a skill from its source", nil, ok200(SkillRefreshed{})),
		"POST /api/hooks": {id: "get_hooks", summary: "A project's hook configuration", tag: "Hooks",
			request: hooks.Request{}, responses: withErrors([]openapi.Response{ok200(hooks.Response{})}, 401, 403, 422)},
		"GET /api/tools/": {id: "list_tools_slash", summary: "The tool names", tag: "Tools", responses: withErrors([]openapi.Response{ok200([]string(nil))}, 401)},
		"GET /api/tools":  {id: "list_tools", summary: "The tool names", tag: "Tools", responses: withErrors([]openapi.Response{ok200([]string(nil))}, 401)},
		"GET /api/workspace/archive": {id: "workspace_archive", summary: "The workspace as a tar.gz (secrets masked)", tag: "Workspace",
			responses: withErrors([]openapi.Response{{Status: 200, Body: openapi.Binary{}, ContentType: "application/gzip"}}, 401, 404, 500)},

		"GET /api/llm/providers": {id: "list_providers", summary: "LLM providers", tag: "LLM", responses: withErrors([]openapi.Response{ok200(agentwire.ProvidersResponse{})}, 401)},
		"GET /api/llm/models": {id: "list_models", summary: "LLM models", tag: "LLM", query: []openapi.Param{{Name: "provider", Type: ""}},
			responses: withErrors([]openapi.Response{ok200(agentwire.ModelsResponse{})}, 401, 422)},
		"GET /api/llm/models/verified": {id: "list_verified_models", summary: "Verified models by provider", tag: "LLM",
			responses: withErrors([]openapi.Response{ok200(agentwire.VerifiedModelsResponse{})}, 401)},
		"GET /api/settings/agent-schema": {id: "get_agent_settings_schema", summary: "The agent settings form", tag: "Settings",
			responses: withErrors([]openapi.Response{ok200(settingsschema.Agent())}, 401)},
		"GET /api/settings/conversation-schema": {id: "get_conversation_settings_schema", summary: "The conversation settings form", tag: "Settings",
			responses: withErrors([]openapi.Response{ok200(settingsschema.Conversation())}, 401)},
		"GET /api/vscode/status": {id: "get_vscode_status", summary: "VS Code status", tag: "VSCode", responses: withErrors([]openapi.Response{ok200(agentwire.VSCodeStatus{})}, 401)},
		"GET /api/desktop/url": {id: "get_desktop_url", summary: "The desktop's URL (503 without a desktop)", tag: "Desktop",
			responses: withErrors([]openapi.Response{ok200(agentwire.DesktopURL{})}, 401, 503)},

		"GET /api/profiles": {id: "list_profiles", summary: "Saved LLM profiles", tag: "Profiles", responses: withErrors([]openapi.Response{ok200(agentwire.ProfileList{})}, 401, 500)},
		"GET /api/profiles/{name}": {id: "get_profile", summary: "A profile (the key only with X-Expose-Secrets)", tag: "Profiles",
			header:    []openapi.Param{{Name: "X-Expose-Secrets", Type: "", Description: "encrypted or plaintext"}},
			responses: withErrors([]openapi.Response{ok200(agentwire.ProfileDetail{})}, 400, 401, 404, 422, 503)},
		"POST /api/profiles/{name}":          profile("save_profile", "Save a profile", agentwire.SaveProfileRequest{}, resp(201, agentwire.ProfileMutation{})),
		"DELETE /api/profiles/{name}":        profile("delete_profile", "Delete a profile", nil, ok200(agentwire.ProfileMutation{})),
		"POST /api/profiles/{name}/activate": profile("activate_profile", "Make a profile the active one", openapi.Any{}, ok200(agentwire.ActivateProfileResponse{})),
		"POST /api/profiles/{name}/rename":   profile("rename_profile", "Rename a profile", agentwire.RenameProfileRequest{}, ok200(agentwire.ProfileMutation{})),

		"GET /api/git/changes":             named(git, "git_changes", "Changed files of the workspace's repository"),
		"GET /api/git/changes/{path...}":   named(git, "git_changes_path", "Changed files of the repository at path"),
		"GET /api/git/diff":                named(diff, "git_diff", "A file's diff"),
		"GET /api/git/diff/{path...}":      named(diff, "git_diff_path", "The diff of the file at path"),
		"POST /api/file/upload":            named(upload, "upload_file", "Upload a file (path in the query)"),
		"POST /api/file/upload/{path...}":  named(upload, "upload_file_path", "Upload a file to path"),
		"GET /api/file/download":           named(download, "download_file", "Download a file (path in the query)"),
		"GET /api/file/download/{path...}": named(download, "download_file_path", "Download the file at path"),

		"POST /api/bash/start_bash_command": {id: "start_bash_command", summary: "Start a command", tag: "Bash", request: agentwire.ExecuteBashRequest{},
			responses: withErrors([]openapi.Response{ok200(agentwire.BashCommand{}), resp(400, agentwire.BashError{})}, 401, 422, 500, 503, 507)},
		"POST /api/bash/execute_bash_command": {id: "execute_bash_command", summary: "Run a command and wait for its output", tag: "Bash", request: agentwire.ExecuteBashRequest{},
			responses: withErrors([]openapi.Response{ok200(agentwire.BashOutput{}), resp(400, agentwire.BashError{})}, 401, 422, 500, 503, 507)},
		"GET /api/bash/bash_events/search": {id: "search_bash_events", summary: "Search bash events", tag: "Bash",
			query: append([]openapi.Param{{Name: "kind__eq", Type: ""}, {Name: "command_id__eq", Type: ""}, {Name: "timestamp__gte", Type: ""},
				{Name: "timestamp__lt", Type: ""}, {Name: "order__gt", Type: 0}, {Name: "sort_order", Type: ""}}, pageQuery...),
			responses: withErrors([]openapi.Response{ok200(BashEventPage{})}, 401, 422, 500)},
		"GET /api/bash/bash_events/{event_id}": {id: "get_bash_event", summary: "A bash event", tag: "Bash",
			responses: withErrors([]openapi.Response{ok200((*agentwire.BashEvent)(nil))}, 401, 404)},
		"GET /api/bash/bash_events/{$}": {id: "batch_get_bash_events", summary: "Bash events by id (a JSON array of ids as the body; null for unknown ids)", tag: "Bash",
			query: []openapi.Param{{Name: "event_ids", Type: []string{}}}, request: []string(nil), optional: true,
			responses: withErrors([]openapi.Response{ok200([]*agentwire.BashEvent(nil))}, 401, 422)},
		"DELETE /api/bash/bash_events": {id: "clear_bash_events", summary: "Delete every bash event", tag: "Bash",
			responses: withErrors([]openapi.Response{ok200(agentwire.ClearBashResponse{})}, 401, 500)},

		"GET /sockets/bash-events": {id: "bash_events_socket", summary: "WebSocket of bash events (session key as session_api_key)", tag: "Sockets", open: true,
			query:     []openapi.Param{{Name: "session_api_key", Type: ""}, {Name: "resend_all", Type: false}},
			responses: withErrors([]openapi.Response{{Status: 101, Description: "Switching Protocols"}}, 401)},
		"GET /sockets/events/{id}": {id: "events_socket", summary: "WebSocket of a conversation's events (session key as session_api_key)", tag: "Sockets", open: true,
			query:     []openapi.Param{{Name: "session_api_key", Type: ""}, {Name: "resend_all", Type: false}},
			responses: withErrors([]openapi.Response{{Status: 101, Description: "Switching Protocols"}}, 401, 404)},
	}
}

// schemaNames are the OpenHands names of ACS types named differently.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[agentwire.ExecutionStatus]():      "ConversationExecutionStatus",
	reflect.TypeFor[agentwire.ConfirmationResponse](): "ConfirmationResponseRequest",
	reflect.TypeFor[agentwire.FinalResponse]():        "AgentResponseResult",
	reflect.TypeFor[agentwire.ForkRequest]():          "ForkConversationRequest",
	reflect.TypeFor[agentwire.ProfileList]():          "ProfileListResponse",
	reflect.TypeFor[agentwire.ProfileDetail]():        "ProfileResponse",
	reflect.TypeFor[agentwire.ProfileMutation]():      "ProfileMutationResponse",
	reflect.TypeFor[agentwire.ProfileInfo]():          "ProfileInfo",
	reflect.TypeFor[agentwire.SaveProfileRequest]():   "SaveProfileRequest",
	reflect.TypeFor[agentwire.VSCodeStatus]():         "VSCodeStatusResponse",
	reflect.TypeFor[agentwire.DesktopURL]():           "DesktopUrlResponse",
	reflect.TypeFor[skills.Request]():                 "SkillsRequest",
	reflect.TypeFor[skills.Response]():                "SkillsResponse",
	reflect.TypeFor[hooks.Request]():                  "HooksRequest",
	reflect.TypeFor[hooks.Response]():                 "HooksResponse",
	reflect.TypeFor[agentwire.InstallSkillRequest]():  "InstallSkillRequest",
	reflect.TypeFor[setSkillEnabledRequest]():         "SetSkillEnabledRequest",
	reflect.TypeFor[agentwire.InstalledSkill]():       "InstalledSkillInfo",
	reflect.TypeFor[agentwire.BashEvent]():            "BashEventBase",
	reflect.TypeFor[agentwire.ClearBashResponse]():    "BashEventsCleared",
	reflect.TypeFor[agentwire.GitChange]():            "GitChange",
	reflect.TypeFor[agentwire.GitDiff]():              "GitDiff",
}

// openAPIDocument builds the document of the routes s registered.
func (s *Server) openAPIDocument() (map[string]any, error) {
	docs := routeDocs()
	var ops []openapi.Operation
	seen := map[string]bool{}
	for _, p := range s.patterns {
		if undocumented[p] {
			continue
		}
		d, ok := docs[p]
		if !ok {
			return nil, fmt.Errorf("route %q has no documentation in routeDocs", p)
		}
		seen[p] = true
		method, _, _ := strings.Cut(p, " ")
		op := openapi.Operation{Method: method, Pattern: p, ID: d.id, Summary: d.summary, Request: d.request,
			RequestType: d.reqType, RequestOptional: d.optional, Query: d.query, Header: d.header, Responses: d.responses}
		if d.tag != "" {
			op.Tags = []string{d.tag}
		}
		if !d.open {
			op.Security = "APIKeyHeader"
		}
		ops = append(ops, op)
	}
	for p := range docs {
		if !seen[p] {
			return nil, fmt.Errorf("routeDocs documents %q, which is not registered", p)
		}
	}
	str := map[string]any{"type": "string"}
	return openapi.Build(openapi.Options{
		Info: openapi.Info{Title: "OpenHands Agent Server", Version: Version,
			Description: "ACS's OpenHands-compatible agent server: REST/WebSocket interface for an AI agent in a sandbox"},
		SecuritySchemes: map[string]map[string]any{
			"APIKeyHeader": {"type": "apiKey", "in": "header", "name": "X-Session-API-Key"},
		},
		Schemas: map[reflect.Type]map[string]any{
			reflect.TypeFor[events.Time]():            str,
			reflect.TypeFor[agentwire.SecretSource](): {"anyOf": []any{str, map[string]any{"type": "object", "properties": map[string]any{"kind": map[string]any{"type": "string", "enum": []any{"StaticSecret", "LookupSecret"}}, "value": str, "url": str, "headers": map[string]any{"type": "object", "additionalProperties": str}, "description": str}}}},
			reflect.TypeFor[json.RawMessage]():        {},
		},
		OneOf: map[reflect.Type][]any{
			reflect.TypeFor[agentwire.BashEvent](): {agentwire.BashCommand{}, agentwire.BashOutput{}, agentwire.BashError{}},
		},
		Names: schemaNames,
	}, ops)
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	s.docs.ServeJSON(w, docsFailed)
}

func (s *Server) serveDocs(w http.ResponseWriter, _ *http.Request) {
	s.docs.ServeHTML(w, docsFailed)
}

func docsFailed(w http.ResponseWriter, err error) {
	httpjson.WriteDetail(w, http.StatusInternalServerError, "Could not build the OpenAPI document: "+err.Error())
}
