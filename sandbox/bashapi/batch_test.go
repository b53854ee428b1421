package bashapi_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestBatchGet: GET /api/bash/bash_events/ with a JSON list of ids answers
// the events in request order, null for unknown or malformed ids.
func TestBatchGet(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.execute("echo one", nil, 0)
	e.execute("echo two", nil, 0)
	all := e.all(url.Values{})
	if len(all) < 4 {
		t.Fatalf("want at least 4 events, got %d", len(all))
	}
	last := all[len(all)-1]
	dashed := last.ID[:8] + "-" + last.ID[8:12] + "-" + last.ID[12:16] + "-" + last.ID[16:20] + "-" + last.ID[20:]
	ids := []string{last.ID, strings.Repeat("0", 32), all[0].ID, "nope", dashed, all[0].ID}
	want := [][]byte{last.raw, nil, all[0].raw, nil, last.raw, all[0].raw}
	body, _ := json.Marshal(ids)

	check := func(name string, st int, b []byte) {
		t.Helper()
		if st != 200 {
			t.Fatalf("%s: %d %s", name, st, b)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d items, want %d: %s", name, len(got), len(want), b)
		}
		for i := range want {
			if want[i] == nil {
				if string(got[i]) != "null" {
					t.Fatalf("%s: item %d (%s) = %s, want null", name, i, ids[i], got[i])
				}
				continue
			}
			if decodeEvent(t, got[i]).ID != decodeEvent(t, want[i]).ID || !json.Valid(got[i]) {
				t.Fatalf("%s: item %d = %s, want %s", name, i, got[i], want[i])
			}
		}
	}
	st, b := e.do("GET", "/api/bash/bash_events/", string(body))
	check("body", st, b)
	q := url.Values{"event_ids": ids}
	st, b = e.do("GET", "/api/bash/bash_events/?"+q.Encode(), "")
	check("query", st, b)

	if st, b := e.do("GET", "/api/bash/bash_events/", "[]"); st != 200 || string(b) != "[]" {
		t.Fatalf("empty list: %d %s", st, b)
	}
}

func TestBatchGetBadInput(t *testing.T) {
	e := newEnv(t, envOpts{})
	many, _ := json.Marshal(make([]string, 101))
	for _, tc := range []struct {
		name, body, loc string
	}{
		{"no body", "", "body"},
		{"not a list", `{"event_ids":["a"]}`, "body"},
		{"not strings", `[1,2]`, "body.0"},
		{"not json", `[`, ""},
		{"too many", string(many), "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := e.do("GET", "/api/bash/bash_events/", tc.body)
			if st < 400 || st >= 500 {
				t.Fatalf("%d %s, want a 4xx", st, b)
			}
			if tc.loc == "" {
				var d struct{ Detail any }
				if json.Unmarshal(b, &d) != nil || d.Detail == nil {
					t.Fatalf("no detail: %d %s", st, b)
				}
				return
			}
			if st != 422 {
				t.Fatalf("%d %s, want 422", st, b)
			}
			if got := locs(t, b); len(got) == 0 || got[0] != tc.loc {
				t.Fatalf("locs %v, want %s", got, tc.loc)
			}
		})
	}
}
