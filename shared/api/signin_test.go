package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
)

// signInEnv is an API with a user "u1" (key signInKey) and one browser
// session of theirs made with that key (its cookie value: cookie), its
// public URL https://acs.example.com, serving web (api.Frontend{}: no
// frontend).
type signInEnv struct {
	srv    *httptest.Server
	api    *api.API
	cookie string
}

const signInKey = "acs_signin-test-key-0123456789"

func newSignInEnv(t *testing.T, web api.Frontend) *signInEnv {
	t.Helper()
	store := openStore(t)
	ctx := context.Background()
	if err := store.CreateUser(ctx, acs.User{ID: "u1", Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	if _, err := accounts.IssueKey(ctx, store, "u1", "k", signInKey, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	a := api.New(api.Deps{Services: services.Build(services.Adapters{Store: store, Queue: openQueue(t),
		Runtime: openRuntime(t, "/nonexistent/acs"),
		Sealer:  sealbox.FromPassphrase("t")}), PublicURL: "https://acs.example.com"})
	srv := httptest.NewServer(a.Site(web))
	t.Cleanup(srv.Close)
	e := &signInEnv{srv: srv, api: a}
	// Sign in with the key through the page: the cookie it sets.
	res := e.do(t, "POST", "/login", "", map[string]string{"Origin": "https://acs.example.com",
		"Content-Type": "application/x-www-form-urlencoded"}, url.Values{"api_key": {signInKey}, "next": {"/x"}}.Encode())
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/x" {
		t.Fatalf("sign-in by key: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	for _, c := range res.Cookies() {
		if c.Name == api.SessionCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || !c.Secure || c.Path != "/" || c.MaxAge != 168*3600 {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, Secure (https public URL), Path=/, Max-Age a week", c)
			}
			e.cookie = c.Value
		}
	}
	if e.cookie == "" {
		t.Fatal("no session cookie")
	}
	return e
}

func (e *signInEnv) do(t *testing.T, method, path, cookie string, headers map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: cookie})
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestSessionCookieAuthAndCSRF: the cookie authenticates user routes as the
// key does; a state change by cookie needs ACS's origin; keys are exempt.
func TestSessionCookieAuthAndCSRF(t *testing.T) {
	e := newSignInEnv(t, api.Frontend{})
	self := "http://" + strings.TrimPrefix(e.srv.URL, "http://")
	for _, tc := range []struct {
		name    string
		method  string
		cookie  bool
		headers map[string]string
		want    int
	}{
		{"GetWithCookie", "GET", true, nil, 200},
		{"GetWithoutAnything", "GET", false, nil, 401},
		{"GetWithBadCookie", "GET", false, map[string]string{"Cookie": api.SessionCookie + "=nope"}, 401},
		{"PostWithCookieNoOrigin", "POST", true, nil, 403},
		{"PostWithCookieOtherOrigin", "POST", true, map[string]string{"Origin": "https://evil.example.com"}, 403},
		{"PostWithCookieNullOrigin", "POST", true, map[string]string{"Origin": "null"}, 403},
		{"PostWithCookieOtherPortOrigin", "POST", true, map[string]string{"Origin": "https://acs.example.com:8443"}, 403},
		{"PostWithCookiePublicOrigin", "POST", true, map[string]string{"Origin": "https://acs.example.com"}, 201},
		{"PostWithCookieOwnHostOrigin", "POST", true, map[string]string{"Origin": self}, 201},
		{"PostWithCookieRefererOnly", "POST", true, map[string]string{"Referer": "https://acs.example.com/app/page"}, 201},
		{"PostWithCookieForeignReferer", "POST", true, map[string]string{"Referer": "https://evil.example.com/acs.example.com"}, 403},
		{"PostWithKeyNoOrigin", "POST", false, map[string]string{"Authorization": "Bearer " + signInKey}, 201},
		{"PostWithKeyOtherOrigin", "POST", false, map[string]string{"Authorization": "Bearer " + signInKey, "Origin": "https://evil.example.com"}, 201},
		// A header goes first: a wrong key is refused even with a good cookie.
		{"WrongKeyAndCookie", "GET", true, map[string]string{"Authorization": "Bearer wrong"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, body := "/api/v1/users/me", ""
			h := map[string]string{}
			if tc.method == "POST" {
				path, body, h["Content-Type"] = "/api/v1/keys", `{"name":"k"}`, "application/json"
			}
			for k, v := range tc.headers {
				h[k] = v
			}
			cookie := ""
			if tc.cookie {
				cookie = e.cookie
			}
			res := e.do(t, tc.method, path, cookie, h, body)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", res.StatusCode, b, tc.want)
			}
			if tc.want == 403 && !strings.Contains(string(b), `{"detail":"Cross-site request refused`) {
				t.Fatalf("403 body %s", b)
			}
		})
	}
}

// TestSignInPagesRefuseReadably: the pages' refusals are HTML 4xx, and next
// only ever leads within ACS.
func TestSignInPagesRefuseReadably(t *testing.T) {
	e := newSignInEnv(t, api.Frontend{})
	form := map[string]string{"Origin": "https://acs.example.com", "Content-Type": "application/x-www-form-urlencoded"}
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
		want                     int
		text                     string // in the page, or the Location
	}{
		{"UnknownLink", "GET", "/login?token=nope", "", nil, 401, "invalid, has expired or was used already"},
		{"WrongKey", "POST", "/login", "api_key=nope", form, 401, "invalid API key"},
		{"EmptyKey", "POST", "/login", "api_key=", form, 401, "Enter an API key"},
		{"CrossSiteKeySignIn", "POST", "/login", "api_key=" + signInKey, map[string]string{"Origin": "https://evil.example.com",
			"Content-Type": "application/x-www-form-urlencoded"}, 403, "Cross-site request refused"},
		{"OIDCNotConfigured", "GET", "/login/oidc", "", nil, 404, "not configured"},
		{"CallbackWithoutState", "GET", "/login/oidc/callback?code=x&state=y", "", nil, 401, "did not start here"},
		{"AbsoluteNext", "POST", "/login", "api_key=" + signInKey + "&next=https://evil.example.com/", form, 303, "/"},
		{"SchemeRelativeNext", "POST", "/login", "api_key=" + signInKey + "&next=//evil.example.com/", form, 303, "/"},
		{"BackslashNext", "POST", "/login", "api_key=" + signInKey + "&next=/\\evil.example.com", form, 303, "/"},
		{"PathNext", "POST", "/login", "api_key=" + signInKey + "&next=/conversations/1?a=b", form, 303, "/conversations/1?a=b"},
		{"CrossSiteSignOut", "POST", "/logout", "", map[string]string{"Origin": "https://evil.example.com"}, 403, "Cross-site request refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(t, tc.method, tc.path, "", tc.headers, tc.body)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", res.StatusCode, b, tc.want)
			}
			if tc.want == 303 {
				if loc := res.Header.Get("Location"); loc != tc.text {
					t.Fatalf("went to %q, want %q", loc, tc.text)
				}
				return
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(b), tc.text) {
				t.Fatalf("%s page %s, want %q", ct, b, tc.text)
			}
		})
	}
	// The session still works after the refused sign-out, and not after a
	// real one.
	if res := e.do(t, "GET", "/api/v1/users/me", e.cookie, nil, ""); res.StatusCode != 200 {
		t.Fatalf("after a refused sign-out: %d", res.StatusCode)
	}
	res := e.do(t, "POST", "/logout", e.cookie, map[string]string{"Origin": "https://acs.example.com"}, "")
	if res.StatusCode != 303 || res.Header.Get("Location") != "/login?signed_out=1" {
		t.Fatalf("sign-out: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if res := e.do(t, "GET", "/api/v1/users/me", e.cookie, nil, ""); res.StatusCode != 401 {
		t.Fatalf("after signing out: %d", res.StatusCode)
	}
}

// TestKeySessionEndsWithItsKey: once the API key a browser signed in with
// is revoked, its session answers 401 and its page visits go to the
// sign-in page; a session made with a link goes on.
func TestKeySessionEndsWithItsKey(t *testing.T) {
	e := newSignInEnv(t, api.Frontend{})
	link, err := e.api.IssueSignInLink(t.Context(), "u1")
	if err != nil {
		t.Fatal(err)
	}
	res := e.do(t, "GET", strings.TrimPrefix(link, "https://acs.example.com"), "", nil, "")
	linkCookie := ""
	for _, c := range res.Cookies() {
		if c.Name == api.SessionCookie {
			linkCookie = c.Value
		}
	}
	if res.StatusCode != http.StatusSeeOther || linkCookie == "" {
		t.Fatalf("sign-in by link: %d, cookie %q", res.StatusCode, linkCookie)
	}
	bearer := map[string]string{"Authorization": "Bearer " + signInKey}
	var keys []struct{ ID, Prefix string }
	res = e.do(t, "GET", "/api/v1/keys", "", bearer, "")
	if err := json.NewDecoder(res.Body).Decode(&keys); err != nil || len(keys) != 1 {
		t.Fatalf("keys %+v: %v", keys, err)
	}
	if res := e.do(t, "DELETE", "/api/v1/keys/"+keys[0].ID, "", bearer, ""); res.StatusCode != 200 {
		t.Fatalf("revoke the key: %d", res.StatusCode)
	}
	html := map[string]string{"Accept": "text/html"}
	for _, tc := range []struct {
		name, cookie, path string
		headers            map[string]string
		status             int
		location           string
	}{
		{"KeySessionAPI", e.cookie, "/api/v1/users/me", nil, 401, ""},
		{"KeySessionPage", e.cookie, "/", html, 303, "/login"},
		{"LinkSessionAPI", linkCookie, "/api/v1/users/me", nil, 200, ""},
		{"LinkSessionPage", linkCookie, "/", html, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(t, "GET", tc.path, tc.cookie, tc.headers, "")
			if res.StatusCode != tc.status || res.Header.Get("Location") != tc.location {
				t.Fatalf("%d to %q, want %d to %q", res.StatusCode, res.Header.Get("Location"), tc.status, tc.location)
			}
		})
	}
}

// token issues a one-time sign-in link for u1 and returns its token.
func (e *signInEnv) token(t *testing.T) string {
	t.Helper()
	link, err := e.api.IssueSignInLink(t.Context(), "u1")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}
