// Package openapitest checks OpenAPI documents in tests with a maintained
// OpenAPI 3.1 library (github.com/pb33f/libopenapi and its validator): the
// document must build, validate against the OpenAPI 3.1 specification's
// schema, and document the operations a server registers.
package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// Doc is a document that validated.
type Doc struct {
	v   validator.Validator
	raw map[string]any
}

// Validate parses doc, builds its model and validates it against the
// OpenAPI 3.1 specification; it fails t on any problem.
func Validate(t testing.TB, doc []byte) *Doc {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal(doc, &raw); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	if raw["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", raw["openapi"])
	}
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatalf("libopenapi: %v", err)
	}
	if _, err := d.BuildV3Model(); err != nil {
		t.Fatalf("libopenapi: build the model: %v", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("libopenapi-validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for i, e := range verrs {
			if i == 20 {
				t.Errorf("... and %d more", len(verrs)-20)
				break
			}
			t.Errorf("invalid document: %s: %s (%s)", e.Message, e.Reason, schemaErrs(e.SchemaValidationErrors))
		}
		t.FailNow()
	}
	return &Doc{v: v, raw: raw}
}

func schemaErrs[E any](es []E) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("%+v", e))
	}
	return strings.Join(parts, "; ")
}

// Operations lists "METHOD /path" for every operation of the document.
func (d *Doc) Operations() map[string]bool {
	out := map[string]bool{}
	paths, _ := d.raw["paths"].(map[string]any)
	for p, item := range paths {
		for m := range item.(map[string]any) {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				out[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	return out
}

// Raw is the decoded document.
func (d *Doc) Raw() map[string]any { return d.raw }

// CheckResponse validates a real response (its body already read into
// body) against the document's schema for its request's operation and
// status.
func (d *Doc) CheckResponse(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	cp := *resp
	cp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := d.v.ValidateHttpResponse(req, &cp); !ok {
		for _, e := range errs {
			t.Errorf("%s %s -> %d %s: %s: %s (%s)", req.Method, req.URL.Path, resp.StatusCode, body, e.Message, e.Reason, schemaErrs(e.SchemaValidationErrors))
		}
	}
}
