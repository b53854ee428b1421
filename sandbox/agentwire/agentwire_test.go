package agentwire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
)

func TestSecretSourceForms(t *testing.T) {
	cases := []struct {
		in, kind, value, url string
		errLoc               string
	}{
		{`"plain"`, "StaticSecret", "plain", "", ""},
		{`{"value":"v"}`, "StaticSecret", "v", "", ""},
		{`{"kind":"StaticSecret","value":"v","description":"d"}`, "StaticSecret", "v", "", ""},
		{`{"kind":"LookupSecret","url":"http://x/s","headers":{"A":"b"}}`, "LookupSecret", "", "http://x/s", ""},
		{`{"kind":"StaticSecret"}`, "", "", "", "s.value"},
		{`{"kind":"LookupSecret","value":"v","url":"u"}`, "", "", "", "s.value"},
		{`{"kind":"Vault","value":"v"}`, "", "", "", "s.kind"},
		{`{"value":"v","extra":1}`, "", "", "", "s.extra"},
		{`42`, "", "", "", "s"},
	}
	for _, tc := range cases {
		var m map[string]agentwire.SecretSource
		err := strictjson.Unmarshal([]byte(`{"s":`+tc.in+`}`), &m)
		if tc.errLoc != "" {
			var es strictjson.Errors
			if !errors.As(err, &es) || es[0].Path() != tc.errLoc {
				t.Errorf("%s: want error at %s, got %v", tc.in, tc.errLoc, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		s := m["s"]
		if s.Kind != tc.kind || s.Value != tc.value || s.URL != tc.url {
			t.Errorf("%s: got %+v", tc.in, s)
		}
	}
	red := agentwire.RedactSecrets(map[string]agentwire.SecretSource{"A": {Kind: "StaticSecret", Value: "v"},
		"B": {Kind: "LookupSecret", URL: "u", Headers: map[string]string{"X": "tok"}}})
	out := string(strictjson.MustMarshal(red))
	if strings.Contains(out, `"v"`) || strings.Contains(out, "tok") || !strings.Contains(out, "**********") {
		t.Fatalf("redaction: %s", out)
	}
}

func TestConfirmationPolicy(t *testing.T) {
	for _, tc := range []struct{ in, errLoc string }{
		{`{"kind":"NeverConfirm"}`, ""},
		{`{"kind":"AlwaysConfirm"}`, ""},
		{`{"kind":"ConfirmRisky"}`, ""},
		{`{"kind":"ConfirmRisky","threshold":"MEDIUM","confirm_unknown":false}`, ""},
		{`{"kind":"ConfirmRisky","threshold":"UNKNOWN"}`, "threshold"},
		{`{"kind":"ConfirmRisky","threshold":"EXTREME"}`, "threshold"},
		{`{"kind":"NeverConfirm","threshold":"HIGH"}`, "threshold"},
		{`{"kind":"Sometimes"}`, "kind"},
		{`{}`, "kind"},
	} {
		var p agentwire.ConfirmationPolicy
		err := strictjson.Unmarshal([]byte(tc.in), &p)
		if tc.errLoc == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			}
			if p.Kind == "ConfirmRisky" && (p.Threshold == nil || p.ConfirmUnknown == nil) {
				t.Errorf("%s: defaults not applied: %+v", tc.in, p)
			}
			continue
		}
		var es strictjson.Errors
		if !errors.As(err, &es) || es[0].Path() != tc.errLoc {
			t.Errorf("%s: want error at %s, got %v", tc.in, tc.errLoc, err)
		}
	}
}

func TestParseID(t *testing.T) {
	for _, ok := range []string{"4b1e2f3a-0000-4000-8000-00000000abcd", "4b1e2f3a000040008000" + "00000000abcd"} {
		if _, err := agentwire.ParseID(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "xyz", "4b1e2f3a-0000-4000-8000", "{4b1e2f3a-0000-4000-8000-00000000abcd}", "urn:uuid:4b1e2f3a-0000-4000-8000-00000000abcd"} {
		if _, err := agentwire.ParseID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
