package v1wire

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
)

// ErrorStatus is how errors of one code are answered over HTTP.
type ErrorStatus struct {
	Code   acs.Code
	Status int
	// RetryAfter is the Retry-After header's value when the error does not
	// carry its own (zero: no header).
	RetryAfter time.Duration
	// Prefix comes before the message in the body's detail.
	Prefix string
}

// ErrorStatuses is the one table from error code to HTTP answer, in the
// order of acs.Codes. EINVALID is answered with the 422 validation shape
// ({"detail": [{"loc", "msg", "type"}]}), every other code with
// {"detail": "<prefix><message>"}; EUNAUTHORIZED adds WWW-Authenticate when
// the error names a Challenge. Two codes share 422: EINVALID (the
// validation shape) and EREFUSED (a detail string).
var ErrorStatuses = []ErrorStatus{
	{Code: acs.EINTERNAL, Status: http.StatusInternalServerError},
	{Code: acs.EINVALID, Status: http.StatusUnprocessableEntity},
	{Code: acs.EUNAUTHORIZED, Status: http.StatusUnauthorized, Prefix: "Unauthorized: "},
	{Code: acs.EFORBIDDEN, Status: http.StatusForbidden},
	{Code: acs.ENOTFOUND, Status: http.StatusNotFound},
	{Code: acs.ECONFLICT, Status: http.StatusConflict},
	{Code: acs.EGONE, Status: http.StatusGone},
	{Code: acs.ECAPACITY, Status: http.StatusTooManyRequests, RetryAfter: 30 * time.Second},
	{Code: acs.EUNAVAILABLE, Status: http.StatusServiceUnavailable, RetryAfter: 2 * time.Second},
	// Space comes back when someone frees it, not in a moment.
	{Code: acs.ESTORAGEFULL, Status: http.StatusInsufficientStorage, RetryAfter: 60 * time.Second},
	{Code: acs.ESANDBOXFAILED, Status: http.StatusServiceUnavailable},
	{Code: acs.ETOOLARGE, Status: http.StatusRequestEntityTooLarge},
	{Code: acs.ETIMEOUT, Status: http.StatusGatewayTimeout},
	{Code: acs.EUPSTREAM, Status: http.StatusBadGateway},
	// Answered as {"detail": "<prefix><message>"}, not in the validation
	// shape: the agent server's words name no field of the request.
	{Code: acs.EREFUSED, Status: http.StatusUnprocessableEntity, Prefix: "The agent server refused the request: "},
}

// StatusOf is the table's row for code (EINTERNAL's for a code it lacks).
func StatusOf(code acs.Code) ErrorStatus {
	for _, s := range ErrorStatuses {
		if s.Code == code {
			return s
		}
	}
	return ErrorStatuses[0]
}

// DetailBody is the body of every error answer but a 422.
type DetailBody struct {
	Detail string `json:"detail"`
}

// ErrorResponse is the HTTP answer to an error: the domain error in err's
// chain (acs.AsError: a low-level error is EINTERNAL's "Internal Server
// Error", whatever it says) through the table.
func ErrorResponse(err error) (status int, header http.Header, body []byte) {
	e := acs.AsError(err)
	if e == nil {
		e = &acs.Error{Code: acs.EINTERNAL, Message: acs.DefaultMessage(acs.EINTERNAL)}
	}
	e.Message = WithRoutes(e.Message)
	row := StatusOf(e.Code)
	header = http.Header{}
	header.Set("Content-Type", "application/json")
	if ra := e.RetryAfter; ra > 0 || row.RetryAfter > 0 {
		if ra <= 0 {
			ra = row.RetryAfter
		}
		header.Set("Retry-After", strconv.Itoa(int((ra+time.Second-1)/time.Second)))
	}
	if e.Code == acs.EUNAUTHORIZED && e.Challenge != "" {
		header.Set("WWW-Authenticate", e.Challenge)
	}
	var v any = DetailBody{Detail: row.Prefix + e.Message}
	if e.Code == acs.EINVALID {
		loc := []any{}
		if e.Field != nil {
			loc = append([]any{"body"}, e.Field...)
		}
		v = events.HTTPValidationError{Detail: strictjson.Errors{{Loc: loc, Msg: e.Message, Type: "value_error"}}}
	}
	body, merr := strictjson.Marshal(v)
	if merr != nil { // cannot happen for these types
		slog.Error("v1wire: encode error body", "error", merr)
		return http.StatusInternalServerError, http.Header{"Content-Type": {"application/json"}},
			[]byte(`{"detail":"Internal Server Error"}`)
	}
	return row.Status, header, body
}

// WriteError answers err (ErrorResponse).
func WriteError(w http.ResponseWriter, err error) {
	status, header, body := ErrorResponse(err)
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// DecodeError turns an error answer of the V1 API (or of its API Gateway)
// back into the domain error: the code from the status (a 503 with
// Retry-After is EUNAVAILABLE, without ESANDBOXFAILED; a 422 is EINVALID,
// or EREFUSED when its detail is a string; a 400 is EINVALID, a 408
// ETIMEOUT; a status outside the table EINTERNAL), the message from the
// detail (without the code's prefix; for a 422, its first problem's msg, or
// every msg joined by "; " when there are several), the field from a 422's
// loc under "body", the challenge from WWW-Authenticate and the delay from
// Retry-After. It returns nil for a status below 400.
func DecodeError(status int, header http.Header, body []byte) *acs.Error {
	if status < 400 {
		return nil
	}
	e := &acs.Error{Code: codeOf(status, header)}
	if header != nil {
		if s, err := strconv.Atoi(strings.TrimSpace(header.Get("Retry-After"))); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		if e.Code == acs.EUNAUTHORIZED {
			e.Challenge = header.Get("WWW-Authenticate")
		}
	}
	var raw struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &raw) != nil || len(raw.Detail) == 0 {
		e.Message = strings.TrimSpace(string(body))
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		return e
	}
	var detail string
	if json.Unmarshal(raw.Detail, &detail) == nil {
		if status == http.StatusUnprocessableEntity { // in words, not fields
			e.Code = acs.EREFUSED
		}
		e.Message = strings.TrimPrefix(detail, StatusOf(e.Code).Prefix)
		return e
	}
	var problems []strictjson.Error
	if json.Unmarshal(raw.Detail, &problems) == nil && len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Msg
		}
		e.Message = strings.Join(msgs, "; ")
		if loc := problems[0].Loc; len(loc) > 1 && loc[0] == "body" {
			e.Field = make([]any, len(loc)-1)
			for i, p := range loc[1:] {
				if f, ok := p.(float64); ok && f == float64(int(f)) {
					p = int(f) // an index, as the server had it
				}
				e.Field[i] = p
			}
		}
		return e
	}
	e.Message = string(raw.Detail)
	return e
}

func codeOf(status int, header http.Header) acs.Code {
	switch status {
	case http.StatusBadRequest:
		return acs.EINVALID
	case http.StatusRequestTimeout:
		return acs.ETIMEOUT
	case http.StatusServiceUnavailable:
		if header.Get("Retry-After") == "" {
			return acs.ESANDBOXFAILED
		}
		return acs.EUNAVAILABLE
	}
	for _, s := range ErrorStatuses {
		if s.Status == status {
			return s.Code
		}
	}
	return acs.EINTERNAL
}
