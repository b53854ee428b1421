// Package client is a typed Go client of ACS: the V1 API of the control
// plane (Client, under /api/v1) and the API of the agent server that runs in
// each sandbox (Agent). Requests and responses are the types the servers
// use (shared/v1wire, sandbox/agentwire, events), never copies; every method
// takes a context first.
//
// An error answer becomes an *Error whose cause is the domain error
// (*acs.Error, decoded by v1wire.DecodeError), so
// errors.Is(err, acs.ErrNotFound) and acs.ErrorCode(err) work on a client
// error as on a server one. Requests that are safe to repeat are retried on
// 429 and 503, after the answer's Retry-After (see Retry). An Agent from
// NewServiceAgent is the exception: it sends each request once and returns
// an error answer as an *HTTPError.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// Retry bounds the retries of requests that are safe to repeat (reads,
// deletes, puts, pause and resume) answered 429 or 503.
type Retry struct {
	// Attempts is how many times a request is sent at most (1: never
	// retried).
	Attempts int
	// MaxWait is the longest Retry-After honoured: an answer that asks
	// for a longer wait is returned at once, as its error.
	MaxWait time.Duration
	// Wait is the delay when the answer names none.
	Wait time.Duration
}

// DefaultRetry is the retry policy of New's clients.
var DefaultRetry = Retry{Attempts: 4, MaxWait: 30 * time.Second, Wait: time.Second}

// Error is an error answer: the request, its status and the domain error
// the answer carries (Unwrap), whose Code, Message, Field and RetryAfter
// say what went wrong.
type Error struct {
	Method string
	Path   string
	Status int
	Err    *acs.Error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Err.Message)
}

// Unwrap returns the domain error.
func (e *Error) Unwrap() error { return e.Err }

// StatusOf is the HTTP status of the error answer in err's chain (0 when
// err is not one: a transport failure, a cancelled context).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	return 0
}

// HTTPError is an error answer of an agent server as it was sent: its
// status and detail, without a domain error. Agents from NewServiceAgent
// return it, so that their caller decides what the answer means to its own
// callers.
type HTTPError struct {
	Status int
	Detail string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("agent server: HTTP %d: %s", e.Status, e.Detail)
}

// transport is what Client and Agent share: a base URL, how requests are
// authenticated, the HTTP client and the retry policy.
type transport struct {
	base  string
	auth  func(*http.Request)
	http  *http.Client
	retry Retry
	// raw makes an error answer an *HTTPError, and prefixes the other
	// errors with "agent server".
	raw bool
}

// request is one call.
type request struct {
	method string
	path   string
	query  url.Values
	body   any // encoded with strictjson (absent Optional fields omitted)
	// idempotent requests may be retried on 429 and 503.
	idempotent bool
	// header is sent with the request.
	header http.Header
	// timeout replaces the HTTP client's timeout, when that has one.
	timeout time.Duration
}

// send performs r and returns the successful answer (status < 400), whose
// body the caller must close; an error answer is an *Error.
func (t *transport) send(ctx context.Context, r request) (*http.Response, error) {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = encodeBody(r.body); err != nil {
			return nil, fmt.Errorf("%s %s: encode the body: %w", r.method, r.path, err)
		}
	}
	u := t.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	attempts := t.retry.Attempts
	if attempts < 1 || !r.idempotent {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(body))
		if err != nil {
			return nil, t.errorf("%s %s: %w", r.method, r.path, err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range r.header {
			req.Header[k] = v
		}
		if t.auth != nil {
			t.auth(req)
		}
		hc := t.http
		if r.timeout > 0 && hc.Timeout > 0 {
			c := *hc
			c.Timeout = r.timeout
			hc = &c
		}
		res, err := hc.Do(req)
		if err != nil {
			return nil, t.errorf("%s %s: %w", r.method, r.path, err)
		}
		if res.StatusCode < 400 {
			return res, nil
		}
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		e := &Error{Method: r.method, Path: r.path, Status: res.StatusCode,
			Err: v1wire.DecodeError(res.StatusCode, res.Header, raw)}
		wait, retry := t.retryAfter(res, e.Err)
		if !retry || attempt >= attempts {
			if t.raw {
				return nil, &HTTPError{Status: res.StatusCode, Detail: errorDetail(raw)}
			}
			return nil, e
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%s %s: %w (while waiting to retry after %v)", r.method, r.path, ctx.Err(), e)
		case <-timer.C:
		}
	}
}

// errorf is fmt.Errorf, prefixed with "agent server" for a raw transport.
func (t *transport) errorf(format string, args ...any) error {
	if t.raw {
		format = "agent server " + format
	}
	return fmt.Errorf(format, args...)
}

// errorDetail is the detail of an error answer: its JSON "detail" (a string
// as is, anything else as JSON), else the trimmed body; at most 1000 bytes.
func errorDetail(raw []byte) string {
	detail := strings.TrimSpace(string(raw))
	var d struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &d) == nil && len(d.Detail) > 0 {
		var s string
		if json.Unmarshal(d.Detail, &s) == nil {
			detail = s
		} else {
			detail = string(d.Detail)
		}
	}
	if len(detail) > 1000 {
		detail = detail[:1000]
	}
	return detail
}

// retryAfter says whether an error answer may be retried, and when.
func (t *transport) retryAfter(res *http.Response, e *acs.Error) (time.Duration, bool) {
	if res.StatusCode != http.StatusTooManyRequests && res.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	if res.Header.Get("Retry-After") == "" {
		if res.StatusCode == http.StatusServiceUnavailable {
			return 0, false // a failed sandbox: retrying cannot help
		}
		return t.retry.Wait, true
	}
	if e.RetryAfter > t.retry.MaxWait {
		return 0, false
	}
	return e.RetryAfter, true
}

// call performs r and decodes a JSON answer into out (when not nil).
func (t *transport) call(ctx context.Context, r request, out any) error {
	res, err := t.send(ctx, r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return t.errorf("%s %s: decode the answer: %w", r.method, r.path, err)
	}
	return nil
}

// bytes performs r and returns the answer's body.
func (t *transport) bytes(ctx context.Context, r request) ([]byte, error) {
	res, err := t.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, t.errorf("%s %s: read the answer: %w", r.method, r.path, err)
	}
	return b, nil
}

var optionalType = reflect.TypeFor[strictjson.Optional]()

// encodeBody encodes v as the servers decode it (strictjson), leaving out
// the strictjson.Optional fields that are not Set (a partial update sends
// only what it changes) and the empty strings that have a default.
func encodeBody(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := strictjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		return b, nil
	}
	var unset []string
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		unsetOptional := f.Type == optionalType && !rv.Field(i).Interface().(strictjson.Optional).Set
		// An empty string with a default: the server applies its
		// default (an enum's zero value is no valid value; a bool's
		// false is meant).
		zeroDefault := f.Type.Kind() == reflect.String && strings.Contains(f.Tag.Get("acs"), "default=") && rv.Field(i).IsZero()
		if unsetOptional || zeroDefault {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			unset = append(unset, name)
		}
	}
	if len(unset) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, name := range unset {
		delete(m, name)
	}
	return json.Marshal(m)
}

// Set is a present field of a partial update (UpdateRequest,
// SettingsRequest) with value v.
func Set(v any) strictjson.Optional {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("client.Set: %v", err))
	}
	return strictjson.Optional{Set: true, Raw: raw}
}

// Clear is an explicit null in a partial update: the field is cleared.
func Clear() strictjson.Optional {
	return strictjson.Optional{Set: true, Raw: json.RawMessage("null")}
}

func escape(s string) string { return url.PathEscape(s) }
