package v1wire_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestEveryCodeHasARow: each code has its own row, in acs.Codes order, and
// the statuses are the ones the API has always answered.
func TestEveryCodeHasARow(t *testing.T) {
	codes := acs.Codes()
	if len(v1wire.ErrorStatuses) != len(codes) {
		t.Fatalf("%d rows for %d codes", len(v1wire.ErrorStatuses), len(codes))
	}
	for i, c := range codes {
		if v1wire.ErrorStatuses[i].Code != c {
			t.Errorf("row %d is %q, want %q", i, v1wire.ErrorStatuses[i].Code, c)
		}
	}
	want := map[acs.Code]int{
		acs.EINTERNAL: 500, acs.EINVALID: 422, acs.EUNAUTHORIZED: 401, acs.EFORBIDDEN: 403, acs.ENOTFOUND: 404,
		acs.ECONFLICT: 409, acs.EGONE: 410, acs.ECAPACITY: 429, acs.EUNAVAILABLE: 503, acs.ESTORAGEFULL: 507,
		acs.ESANDBOXFAILED: 503, acs.ETOOLARGE: 413, acs.ETIMEOUT: 504, acs.EUPSTREAM: 502,
		acs.EREFUSED: 422,
	}
	for c, st := range want {
		if got := v1wire.StatusOf(c).Status; got != st {
			t.Errorf("StatusOf(%s) = %d, want %d", c, got, st)
		}
	}
	if got := v1wire.StatusOf("no-such-code").Status; got != 500 {
		t.Errorf("an unknown code answers %d, want 500", got)
	}
}

// TestDecodeErrorRoundTrip: what a client decodes from the server's answer
// is the domain error the server answered (code, message, field,
// challenge, retry delay), whatever context wrapped it on the server.
func TestDecodeErrorRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want acs.Error
	}{
		{"not found", fmt.Errorf("load: %w", acs.Errorf(acs.ENOTFOUND, "Conversation not found: c1")),
			acs.Error{Code: acs.ENOTFOUND, Message: "Conversation not found: c1"}},
		{"unauthorized with challenge", &acs.Error{Code: acs.EUNAUTHORIZED, Message: "invalid API key", Challenge: "Bearer"},
			acs.Error{Code: acs.EUNAUTHORIZED, Message: "invalid API key", Challenge: "Bearer"}},
		{"invalid at a field", &acs.Error{Code: acs.EINVALID, Message: "too long", Field: []any{"tags", 2}},
			acs.Error{Code: acs.EINVALID, Message: "too long", Field: []any{"tags", 2}}},
		{"invalid as a whole", acs.Errorf(acs.EINVALID, "start request: bad"),
			acs.Error{Code: acs.EINVALID, Message: "start request: bad"}},
		{"capacity with the table's delay", acs.Errorf(acs.ECAPACITY, "at the cap"),
			acs.Error{Code: acs.ECAPACITY, Message: "at the cap", RetryAfter: 30 * time.Second}},
		{"capacity with its own delay", &acs.Error{Code: acs.ECAPACITY, Message: "slow down", RetryAfter: 1500 * time.Millisecond},
			acs.Error{Code: acs.ECAPACITY, Message: "slow down", RetryAfter: 2 * time.Second}},
		{"unavailable", acs.ErrUnavailable,
			acs.Error{Code: acs.EUNAVAILABLE, Message: "Service temporarily unavailable; retry shortly", RetryAfter: 2 * time.Second}},
		{"sandbox failed (503 without Retry-After)", acs.Errorf(acs.ESANDBOXFAILED, "Sandbox is in an error state"),
			acs.Error{Code: acs.ESANDBOXFAILED, Message: "Sandbox is in an error state"}},
		{"storage full", acs.ErrStorageFull,
			acs.Error{Code: acs.ESTORAGEFULL, Message: acs.DefaultMessage(acs.ESTORAGEFULL), RetryAfter: time.Minute}},
		{"refused by the agent server (422 in words)", fmt.Errorf("send: %w", acs.Errorf(acs.EREFUSED, `[{"msg":"a <b> & c"}]`)),
			acs.Error{Code: acs.EREFUSED, Message: `[{"msg":"a <b> & c"}]`}},
		{"upstream", acs.Errorf(acs.EUPSTREAM, "Agent server error: 500: boom"),
			acs.Error{Code: acs.EUPSTREAM, Message: "Agent server error: 500: boom"}},
		{"too large", acs.Errorf(acs.ETOOLARGE, "app/big.bin: file exceeds 10 bytes"),
			acs.Error{Code: acs.ETOOLARGE, Message: "app/big.bin: file exceeds 10 bytes"}},
		{"internal hides the error", fmt.Errorf("bolt: %w", fmt.Errorf("disk I/O error")),
			acs.Error{Code: acs.EINTERNAL, Message: "Internal Server Error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			v1wire.WriteError(w, tc.err)
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			got := v1wire.DecodeError(w.Code, w.Header(), w.Body.Bytes())
			if got == nil || !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("decoded %+v from %d %s, want %+v", got, w.Code, w.Body, tc.want)
			}
		})
	}
}

func TestDecodeErrorOtherAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   *acs.Error
	}{
		{"success", 200, `{}`, nil},
		{"plain text", 502, "bad gateway\n", &acs.Error{Code: acs.EUPSTREAM, Message: "bad gateway"}},
		{"empty body", 500, "", &acs.Error{Code: acs.EINTERNAL, Message: "Internal Server Error"}},
		{"400 is invalid", 400, `{"detail":"bad json"}`, &acs.Error{Code: acs.EINVALID, Message: "bad json"}},
		{"several problems", 422, `{"detail":[{"loc":["body","a"],"msg":"m1","type":"t"},{"loc":["body","b"],"msg":"m2","type":"t"}]}`,
			&acs.Error{Code: acs.EINVALID, Message: "m1; m2", Field: []any{"a"}}},
		{"status outside the table", 418, `{"detail":"teapot"}`, &acs.Error{Code: acs.EINTERNAL, Message: "teapot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := v1wire.DecodeError(tc.status, http.Header{}, []byte(tc.body))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
