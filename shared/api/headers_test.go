package api_test

import (
	"net/url"
	"testing"
	"testing/fstest"

	"github.com/acs-project/acs/shared/api"
)

// TestSiteSecurityHeaders: every answer of the site, the API's included,
// is nosniff and refuses to be framed; every document has a CSP with
// frame-ancestors 'none' (a frontend's with its own policy first); the
// sign-in pages send no Referer beyond ACS, and none at all from a URL
// that carries a one-time credential.
func TestSiteSecurityHeaders(t *testing.T) {
	ui := newSignInEnv(t, api.Frontend{CSP: "default-src 'self'", Files: fstest.MapFS{
		"index.html": {Data: []byte("<!doctype html><title>ui</title>")},
		"app.js":     {Data: []byte("console.log(1)")},
	}})
	foreign := newSignInEnv(t, api.Frontend{Files: fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>x</title>")}}})
	bare := newSignInEnv(t, api.Frontend{})
	const (
		uiCSP      = "default-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
		foreignCSP = "object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
		pageCSP    = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
	)
	html := map[string]string{"Accept": "text/html"}
	form := map[string]string{"Origin": "https://acs.example.com", "Content-Type": "application/x-www-form-urlencoded"}
	for _, tc := range []struct {
		name     string
		e        *signInEnv
		method   string
		path     string
		signedIn bool
		headers  map[string]string
		body     string
		status   int
		csp      string // "": none required
		referrer string // "": none required
	}{
		{"UIRoot", ui, "GET", "/", true, html, "", 200, uiCSP, ""},
		{"UIPage", ui, "GET", "/conversations/abc", true, html, "", 200, uiCSP, ""},
		{"UIIndex", ui, "GET", "/index.html", true, html, "", 301, uiCSP, ""},
		{"UIScript", ui, "GET", "/app.js", false, nil, "", 200, uiCSP, ""},
		{"UIPageSignedOut", ui, "GET", "/conversations", false, html, "", 303, uiCSP, ""},
		{"UIMissingFile", ui, "GET", "/nope.js", false, nil, "", 404, uiCSP, ""},
		{"UIPost", ui, "POST", "/conversations", true, nil, "", 405, uiCSP, ""},
		{"ForeignFrontendRoot", foreign, "GET", "/", true, html, "", 200, foreignCSP, ""},
		{"ForeignFrontendPage", foreign, "GET", "/conversations/abc", true, html, "", 200, foreignCSP, ""},
		{"Home", bare, "GET", "/", true, html, "", 200, pageCSP, "same-origin"},
		{"HomeSignedOut", bare, "GET", "/", false, html, "", 303, "", ""},
		{"SignInPage", bare, "GET", "/login?next=/x", false, nil, "", 200, pageCSP, "same-origin"},
		{"SignInPageBadToken", bare, "GET", "/login?token=nope", false, nil, "", 401, pageCSP, "no-referrer"},
		{"SignedInByToken", bare, "GET", "/login?token=" + bare.token(t) + "&next=/x", false, nil, "", 303, "", "no-referrer"},
		{"OIDCCallbackWithoutSignIn", bare, "GET", "/login/oidc/callback?code=c&state=s", false, nil, "", 401, pageCSP, "no-referrer"},
		{"SignedInByKey", bare, "POST", "/login", false, form, url.Values{"api_key": {signInKey}}.Encode(), 303, "", "no-referrer"},
		{"SignOutPage", bare, "GET", "/logout", true, nil, "", 200, pageCSP, "same-origin"},
		{"Docs", bare, "GET", "/docs", false, nil, "", 200, "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'", ""},
		{"OpenAPI", bare, "GET", "/openapi.json", false, nil, "", 200, "", ""},
		{"API", bare, "GET", "/api/v1/users/me", true, nil, "", 200, "", ""},
		{"APIUnauthorized", ui, "GET", "/api/v1/users/me", false, nil, "", 401, "", ""},
		{"APINoRoute", ui, "GET", "/api/v1/nope", true, nil, "", 404, "", ""},
		{"NoPage", bare, "GET", "/nope", true, nil, "", 404, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cookie := ""
			if tc.signedIn {
				cookie = tc.e.cookie
			}
			res := tc.e.do(t, tc.method, tc.path, cookie, tc.headers, tc.body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			h := res.Header
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if got := h.Get("X-Frame-Options"); got != "DENY" {
				t.Errorf("X-Frame-Options %q, want DENY", got)
			}
			if got := h.Values("Content-Security-Policy"); tc.csp != "" && (len(got) != 1 || got[0] != tc.csp) {
				t.Errorf("Content-Security-Policy %q, want %q", got, tc.csp)
			}
			if got := h.Get("Referrer-Policy"); tc.referrer != "" && got != tc.referrer {
				t.Errorf("Referrer-Policy %q, want %q", got, tc.referrer)
			}
		})
	}
}
