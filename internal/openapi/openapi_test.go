package openapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/internal/openapi/openapitest"
)

type color string

func (color) EnumValues() []string { return []string{"red", "blue"} }

type inner struct {
	N int `json:"n" acs:"ge=1"`
}

type thing struct {
	ID      string           `json:"id" acs:"required,minlen=1"`
	Count   int              `json:"count" acs:"default=3"`
	Note    *string          `json:"note"`
	Leaf    *string          `json:"leaf" acs:"emitnull"`
	Tags    []string         `json:"tags" acs:"nullable"`
	Color   color            `json:"color"`
	Inner   *inner           `json:"inner"`
	Raw     json.RawMessage  `json:"raw" acs:"object,nullable"`
	Content []events.Content `json:"content"`
}

type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}

func build(t *testing.T) []byte {
	t.Helper()
	doc, err := openapi.Build(openapi.Options{Info: openapi.Info{Title: "t", Version: "1"}}, []openapi.Operation{
		{Method: "POST", Pattern: "POST /things/{id}/{rest...}", ID: "put_thing", Request: thing{},
			Responses: append([]openapi.Response{{Status: 200, Body: thing{}}}, openapi.Errors(404, 422)...)},
		{Method: "GET", Pattern: "GET /things/{$}", ID: "list", Query: []openapi.Param{{Name: "ids", Type: []string{}}},
			Responses: []openapi.Response{{Status: 200, Body: []*thing(nil)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuild: the schema of a type says what strictjson does with it, in
// both directions, and the document validates as OpenAPI 3.1.
func TestBuild(t *testing.T) {
	b := build(t)
	d := openapitest.Validate(t, b)
	if ops := d.Operations(); !ops["POST /things/{id}/{rest}"] || !ops["GET /things/"] {
		t.Fatalf("operations %v", ops)
	}
	schemas := d.Raw()["components"].(map[string]any)["schemas"].(map[string]any)
	in, out := schemas["thing-Input"].(map[string]any), schemas["thing-Output"].(map[string]any)
	if in == nil || out == nil {
		t.Fatalf("want thing-Input and thing-Output, got %v", keys(schemas))
	}
	if got := fmt.Sprint(in["required"]); got != "[id]" {
		t.Errorf("request required %s", got)
	}
	// Always encoded: not pointers, raw or nullable lists; emitnull is.
	if got := fmt.Sprint(out["required"]); got != "[id count leaf color content]" {
		t.Errorf("response required %s", got)
	}
	props := in["properties"].(map[string]any)
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for field, want := range map[string]string{
		"id":    `{"minLength":1,"type":"string"}`,
		"count": `{"default":3,"type":"integer"}`,
		"note":  `{"type":["string","null"]}`,
		"tags":  `{"items":{"type":"string"},"type":["array","null"]}`,
		"color": `{"$ref":"#/components/schemas/color"}`,
		// inner's n is optional in requests, always written in responses.
		"inner": `{"anyOf":[{"$ref":"#/components/schemas/inner-Input"},{"type":"null"}]}`,
		"raw":   `{"type":["object","null"]}`,
	} {
		if got := js(props[field]); got != want {
			t.Errorf("%s: %s, want %s", field, got, want)
		}
	}
	if got := js(schemas["color"]); got != `{"enum":["red","blue"],"type":"string"}` {
		t.Errorf("color %s", got)
	}
	content, _ := schemas["Content-Input"].(map[string]any)
	if _, ok := content["discriminator"]; !ok || len(content["oneOf"].([]any)) < 2 {
		t.Errorf("Content union %s", js(content))
	}
	html, err := openapi.HTML(d.Raw())
	if err != nil || !strings.Contains(string(html), `id="schema-thing-Input"`) || !strings.Contains(string(html), "/things/{id}/{rest}") {
		t.Errorf("HTML: %v %.300s", err, html)
	}
}

// TestCheckResponse: a response that breaks its schema is reported.
func TestCheckResponse(t *testing.T) {
	d := openapitest.Validate(t, build(t))
	for _, c := range []struct {
		body string
		bad  bool
	}{
		{`{"id":"a","count":1,"leaf":null,"color":"red","content":[]}`, false},
		{`{"id":"a","count":1,"leaf":null,"color":"green","content":[]}`, true},
		{`{"count":1,"leaf":null,"color":"red","content":[]}`, true},
	} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		rec.WriteHeader(200)
		io.WriteString(rec, c.body)
		req, _ := http.NewRequest("POST", "/things/x/y", strings.NewReader("{}"))
		r := &recorder{TB: t}
		d.CheckResponse(r, req, rec.Result(), []byte(c.body))
		if (len(r.errs) > 0) != c.bad {
			t.Errorf("%s: errors %v, want bad=%v", c.body, r.errs, c.bad)
		}
	}
}

// TestBuildRefuses: an operation documented twice or without responses is
// an error, not a document.
func TestBuildRefuses(t *testing.T) {
	ok := []openapi.Response{{Status: 200, Body: ""}}
	for name, ops := range map[string][]openapi.Operation{
		"duplicate":    {{Method: "GET", Pattern: "/a", ID: "a", Responses: ok}, {Method: "GET", Pattern: "/a", ID: "b", Responses: ok}},
		"no responses": {{Method: "GET", Pattern: "/a", ID: "a"}},
		"same id":      {{Method: "GET", Pattern: "/a", ID: "a", Responses: ok}, {Method: "GET", Pattern: "/b", ID: "a", Responses: ok}},
	} {
		if _, err := openapi.Build(openapi.Options{}, ops); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
