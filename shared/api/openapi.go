package api

import (
	"fmt"
	"net/http"
	"reflect"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// The V1 OpenAPI document (GET /openapi.json, and the page GET /docs) is
// generated: its operations are the route table (Routes: method, path,
// authentication), each described by its entry in routeDocs (body types
// and statuses, keyed by the route's Name), its schemas reflected from
// those Go types (internal/openapi). A route without an entry makes the
// document fail to build, and the tests fail. The two routes are served by
// Handler (acs serve), outside the table: on AWS they have no function.

// routeDoc documents one route of the table.
type routeDoc struct {
	summary   string
	request   any
	optional  bool // the body may be empty
	reqType   string
	query     []openapi.Param
	responses []openapi.Response
}

func v1ok(v any) openapi.Response { return openapi.Response{Status: http.StatusOK, Body: v} }

func v1status(status int, v any) openapi.Response { return openapi.Response{Status: status, Body: v} }

func v1html(status int) openapi.Response {
	return openapi.Response{Status: status, Body: openapi.Binary{}, ContentType: "text/html"}
}

var idsQuery = func(name string) []openapi.Param {
	return []openapi.Param{{Name: name, Type: []string{}, Required: true}}
}

var v1PageQuery = []openapi.Param{{Name: "page_id", Type: ""}, {Name: "limit", Type: 0}}

// v1RouteDocs documents every route of the table by name. Every user route
// may also answer 401 (no or a bad key) and 403 (a cross-site request from
// a browser session); v1Errors adds them.
func v1RouteDocs() map[string]routeDoc {
	success := v1ok(agentwire.Success{})
	conv := v1ok(v1wire.Conversation{})
	task := v1ok(v1wire.StartTask{})
	mutation := v1ok(v1wire.ProfileMutation{})
	secret := v1ok(v1wire.Secret{})
	login := routeDoc{responses: []openapi.Response{v1html(200), {Status: 303, Description: "See Other (redirect)"}}}
	named := func(d routeDoc, summary string) routeDoc { d.summary = summary; return d }
	return map[string]routeDoc{
		"start_conversation": {summary: "Start a conversation: answers its start task", request: v1wire.StartRequest{}, optional: true,
			responses: []openapi.Response{task, v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{}), v1status(422, openapi.Validation{}), v1status(503, openapi.Detail{})}},
		"stream_start_conversation": {summary: "Start a conversation, streaming its start task as it progresses (a JSON array, item by item)",
			request: v1wire.StartRequest{}, optional: true,
			responses: []openapi.Response{v1ok([]v1wire.StartTask(nil)), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{}), v1status(422, openapi.Validation{})}},
		"get_start_tasks":      {summary: "Start tasks by id (null for unknown ids)", query: idsQuery("ids"), responses: []openapi.Response{v1ok([]*v1wire.StartTask(nil))}},
		"search_start_tasks":   {summary: "Search start tasks", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.StartTask]{})}},
		"count_start_tasks":    {summary: "Count start tasks", responses: []openapi.Response{v1ok(0)}},
		"get_conversations":    {summary: "Conversations by id (null for unknown ids)", query: idsQuery("ids"), responses: []openapi.Response{v1ok([]*v1wire.Conversation(nil))}},
		"search_conversations": {summary: "Search conversations", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.Conversation]{})}},
		"count_conversations":  {summary: "Count conversations", responses: []openapi.Response{v1ok(0)}},
		"update_conversation":  {summary: "Update a conversation (absent fields kept, null clears)", request: v1wire.UpdateRequest{}, responses: []openapi.Response{conv, v1status(404, openapi.Detail{})}},
		"delete_conversation":  {summary: "Delete a conversation", responses: []openapi.Response{success, v1status(404, openapi.Detail{})}},
		"send_message": {summary: "Send a message (resuming the sandbox when paused)", request: v1wire.SendMessageRequest{},
			responses: []openapi.Response{v1ok(v1wire.SendMessageResponse{}), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{}), v1status(502, openapi.Detail{}), v1status(503, openapi.Detail{})}},
		"download_conversation": {summary: "The conversation as a zip", responses: []openapi.Response{{Status: 200, Body: openapi.Binary{}, ContentType: "application/zip"}, v1status(404, openapi.Detail{})}},
		"read_file": {summary: "A workspace file's text", query: []openapi.Param{{Name: "file_path", Type: "", Required: true}},
			responses: []openapi.Response{v1ok(""), v1status(400, openapi.Detail{}), v1status(404, openapi.Detail{}), v1status(413, openapi.Detail{}), v1status(409, openapi.Detail{})}},
		"git_changes": {summary: "Changed files of the workspace's repository", query: []openapi.Param{{Name: "path", Type: ""}},
			responses: []openapi.Response{v1ok([]agentwire.GitChange(nil)), v1status(400, openapi.Detail{}), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{})}},
		"git_diff": {summary: "A file's diff", query: []openapi.Param{{Name: "path", Type: "", Required: true}},
			responses: []openapi.Response{v1ok(agentwire.GitDiff{}), v1status(400, openapi.Detail{}), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{}), v1status(413, openapi.Detail{})}},
		"list_skills":         {summary: "The conversation's skills", responses: []openapi.Response{v1ok(v1wire.SkillList{}), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{})}},
		"list_hooks":          {summary: "The conversation's hooks", responses: []openapi.Response{v1ok(v1wire.HookList{}), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{})}},
		"add_pending_message": {summary: "Queue a message for a starting conversation", request: v1wire.PendingMessageRequest{}, responses: []openapi.Response{v1status(201, v1wire.PendingMessageResponse{}), v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{})}},

		"search_events": {summary: "Search a conversation's events", query: v1PageQuery, responses: []openapi.Response{v1ok(EventPage{}), v1status(404, openapi.Detail{})}},
		"count_events":  {summary: "Count a conversation's events", responses: []openapi.Response{v1ok(0), v1status(404, openapi.Detail{})}},
		"get_events":    {summary: "Events by id (null for unknown ids)", query: idsQuery("id"), responses: []openapi.Response{v1ok([]*events.Event(nil)), v1status(404, openapi.Detail{})}},

		"create_sandbox":          {summary: "Create a sandbox", query: []openapi.Param{{Name: "sandbox_spec_id", Type: ""}}, responses: []openapi.Response{v1ok(v1wire.Sandbox{}), v1status(409, openapi.Detail{}), v1status(503, openapi.Detail{})}},
		"search_sandboxes":        {summary: "Search sandboxes", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.Sandbox]{})}},
		"get_sandboxes":           {summary: "Sandboxes by id (null for unknown ids)", query: idsQuery("id"), responses: []openapi.Response{v1ok([]*v1wire.Sandbox(nil))}},
		"pause_sandbox":           {summary: "Pause a sandbox", responses: []openapi.Response{success, v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{})}},
		"resume_sandbox":          {summary: "Resume a sandbox", responses: []openapi.Response{success, v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{}), v1status(503, openapi.Detail{})}},
		"delete_sandbox":          {summary: "Delete a sandbox", responses: []openapi.Response{success, v1status(404, openapi.Detail{})}},
		"delete_sandbox_by_query": {summary: "Delete a sandbox (sandbox_id in the query)", query: []openapi.Param{{Name: "sandbox_id", Type: "", Required: true}}, responses: []openapi.Response{success, v1status(404, openapi.Detail{})}},
		"search_sandbox_specs":    {summary: "Search sandbox specs", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.Spec]{})}},
		"get_sandbox_specs":       {summary: "Sandbox specs by id (null for unknown ids)", query: idsQuery("id"), responses: []openapi.Response{v1ok([]*v1wire.Spec(nil))}},

		"get_settings":            {summary: "The user's settings", responses: []openapi.Response{v1ok(v1wire.Settings{})}},
		"update_settings":         {summary: "Save some settings", request: v1wire.SettingsRequest{}, responses: []openapi.Response{v1ok(v1wire.Settings{})}},
		"get_agent_schema":        {summary: "The agent settings form", responses: []openapi.Response{v1ok(settingsschema.Agent())}},
		"get_conversation_schema": {summary: "The conversation settings form", responses: []openapi.Response{v1ok(settingsschema.Conversation())}},
		"list_profiles":           {summary: "Saved LLM profiles", responses: []openapi.Response{v1ok(v1wire.ProfileList{})}},
		"get_profile":             {summary: "A profile", responses: []openapi.Response{v1ok(v1wire.ProfileDetail{}), v1status(404, openapi.Detail{})}},
		"save_profile":            {summary: "Save a profile", request: v1wire.SaveProfileRequest{}, responses: []openapi.Response{v1status(201, v1wire.ProfileMutation{})}},
		"delete_profile":          {summary: "Delete a profile", responses: []openapi.Response{mutation, v1status(404, openapi.Detail{})}},
		"activate_profile":        {summary: "Make a profile the active one", request: openapi.Any{}, optional: true, responses: []openapi.Response{v1ok(v1wire.ActivateProfileResponse{}), v1status(404, openapi.Detail{})}},
		"rename_profile":          {summary: "Rename a profile", request: v1wire.RenameProfileRequest{}, responses: []openapi.Response{mutation, v1status(404, openapi.Detail{}), v1status(409, openapi.Detail{})}},
		"list_secrets":            {summary: "The user's secrets (names and descriptions)", responses: []openapi.Response{v1ok(v1wire.SecretList{})}},
		"search_secrets":          {summary: "Search the user's secrets", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.SecretInfo]{})}},
		"set_git_providers":       {summary: "Store git provider tokens", request: v1wire.ProviderTokensRequest{}, responses: []openapi.Response{v1ok(v1wire.Message{})}},
		"unset_git_providers":     {summary: "Remove the git provider tokens", responses: []openapi.Response{v1ok(v1wire.Message{})}},
		"delete_git_providers":    {summary: "Remove the git provider tokens", responses: []openapi.Response{v1ok(v1wire.Message{})}},
		"create_secret":           {summary: "Create a secret", request: v1wire.CreateSecretRequest{}, responses: []openapi.Response{v1status(201, v1wire.Secret{}), v1status(409, openapi.Detail{})}},
		"get_secret":              {summary: "A secret (without its value)", responses: []openapi.Response{secret, v1status(404, openapi.Detail{})}},
		"update_secret":           {summary: "Update a secret", request: v1wire.UpdateSecretRequest{}, responses: []openapi.Response{secret, v1status(404, openapi.Detail{})}},
		"delete_secret":           {summary: "Delete a secret", responses: []openapi.Response{success, v1status(404, openapi.Detail{})}},
		"create_user":             {summary: "Create a user (admin)", request: v1wire.NameRequest{}, responses: []openapi.Response{v1status(201, v1wire.NewUser{}), v1status(409, openapi.Detail{})}},
		"get_me":                  {summary: "The caller", responses: []openapi.Response{v1ok(v1wire.User{})}},
		"create_key":              {summary: "Create an API key", request: v1wire.NameRequest{}, responses: []openapi.Response{v1status(201, v1wire.NewKey{})}},
		"list_keys":               {summary: "The caller's API keys", responses: []openapi.Response{v1ok([]v1wire.Key(nil))}},
		"delete_key":              {summary: "Delete an API key", responses: []openapi.Response{success, v1status(404, openapi.Detail{})}},
		"revoke_sessions":         {summary: "Sign a user out of every browser session", responses: []openapi.Response{v1ok(v1wire.RevokedSessions{}), v1status(404, openapi.Detail{})}},

		"login_page":          named(login, "The sign-in page"),
		"login":               {summary: "Sign in with a key (form post)", request: openapi.Any{}, reqType: "application/x-www-form-urlencoded", responses: login.responses},
		"login_oidc":          {summary: "Sign in with OpenID Connect (redirects to the provider)", responses: []openapi.Response{{Status: 302, Description: "Found (redirect)"}, v1html(400)}},
		"login_oidc_callback": {summary: "The OpenID Connect callback", responses: []openapi.Response{{Status: 303, Description: "See Other (redirect)"}, v1html(400)}},
		"logout_page":         named(login, "The sign-out page"),
		"logout":              {summary: "Sign out (form post)", request: openapi.Any{}, optional: true, reqType: "application/x-www-form-urlencoded", responses: login.responses},

		"get_web_client_config":    {summary: "The web frontend's configuration", responses: []openapi.Response{v1ok(v1wire.WebClientConfig{})}},
		"search_skills":            {summary: "Search the skills a conversation could use", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.SkillInfo]{})}},
		"search_git_repositories":  {summary: "Search the user's git repositories", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.Repository]{}), v1status(502, openapi.Detail{})}},
		"search_git_branches":      {summary: "Search a repository's branches", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[v1wire.Branch]{}), v1status(502, openapi.Detail{})}},
		"search_git_installations": {summary: "Search the git provider installations", query: v1PageQuery, responses: []openapi.Response{v1ok(v1wire.Page[string]{})}},

		"webhook_events":        {summary: "A sandbox reports a conversation's events", request: []events.Event(nil), responses: []openapi.Response{success, v1status(404, openapi.Detail{}), v1status(413, openapi.Detail{})}},
		"webhook_conversations": {summary: "A sandbox reports a conversation's state", request: agentwire.ConversationInfo{}, responses: []openapi.Response{success, v1status(404, openapi.Detail{})}},
	}
}

// EventPage is a page of events (as httpjson.WriteEventPage writes it).
type EventPage struct {
	Items      []events.Event `json:"items"`
	NextPageID *string        `json:"next_page_id" acs:"emitnull"`
}

// OpenAPIDocument builds the V1 API's OpenAPI 3.1 document from the route
// table. It fails when a route of the table has no documentation.
func OpenAPIDocument() (map[string]any, error) {
	docs := v1RouteDocs()
	var ops []openapi.Operation
	seen := map[string]bool{}
	for _, rt := range Routes {
		d, ok := docs[rt.Name]
		if !ok {
			return nil, fmt.Errorf("route %s (%s %s) has no documentation in v1RouteDocs", rt.Name, rt.Method, rt.Path)
		}
		seen[rt.Name] = true
		op := openapi.Operation{Method: rt.Method, Pattern: rt.Path, ID: rt.Name, Summary: d.summary, Request: d.request,
			RequestType: d.reqType, RequestOptional: d.optional, Query: d.query, Responses: d.responses}
		switch rt.Auth {
		case AuthUser:
			op.Security = "BearerAuth"
			op.Tags = []string{"V1"}
			op.Responses = append(append([]openapi.Response(nil), op.Responses...), openapi.Errors(401, 403, 422, 500)...)
		case AuthSandbox:
			op.Security = "SessionAPIKey"
			op.Tags = []string{"Webhooks"}
			op.Responses = append(append([]openapi.Response(nil), op.Responses...), openapi.Errors(401, 422, 500)...)
		default:
			op.Tags = []string{"Open"}
		}
		op.Responses = dedupe(op.Responses)
		ops = append(ops, op)
	}
	for name := range docs {
		if !seen[name] {
			return nil, fmt.Errorf("v1RouteDocs documents %q, which is not in the route table", name)
		}
	}
	ops = append(ops,
		openapi.Operation{Method: "GET", Pattern: "/openapi.json", ID: "get_openapi", Summary: "This OpenAPI document", Tags: []string{"Open"},
			Responses: []openapi.Response{{Status: 200, Body: openapi.Any{}}, {Status: 500, Body: openapi.Detail{}}}},
		openapi.Operation{Method: "GET", Pattern: "/docs", ID: "get_docs", Summary: "This document as an HTML page", Tags: []string{"Open"},
			Responses: []openapi.Response{v1html(200), {Status: 500, Body: openapi.Detail{}}}},
	)
	str := map[string]any{"type": "string"}
	return openapi.Build(openapi.Options{
		Info: openapi.Info{Title: "ACS V1 API", Version: "1",
			Description: "The ACS control plane: OpenHands V1 app-server routes under /api/v1 (conversations, start tasks, events, sandboxes, settings, secrets, users and keys)."},
		SecuritySchemes: map[string]map[string]any{
			"BearerAuth":    {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <API key> (or a browser session's cookie)"},
			"SessionAPIKey": {"type": "apiKey", "in": "header", "name": "X-Session-API-Key"},
		},
		Schemas: map[reflect.Type]map[string]any{
			reflect.TypeFor[events.Time](): str,
		},
	}, ops)
}

// dedupe keeps the first response of each status (a route's own
// description wins over the common error statuses).
func dedupe(rs []openapi.Response) []openapi.Response {
	seen := map[int]bool{}
	var out []openapi.Response
	for _, r := range rs {
		if !seen[r.Status] {
			seen[r.Status] = true
			out = append(out, r)
		}
	}
	return out
}

var v1Docs = openapi.NewDocs(OpenAPIDocument)

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) { v1Docs.ServeJSON(w, docsFailed) }

func serveDocs(w http.ResponseWriter, _ *http.Request) { v1Docs.ServeHTML(w, docsFailed) }

func docsFailed(w http.ResponseWriter, err error) {
	writeErr(w, acs.Errorf(acs.EINTERNAL, "build the OpenAPI document: %v", err))
}
