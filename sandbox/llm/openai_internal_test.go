package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAPIErrorBody: an error answer's body gives the fields of its "error"
// object, the JSON of that value as sent, and the body itself, read up to
// maxErrorBodyBytes.
func TestAPIErrorBody(t *testing.T) {
	huge := `{"error":{"message":"` + strings.Repeat("b", maxErrorBodyBytes) + `"}}`
	cases := []struct {
		name     string
		body     string
		want     apiError // StatusCode, Header and Body are checked apart
		bodySize int
	}{
		{"OpenAI shape", `{"error":{"message":"bad","type":"invalid_request_error","code":"c1","param":"messages"}}`,
			apiError{Message: "bad", Type: "invalid_request_error", Code: "c1", Param: "messages",
				Raw: `{"message":"bad","type":"invalid_request_error","code":"c1","param":"messages"}`}, -1},
		{"numbers and null", `{"error":{"message":null,"type":"t","code":429,"param":null}}`,
			apiError{Type: "t", Code: "429", Raw: `{"message":null,"type":"t","code":429,"param":null}`}, -1},
		{"text", `{"error":"model not found"}`, apiError{Message: "model not found", Raw: `"model not found"`}, -1},
		{"a list", `{"error":[1,2]}`, apiError{Raw: `[1,2]`}, -1},
		{"first value only", `{"error":{"message":"first"}} {"error":{"message":"second"}}`,
			apiError{Message: "first", Raw: `{"message":"first"}`}, -1},
		{"no error field", `{"detail":"Not Found"}`, apiError{}, -1},
		{"not JSON", `<html>oops</html>`, apiError{}, -1},
		{"read up to the bound", huge, apiError{}, maxErrorBodyBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTeapot)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			base := srv.URL
			resp, err := newChatAPI(Config{BaseURL: &base}).post(context.Background(), []byte(`{}`))
			var e *apiError
			if resp != nil || !errors.As(err, &e) {
				t.Fatalf("got %v, %v", resp, err)
			}
			if e.StatusCode != http.StatusTeapot || e.Header.Get("Retry-After") != "3" {
				t.Errorf("status %d, Retry-After %q", e.StatusCode, e.Header.Get("Retry-After"))
			}
			if tc.bodySize < 0 {
				tc.bodySize = len(tc.body)
			}
			if len(e.Body) != tc.bodySize || !strings.HasPrefix(tc.body, string(e.Body)) {
				t.Errorf("body of %d bytes, want the first %d", len(e.Body), tc.bodySize)
			}
			got := apiError{Message: e.Message, Type: e.Type, Code: e.Code, Param: e.Param, Raw: e.Raw}
			if got.Message != tc.want.Message || got.Type != tc.want.Type || got.Code != tc.want.Code ||
				got.Param != tc.want.Param || got.Raw != tc.want.Raw {
				t.Errorf("fields %+v, want %+v", got, tc.want)
			}
		})
	}
}
