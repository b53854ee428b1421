package main_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/internal/openapi/openapitest"
	"github.com/acs-project/acs/shared/api"
)

// TestServeOpenAPI: a running acs serve answers GET /openapi.json (no key)
// with a valid OpenAPI 3.1 document of every route of the table, and GET
// /docs with its HTML page; real answers match the documented schemas.
func TestServeOpenAPI(t *testing.T) {
	s := startServe(t, t.TempDir(), noLLM)
	get := func(path, key string) (*http.Request, *http.Response, []byte) {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return req, res, b
	}
	_, res, body := get("/openapi.json", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("/openapi.json: %d %s %.300s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	doc := openapitest.Validate(t, body)
	ops := doc.Operations()
	for _, rt := range api.Routes {
		if p, _ := openapi.Path(rt.Path); !ops[rt.Method+" "+p] {
			t.Errorf("route %s (%s %s) is not in the served document", rt.Name, rt.Method, p)
		}
	}
	_, res, page := get("/docs", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page), "/api/v1/app-conversations/{conversation_id}/send-message") {
		t.Fatalf("/docs: %d %s %.300s", res.StatusCode, res.Header.Get("Content-Type"), page)
	}
	for _, c := range []struct{ path, key string }{
		{"/api/v1/users/me", apiKey},
		{"/api/v1/users/me", ""},
		{"/api/v1/settings", apiKey},
		{"/api/v1/sandbox-specs/search", apiKey},
		{"/api/v1/app-conversations/search?limit=0", apiKey},
		{"/api/v1/app-conversations/search", apiKey},
	} {
		req, res, b := get(c.path, c.key)
		req.URL.Scheme, req.URL.Host = "", ""
		doc.CheckResponse(t, req, res, b)
	}
}
