package httpjson_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/httpjson"
)

// failingBody fails every read with err.
type failingBody struct{ err error }

func (b failingBody) Read([]byte) (int, error) { return 0, b.err }
func (b failingBody) Close() error             { return nil }

// endless reads spaces for ever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestDecodeBodyReadFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   io.ReadCloser
		code   int
		detail string
	}{
		{"too large", io.NopCloser(endless{}),
			http.StatusRequestEntityTooLarge, fmt.Sprintf("larger than %d bytes", httpjson.MaxBodyBytes)},
		// What the server's minimum-rate rule makes a read return
		// (internal/httpserve: an error wrapping the read deadline's).
		{"too slow", failingBody{fmt.Errorf("the request body arrived too slowly: %w", os.ErrDeadlineExceeded)},
			http.StatusRequestTimeout, "arrived too slowly"},
		{"broken", failingBody{errors.New("unexpected EOF")}, http.StatusBadRequest, "Could not read the request body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", nil)
			r.Body = tc.body
			w := httptest.NewRecorder()
			var v map[string]any
			if httpjson.DecodeBody(w, r, &v, false) {
				t.Fatal("DecodeBody succeeded")
			}
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.detail) || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("HTTP %d %s %s, want %d with %q", w.Code, w.Header().Get("Content-Type"), w.Body, tc.code, tc.detail)
			}
		})
	}
}
