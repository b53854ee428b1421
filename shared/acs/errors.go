package acs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Code classifies a domain error: what went wrong from the caller's point of
// view, whatever layer noticed it. The HTTP layer maps each code to one
// status (shared/v1wire); callers branch on codes (ErrorCode, or errors.Is
// with the code's sentinel), never on messages.
type Code string

// The codes. Their values appear in logs, never in response bodies.
const (
	// EINTERNAL: a failure the caller cannot act on (a bug, a broken
	// dependency). Its details are logged, never shown.
	EINTERNAL Code = "internal"
	// EINVALID: the request is malformed or refers to something unusable.
	EINVALID Code = "invalid"
	// EUNAUTHORIZED: no credentials, or credentials that are not valid.
	EUNAUTHORIZED Code = "unauthorized"
	// EFORBIDDEN: valid credentials that do not allow this.
	EFORBIDDEN Code = "forbidden"
	// ENOTFOUND: no such thing (or another user's, which is the same).
	ENOTFOUND Code = "not_found"
	// ECONFLICT: the thing is not in a state that allows this (yet).
	ECONFLICT Code = "conflict"
	// EGONE: the thing existed and is gone for good (a deleted sandbox).
	EGONE Code = "gone"
	// ECAPACITY: a limit is reached (running sandboxes, queued messages,
	// throughput); retry later or free something.
	ECAPACITY Code = "capacity"
	// EUNAVAILABLE: a dependency is temporarily unavailable; retry shortly.
	EUNAVAILABLE Code = "unavailable"
	// ESTORAGEFULL: a write found no space (the disk or the quota is full)
	// and stored nothing; it may work once space is freed. It is also
	// EUNAVAILABLE for errors.Is(err, ErrUnavailable).
	ESTORAGEFULL Code = "storage_full"
	// ESANDBOXFAILED: the sandbox is in ERROR; its conversations are
	// read-only.
	ESANDBOXFAILED Code = "sandbox_failed"
	// ETOOLARGE: the request is larger than allowed.
	ETOOLARGE Code = "too_large"
	// ETIMEOUT: the request took too long; retry.
	ETIMEOUT Code = "timeout"
	// EUPSTREAM: an agent server failed or answered an error.
	EUPSTREAM Code = "upstream"
	// EREFUSED: an agent server refused the request as invalid (the
	// caller's mistake, in the agent server's words rather than as
	// fields of the request).
	EREFUSED Code = "refused"
)

// Codes lists every code.
func Codes() []Code {
	return []Code{EINTERNAL, EINVALID, EUNAUTHORIZED, EFORBIDDEN, ENOTFOUND, ECONFLICT, EGONE, ECAPACITY,
		EUNAVAILABLE, ESTORAGEFULL, ESANDBOXFAILED, ETOOLARGE, ETIMEOUT, EUPSTREAM, EREFUSED}
}

// Error is a domain error: a code and a message meant for the user. Build
// one with Errorf (or a literal for the optional fields) wherever a message
// for the user is worded; wrapping it with context (fmt.Errorf("…: %w"))
// changes neither its code nor its message, which ErrorCode and
// ErrorMessage find anywhere in the chain.
type Error struct {
	Code Code
	// Message is what the user reads; empty means the code's default
	// message (DefaultMessage).
	Message string
	// Field locates an EINVALID error in the request body, as a path of
	// field names and indexes (["parent_conversation_id"]); nil means the
	// request as a whole.
	Field []any
	// Challenge is, for EUNAUTHORIZED, the authentication scheme the
	// caller should answer with ("Bearer" for a user's API key; empty when
	// the credential is not the caller's to choose, such as a sandbox's
	// session key).
	Challenge string
	// RetryAfter is when a retry may succeed, when the failure knows
	// better than its code's default (zero).
	RetryAfter time.Duration
}

// Errorf returns a domain error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error describes the error for logs: the message, then the code's short
// description (so "Conversation not found: c1: not found"), as errors
// wrapping the sentinels always read.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.text()
	}
	return e.Message + ": " + e.Code.text()
}

// Is makes errors.Is(err, ErrX) true for every error of ErrX's code (and
// errors.Is(err, ErrUnavailable) for ESTORAGEFULL too). Only the sentinels
// match by code; any other target matches only itself.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || sentinels[t.Code] != t {
		return false
	}
	return e.Code == t.Code || (e.Code == ESTORAGEFULL && t.Code == EUNAVAILABLE)
}

// The sentinels, one per code that callers test for with errors.Is. Each is
// an *Error without a message, so a sentinel wrapped by an adapter
// (fmt.Errorf("conversation %s: %w", id, ErrNotFound)) answers the code's
// default message, never the adapter's wording.
var (
	ErrNotFound     = sentinel(ENOTFOUND)
	ErrConflict     = sentinel(ECONFLICT)
	ErrInvalid      = sentinel(EINVALID)
	ErrUnauthorized = sentinel(EUNAUTHORIZED)
	ErrForbidden    = sentinel(EFORBIDDEN)
	ErrUnavailable  = sentinel(EUNAVAILABLE)
	ErrGone         = sentinel(EGONE)
	ErrCapacity     = sentinel(ECAPACITY)
	// ErrSandboxFailed: the sandbox is in ERROR (HTTP 503 with the reason).
	ErrSandboxFailed = sentinel(ESANDBOXFAILED)
	// ErrStorageFull: a write found no space (the disk or the quota is
	// full) and stored nothing; it may work once space is freed. It is
	// also ErrUnavailable for errors.Is (HTTP 507 with Retry-After).
	ErrStorageFull = sentinel(ESTORAGEFULL)
)

var sentinels = map[Code]*Error{}

func sentinel(c Code) *Error {
	e := &Error{Code: c}
	sentinels[c] = e
	return e
}

// text is the code's short description in Error (the sentinels' messages
// before codes existed, kept so error strings read as they did).
func (c Code) text() string {
	switch c {
	case ENOTFOUND:
		return "not found"
	case EUNAVAILABLE:
		return "temporarily unavailable"
	case ECAPACITY:
		return "capacity exceeded"
	case ESTORAGEFULL:
		return "storage full: temporarily unavailable"
	case ESANDBOXFAILED:
		return "sandbox failed"
	case ETOOLARGE:
		return "too large"
	case EREFUSED:
		return "refused by the agent server"
	case "":
		return "error"
	}
	return string(c)
}

// DefaultMessage is what the user reads for an error of code that has no
// message of its own (a bare or adapter-wrapped sentinel).
func DefaultMessage(c Code) string {
	switch c {
	case EINTERNAL:
		return "Internal Server Error"
	case EUNAVAILABLE:
		return "Service temporarily unavailable; retry shortly"
	case ESTORAGEFULL:
		return "Insufficient storage: the service's disk is full, so nothing was changed; retry later"
	}
	return c.text()
}

// ErrorCode is the code of the first domain error in err's chain:
// EINTERNAL for an error that holds none, "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage is the user-facing message of the first domain error in
// err's chain, whatever context wraps it (see AsError for an error that
// carries no message of its own); "Internal Server Error" for an error that
// holds no domain error, whatever it says; "" for nil.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	return AsError(err).Message
}

// Detail is the text a record's detail shows for err: err's own text,
// except that a full disk shows ErrStorageFull's message, since the chain
// of such an error names host paths.
func Detail(err error) string {
	if errors.Is(err, ErrStorageFull) {
		return DefaultMessage(ESTORAGEFULL)
	}
	return err.Error()
}

// AsError is the first domain error in err's chain, with the message a
// response may show; an EINTERNAL error ("Internal Server Error") for an
// error that holds none; nil for nil.
//
// A domain error built with a message (Errorf) answers that message
// whatever wraps it. A bare sentinel answers its code's default message;
// a sentinel wrapped by an adapter's or a caller's own wording
// (fmt.Errorf("conversation %s: %w", id, ErrNotFound)) answers that
// wording, the text before the sentinel, as it always has, except for
// EINTERNAL, EUNAVAILABLE and ESTORAGEFULL, which always answer their
// default message (their wording is an SDK's or a disk's, not the user's).
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) || e.Code == "" {
		return &Error{Code: EINTERNAL, Message: DefaultMessage(EINTERNAL)}
	}
	out := *e
	if out.Message == "" {
		out.Message = DefaultMessage(out.Code)
		if out.Code != EINTERNAL && out.Code != EUNAVAILABLE && out.Code != ESTORAGEFULL {
			out.Message = strings.TrimSuffix(err.Error(), ": "+e.Error())
		}
	}
	return &out
}
