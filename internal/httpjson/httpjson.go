// Package httpjson reads and writes JSON over HTTP the way the OpenHands
// servers (FastAPI) do, for both halves of ACS: the control plane's V1 API
// and the agent server answer with the same bodies ({"detail": msg}, 422
// {"detail": [{"loc", "msg", "type"}]}), decode request bodies strictly and
// parse query parameters into typed values with the same 422 errors.
package httpjson

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// MaxBodyBytes bounds request bodies read by DecodeBody.
const MaxBodyBytes = 32 << 20

// WriteJSON writes v as canonical JSON with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := strictjson.Marshal(v)
	if err != nil {
		slog.Error("encode response", "error", err)
		WriteDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	WriteRaw(w, status, b)
}

// WriteRaw writes already encoded JSON.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteDetail writes {"detail": msg}.
func WriteDetail(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, struct {
		Detail string `json:"detail"`
	}{msg})
}

// StorageFullRetryAfter is the Retry-After (seconds) of a 507: space comes
// back when someone frees it, not in a moment.
const StorageFullRetryAfter = "60"

// WriteInsufficientStorage answers 507 Insufficient Storage with
// Retry-After and {"detail": msg}: a write found the disk (or quota) full
// and stored nothing.
func WriteInsufficientStorage(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", StorageFullRetryAfter)
	WriteDetail(w, http.StatusInsufficientStorage, msg)
}

// WriteValidation writes a 422 HTTPValidationError body.
func WriteValidation(w http.ResponseWriter, errs strictjson.Errors) {
	WriteJSON(w, http.StatusUnprocessableEntity, events.HTTPValidationError{Detail: errs})
}

// DecodeBody reads the request body and decodes it strictly into v. On
// failure it writes the 422 response itself and returns false. An empty body
// decodes as {} when allowEmpty is set.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		WriteBodyError(w, err)
		return false
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if !allowEmpty {
			WriteValidation(w, strictjson.Errors{{Loc: []any{"body"}, Msg: "Field required", Type: "missing"}})
			return false
		}
		body = []byte("{}")
	}
	if err := strictjson.Unmarshal(body, v, "body"); err != nil {
		var es strictjson.Errors
		if errors.As(err, &es) {
			WriteValidation(w, es)
			return false
		}
		WriteDetail(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// WriteBodyError answers a failure to read a request body: 413 for a body
// over its http.MaxBytesReader limit, 408 for one that arrived too slowly
// (the server's read deadline passed: os.ErrDeadlineExceeded), else 400.
func WriteBodyError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		WriteDetail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		WriteDetail(w, http.StatusRequestTimeout, "The request body arrived too slowly")
	default:
		WriteDetail(w, http.StatusBadRequest, "Could not read the request body")
	}
}

// Query parses query parameters into typed values, collecting 422 errors
// located at ["query", name]. Repeated scalar parameters take the last value.
type Query struct {
	v    url.Values
	Errs strictjson.Errors
}

// NewQuery wraps the request's query parameters.
func NewQuery(r *http.Request) *Query { return &Query{v: r.URL.Query()} }

func (q *Query) add(name, typ, msg string) {
	q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", name}, Msg: msg, Type: typ})
}

func (q *Query) last(name string) (string, bool) {
	vs, ok := q.v[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// Has reports whether the parameter is present.
func (q *Query) Has(name string) bool { _, ok := q.v[name]; return ok }

// Require records the FastAPI 422 of a required parameter that is absent
// ({"loc": ["query", name], "msg": "Field required", "type": "missing"})
// and reports whether it is present.
func (q *Query) Require(name string) bool {
	if q.Has(name) {
		return true
	}
	q.add(name, "missing", "Field required")
	return false
}

// String returns an optional string parameter (nil when absent).
func (q *Query) String(name string) *string {
	s, ok := q.last(name)
	if !ok {
		return nil
	}
	return &s
}

// Strings returns every value of a repeated parameter; a value holding commas
// (as the TypeScript client sends arrays) is split.
func (q *Query) Strings(name string) []string {
	var out []string
	for _, v := range q.v[name] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Int returns an integer parameter within [lo, hi], or def when absent.
func (q *Query) Int(name string, def, lo, hi int) int {
	s, ok := q.last(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		q.add(name, "int_parsing", "Input should be a valid integer, unable to parse string as an integer")
		return def
	}
	if n < lo {
		if lo == 1 {
			q.add(name, "greater_than", "Input should be greater than 0")
		} else {
			q.add(name, "greater_than_equal", fmt.Sprintf("Input should be greater than or equal to %d", lo))
		}
		return def
	}
	if n > hi {
		q.add(name, "less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", hi))
		return def
	}
	return n
}

// Bool returns a boolean parameter (true/false/1/0/yes/no/on/off), or def.
func (q *Query) Bool(name string, def bool) bool {
	s, ok := q.last(name)
	if !ok {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on", "t", "y":
		return true
	case "false", "0", "no", "off", "f", "n":
		return false
	}
	q.add(name, "bool_parsing", "Input should be a valid boolean, unable to interpret input")
	return def
}

// Enum returns a parameter restricted to values, or def when absent.
func (q *Query) Enum(name, def string, values []string) string {
	s, ok := q.last(name)
	if !ok {
		return def
	}
	for _, v := range values {
		if s == v {
			return s
		}
	}
	q.add(name, "enum", strictjson.EnumMessage(values))
	return def
}

// Time returns an optional RFC 3339 date-time parameter (a value without a
// zone is UTC).
func (q *Query) Time(name string) *time.Time {
	s, ok := q.last(name)
	if !ok {
		return nil
	}
	t, err := events.ParseTime(s)
	if err != nil {
		q.add(name, "datetime_parsing", err.Error())
		return nil
	}
	return &t
}

// EventKind returns the kind filter: a short kind name or the reference's
// fully qualified class name, resolved to the short name.
func (q *Query) EventKind(name string) string {
	s, ok := q.last(name)
	if !ok || s == "" {
		return ""
	}
	k, found := events.ResolveKind(s)
	if !found {
		q.add(name, "enum", "Input should be an event kind: "+strings.Join(events.Kinds(), ", "))
		return ""
	}
	return k
}

// OK writes the 422 response when there were errors and reports whether
// parsing succeeded.
func (q *Query) OK(w http.ResponseWriter) bool {
	if len(q.Errs) == 0 {
		return true
	}
	WriteValidation(w, q.Errs)
	return false
}

// WriteEventPage writes an EventPage from canonical event JSON.
func WriteEventPage(w http.ResponseWriter, items [][]byte, next string) {
	size := 40
	for _, it := range items {
		size += len(it) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"items":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"next_page_id":`...)
	if next == "" {
		b = append(b, "null"...)
	} else {
		b = strictjson.AppendString(b, next)
	}
	b = append(b, '}')
	WriteRaw(w, 200, b)
}
