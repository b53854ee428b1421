package agentserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/internal/openapi/openapitest"
)

// TestOpenAPIDocument: GET /openapi.json (open, no session key) is an
// OpenAPI 3.1 document that validates, documents every route the server
// registers (a route added without documentation fails here), uses
// OpenHands' schema names, and describes real responses; GET /docs is a
// self-contained HTML page of it.
func TestOpenAPIDocument(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/openapi.json", nil, "")
	if r.status != 200 {
		t.Fatalf("/openapi.json: %d %s", r.status, r.body)
	}
	doc := openapitest.Validate(t, r.body)
	ops := doc.Operations()
	for _, p := range e.srv.Patterns() {
		method, _, ok := strings.Cut(p, " ")
		if !ok {
			if p != "/api/" {
				t.Errorf("pattern %q has no method", p)
			}
			continue
		}
		path, _ := openapi.Path(p)
		if !ops[method+" "+path] {
			t.Errorf("route %s is not in the document", p)
		}
	}
	if len(ops) < 75 {
		t.Errorf("only %d operations documented", len(ops))
	}
	raw := doc.Raw()
	if v := raw["info"].(map[string]any)["version"]; v != "1.44.0" {
		t.Errorf("info.version %v, want 1.44.0", v)
	}
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"ConversationInfo", "StartConversationRequest", "SendMessageRequest", "Event", "MessageEvent",
		"ActionEvent", "ObservationEvent", "EventPage", "ConversationPage", "BashEventPage", "BashCommand", "BashOutput",
		"ExecuteBashRequest", "Success", "ServerInfo", "ProfileListResponse", "HTTPValidationError", "ValidationError",
		"ConversationExecutionStatus", "ConfirmationResponseRequest", "UpdateConversationRequest", "StartGoalRequest"} {
		if _, ok := schemas[name]; !ok {
			if _, in := schemas[name+"-Input"]; !in {
				t.Errorf("schema %s missing", name)
			}
		}
	}
	// The generated schemas say what the codec does: required, nullable,
	// emitnull.
	ci := schemas["ConversationInfo"].(map[string]any)
	if !contains(ci["required"], "leaf_event_id") || !contains(ci["required"], "id") || contains(ci["required"], "title") {
		t.Errorf("ConversationInfo.required %v", ci["required"])
	}
	start := schemas["StartConversationRequest"].(map[string]any)
	if req := start["required"]; !contains(req, "workspace") || contains(req, "max_iterations") {
		t.Errorf("StartConversationRequest.required %v", req)
	}
	if mi := start["properties"].(map[string]any)["max_iterations"].(map[string]any); mi["default"] != 500.0 || mi["minimum"] != 1.0 {
		t.Errorf("max_iterations %v", mi)
	}
	// Routes needing the session key say so; the server-details routes do not.
	paths := raw["paths"].(map[string]any)
	if _, ok := paths["/api/conversations"].(map[string]any)["post"].(map[string]any)["security"]; !ok {
		t.Error("POST /api/conversations has no security requirement")
	}
	if _, ok := paths["/openapi.json"].(map[string]any)["get"].(map[string]any)["security"]; ok {
		t.Error("GET /openapi.json requires a key")
	}

	// Real answers match their documented schemas.
	id := e.create(nil)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/server_info", ""},
		{"GET", "/api/conversations/" + id, ""},
		{"GET", "/api/conversations/search", ""},
		{"GET", "/api/conversations/" + id + "/events/search", ""},
		{"GET", "/api/conversations/00000000-0000-0000-0000-000000000000", ""},
		{"POST", "/api/conversations/" + id + "/events", `{"role":"user","content":[]}`},
		{"GET", "/api/profiles", ""},
		{"POST", "/api/bash/execute_bash_command", `{"command":"echo hi"}`},
		{"GET", "/api/bash/bash_events/search", ""},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, e.http.URL+c.path, body)
		req.Header.Set("X-Session-API-Key", testKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		req.URL.Host = "" // the document has no servers: match by path
		req.URL.Scheme = ""
		doc.CheckResponse(t, req, res, b)
	}

	page := e.do("GET", "/docs", nil, "")
	if page.status != 200 {
		t.Fatalf("/docs: %d %s", page.status, page.body)
	}
	html := string(page.body)
	for _, want := range []string{"<!doctype html>", "OpenHands Agent Server", "/api/conversations/{id}/goal", `id="schema-ConversationInfo"`, "openapi.json"} {
		if !strings.Contains(html, want) {
			t.Errorf("/docs lacks %q", want)
		}
	}
	for _, external := range []string{`src=`, `href="http`, `href="//`, "<link", "@import", "url("} {
		if strings.Contains(html, external) {
			t.Errorf("/docs refers to something external: %q", external)
		}
	}
	var info map[string]any
	e.do("GET", "/server_info", nil, "").json(t, &info)
	if info["version"] != "1.44.0" || info["docs"] != "/docs" {
		t.Errorf("server_info version %v docs %v", info["version"], info["docs"])
	}
}

func contains(list any, s string) bool {
	l, _ := list.([]any)
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}
