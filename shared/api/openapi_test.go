package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/internal/openapi/openapitest"
	"github.com/acs-project/acs/shared/api"
)

// TestOpenAPIDocumentCoversTheTable: the V1 document validates as OpenAPI
// 3.1 and has every route of the table (a route added to the table without
// documentation makes OpenAPIDocument fail), with its authentication, its
// request body and the error bodies of its statuses.
func TestOpenAPIDocumentCoversTheTable(t *testing.T) {
	doc, err := api.OpenAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d := openapitest.Validate(t, b)
	ops := d.Operations()
	paths := d.Raw()["paths"].(map[string]any)
	for _, rt := range api.Routes {
		path, _ := openapi.Path(rt.Path)
		if !ops[rt.Method+" "+path] {
			t.Errorf("route %s (%s %s) is not in the document", rt.Name, rt.Method, path)
			continue
		}
		op := paths[path].(map[string]any)[strings.ToLower(rt.Method)].(map[string]any)
		if op["operationId"] != rt.Name {
			t.Errorf("%s: operationId %v", rt.Name, op["operationId"])
		}
		_, secured := op["security"]
		if secured != (rt.Auth != api.AuthNone) {
			t.Errorf("%s: security %v for auth %v", rt.Name, op["security"], rt.Auth)
		}
		resps := op["responses"].(map[string]any)
		if rt.Auth == api.AuthUser {
			for code, schema := range map[string]string{"401": "ErrorDetail", "422": "HTTPValidationError"} {
				r, ok := resps[code].(map[string]any)
				if !ok {
					t.Errorf("%s: no %s response", rt.Name, code)
					continue
				}
				ref := r["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"]
				if ref != "#/components/schemas/"+schema {
					t.Errorf("%s: %s body %v, want %s", rt.Name, code, ref, schema)
				}
			}
		}
	}
	for _, p := range []string{"GET /openapi.json", "GET /docs"} {
		if !ops[p] {
			t.Errorf("%s is not documented", p)
		}
	}
	start := paths["/api/v1/app-conversations"].(map[string]any)["post"].(map[string]any)
	if ref := start["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"]; !strings.HasPrefix(ref.(string), "#/components/schemas/StartRequest") {
		t.Errorf("start_conversation body %v", ref)
	}
}

// TestOpenAPIRoutesServed: the API's handler serves the document and its
// page without authentication.
func TestOpenAPIRoutesServed(t *testing.T) {
	e := newEnv(t, false)
	for _, c := range []struct{ path, ctype, want string }{
		{"/openapi.json", "application/json", `"openapi": "3.1.0"`},
		{"/docs", "text/html; charset=utf-8", "/api/v1/app-conversations"},
	} {
		res, err := http.Get(e.srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != c.ctype || !strings.Contains(string(b), c.want) {
			t.Errorf("GET %s: %d %s %.200s", c.path, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	}
}
