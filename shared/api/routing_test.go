package api_test

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/shared/api"
)

// noRedirects is a client that reports a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (e *env) raw(method, path, body string) resp {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := noRedirects.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, b, res.Header}
}

// Every route's path called with a method no route serves it with is 405
// with the methods it has in Allow and a JSON detail, never 404.
func TestWrongMethodIs405(t *testing.T) {
	e := newEnv(t, false)
	wildcard := regexp.MustCompile(`\{[a-z_]+(\.\.\.)?\}`)
	methods := map[string][]string{}
	for _, rt := range api.Routes {
		methods[rt.Path] = append(methods[rt.Path], rt.Method)
	}
	for p, have := range methods {
		if !strings.HasPrefix(p, "/api/v1/") {
			continue
		}
		concrete := wildcard.ReplaceAllString(p, "0000000000000000000000000000abcd")
		for _, m := range []string{"PUT", "PATCH", "DELETE", "POST", "GET"} {
			if slices.Contains(have, m) {
				continue
			}
			if servedUnder(m, concrete) {
				continue // another route serves this concrete path under m
			}
			t.Run(m+" "+p, func(t *testing.T) {
				r := e.raw(m, concrete, "{}")
				if r.status != 405 {
					t.Fatalf("%d for a path routed under %v: %s", r.status, have, r.body)
				}
				allow := r.header.Get("Allow")
				for _, h := range have {
					if !strings.Contains(allow, h) {
						t.Errorf("Allow %q lacks %s", allow, h)
					}
				}
				if !strings.Contains(string(r.body), `"detail"`) {
					t.Errorf("405 body is not a JSON detail: %s", r.body)
				}
			})
		}
	}
	if r := e.raw("GET", "/api/v1/no-such-route", ""); r.status != 404 {
		t.Errorf("unknown path: %d %s, want 404", r.status, r.body)
	}
}

// servedUnder reports whether a route of method m has a pattern that
// matches path, a wildcard matching any one segment.
func servedUnder(m, path string) bool {
	segs := strings.Split(path, "/")
	for _, rt := range api.Routes {
		pat := strings.Split(rt.Path, "/")
		if rt.Method != m || len(pat) != len(segs) {
			continue
		}
		match := true
		for i := range pat {
			if pat[i] != segs[i] && !strings.HasPrefix(pat[i], "{") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// A write to a path that is not in canonical form is refused, not
// redirected to the cleaned path: POST …/profiles/./activate must not save
// a profile named "activate".
func TestNonCanonicalWritesAreNotRedirected(t *testing.T) {
	e := newEnv(t, false)
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/v1/settings/profiles/./activate"},
		{"POST", "/api/v1/settings/profiles/x/../activate"},
		{"POST", "/api/v1/settings//profiles/activate"},
		{"DELETE", "/api/v1/settings/profiles/./x"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.raw(tc.method, tc.path, `{"llm_model":"m"}`)
			if r.status != 404 || !strings.Contains(string(r.body), "canonical") {
				t.Fatalf("got %d %s, want 404 naming the canonical form", r.status, r.body)
			}
		})
	}
	if r := e.raw("GET", "/api/v1/settings/profiles/activate", ""); r.status != 404 {
		t.Fatalf("a profile named activate exists: %d %s", r.status, r.body)
	}
	// A read is still redirected to its clean path.
	if r := e.raw("GET", "/api/v1/settings/./profiles", ""); r.status != http.StatusTemporaryRedirect {
		t.Fatalf("GET of a non-canonical path: %d, want a redirect", r.status)
	}
}
