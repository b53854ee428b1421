package acs_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

func TestErrorCodeAndMessage(t *testing.T) {
	notFound := acs.Errorf(acs.ENOTFOUND, "Conversation not found: %s", "c1")
	for _, tc := range []struct {
		name     string
		err      error
		wantCode acs.Code
		wantMsg  string
	}{
		{"nil", nil, "", ""},
		{"domain error", notFound, acs.ENOTFOUND, "Conversation not found: c1"},
		{"context around a domain error keeps its message", fmt.Errorf("load conversation: %w", notFound),
			acs.ENOTFOUND, "Conversation not found: c1"},
		{"two layers of context", fmt.Errorf("api: %w", fmt.Errorf("store: %w", notFound)),
			acs.ENOTFOUND, "Conversation not found: c1"},
		{"bare sentinel", acs.ErrConflict, acs.ECONFLICT, "conflict"},
		{"sentinel wrapped by an adapter answers the adapter's wording",
			fmt.Errorf("conversation %s: %w", "c1", acs.ErrNotFound), acs.ENOTFOUND, "conversation c1"},
		{"sentinel in the middle of the wording",
			fmt.Errorf("sqsqueue: delete: %w: %w", acs.ErrNotFound, errors.New("ReceiptHandleIsInvalid")),
			acs.ENOTFOUND, "sqsqueue: delete: not found: ReceiptHandleIsInvalid"},
		{"unavailable never shows the adapter's wording",
			fmt.Errorf("dynamodb PutItem: %w: %w", errors.New("ThrottlingException"), acs.ErrUnavailable),
			acs.EUNAVAILABLE, "Service temporarily unavailable; retry shortly"},
		{"storage full never shows the path",
			fmt.Errorf("store %s: %w: %w", "/data/acs.db", syscall.ENOSPC, acs.ErrStorageFull),
			acs.ESTORAGEFULL, "Insufficient storage: the service's disk is full, so nothing was changed; retry later"},
		{"low-level error is internal", errors.New("bolt: database not open"), acs.EINTERNAL, "Internal Server Error"},
		{"context.Canceled is internal", fmt.Errorf("list: %w", context.Canceled), acs.EINTERNAL, "Internal Server Error"},
		{"error without a code is internal", &acs.Error{Message: "oops"}, acs.EINTERNAL, "Internal Server Error"},
		{"field error", &acs.Error{Code: acs.EINVALID, Message: "bad", Field: []any{"title"}}, acs.EINVALID, "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := acs.ErrorCode(tc.err); got != tc.wantCode {
				t.Errorf("ErrorCode = %q, want %q", got, tc.wantCode)
			}
			if got := acs.ErrorMessage(tc.err); got != tc.wantMsg {
				t.Errorf("ErrorMessage = %q, want %q", got, tc.wantMsg)
			}
			e := acs.AsError(tc.err)
			if tc.err == nil {
				if e != nil {
					t.Errorf("AsError(nil) = %v, want nil", e)
				}
				return
			}
			if e.Code != tc.wantCode || e.Message != tc.wantMsg {
				t.Errorf("AsError = {%q, %q}, want {%q, %q}", e.Code, e.Message, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestAsErrorDoesNotChangeTheOriginal(t *testing.T) {
	e := acs.AsError(fmt.Errorf("x: %w", acs.ErrGone))
	e.Message = "changed"
	if got := acs.ErrorMessage(acs.ErrGone); got != "gone" {
		t.Fatalf("the sentinel's message became %q", got)
	}
}

func TestErrorsIsMatchesSentinelsByCode(t *testing.T) {
	sentinels := map[acs.Code]error{
		acs.ENOTFOUND: acs.ErrNotFound, acs.ECONFLICT: acs.ErrConflict, acs.EINVALID: acs.ErrInvalid,
		acs.EUNAUTHORIZED: acs.ErrUnauthorized, acs.EFORBIDDEN: acs.ErrForbidden, acs.EUNAVAILABLE: acs.ErrUnavailable,
		acs.EGONE: acs.ErrGone, acs.ECAPACITY: acs.ErrCapacity, acs.ESANDBOXFAILED: acs.ErrSandboxFailed,
		acs.ESTORAGEFULL: acs.ErrStorageFull,
	}
	for code := range sentinels {
		err := fmt.Errorf("context: %w", acs.Errorf(code, "message for %s", code))
		for target, sentinel := range sentinels {
			want := target == code || (code == acs.ESTORAGEFULL && target == acs.EUNAVAILABLE)
			if got := errors.Is(err, sentinel); got != want {
				t.Errorf("errors.Is(%s error, Err %s) = %v, want %v", code, target, got, want)
			}
		}
	}
	// A domain error other than a sentinel matches only itself.
	a, b := acs.Errorf(acs.ENOTFOUND, "a"), acs.Errorf(acs.ENOTFOUND, "b")
	if errors.Is(a, b) || !errors.Is(fmt.Errorf("x: %w", a), a) {
		t.Error("non-sentinel domain errors must match only themselves")
	}
	// Low-level errors match no sentinel.
	for _, s := range sentinels {
		if errors.Is(errors.New("not found"), s) {
			t.Errorf("a plain error matched %v", s)
		}
	}
}

// Error strings read as they did when the sentinels were errors.New: logs
// and wrapped messages keep their wording.
func TestErrorString(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{acs.ErrNotFound, "not found"},
		{acs.ErrConflict, "conflict"},
		{acs.ErrInvalid, "invalid"},
		{acs.ErrUnauthorized, "unauthorized"},
		{acs.ErrForbidden, "forbidden"},
		{acs.ErrUnavailable, "temporarily unavailable"},
		{acs.ErrGone, "gone"},
		{acs.ErrCapacity, "capacity exceeded"},
		{acs.ErrSandboxFailed, "sandbox failed"},
		{acs.ErrStorageFull, "storage full: temporarily unavailable"},
		{acs.Errorf(acs.ENOTFOUND, "Sandbox not found: %s", "sb1"), "Sandbox not found: sb1: not found"},
		{fmt.Errorf("load: %w", acs.Errorf(acs.EGONE, "archived")), "load: archived: gone"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestCodesAreDistinct(t *testing.T) {
	seen := map[acs.Code]bool{}
	for _, c := range acs.Codes() {
		if c == "" || seen[c] {
			t.Errorf("code %q is empty or listed twice", c)
		}
		seen[c] = true
		if acs.DefaultMessage(c) == "" {
			t.Errorf("code %q has no default message", c)
		}
	}
}

func TestDetail(t *testing.T) {
	full := fmt.Errorf("write /srv/acs/sandboxes/sb-1/sandbox.json: %w: %w", syscall.ENOSPC, acs.ErrStorageFull)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{full, acs.DefaultMessage(acs.ESTORAGEFULL)},
		{fmt.Errorf("start sandbox sb-1: %w", full), acs.DefaultMessage(acs.ESTORAGEFULL)},
		{errors.New("agent server exited: status 3"), "agent server exited: status 3"},
		{fmt.Errorf("sandbox sb-1: %w", acs.ErrNotFound), "sandbox sb-1: not found"},
	} {
		if got := acs.Detail(tc.err); got != tc.want {
			t.Errorf("Detail(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
