package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// Browser sessions. A session is an HttpOnly, SameSite=Lax cookie holding a
// random id (stored only as its SHA-256); it authenticates every user
// route exactly as its user's API key does (a request with an
// Authorization header is authenticated by that header alone). A
// state-changing request (any method but GET, HEAD and OPTIONS)
// authenticated by the cookie must come from ACS's own origin: its Origin
// header (or, without one, its Referer) must be the origin of the public
// URL or of the request itself (its Host, which a browser never lets
// another site choose); otherwise it is refused with 403. Requests with
// API keys are not affected.

// SessionCookie is the browser session cookie's name.
const SessionCookie = "acs_session"

// ErrCrossSite refuses a state-changing request of a browser session that
// did not come from ACS's own pages.
var ErrCrossSite = acs.Errorf(acs.EFORBIDDEN, "Cross-site request refused: a request made with a browser session must come from ACS's own pages (its Origin must be ACS's)")

// checkCSRF refuses a state-changing request authenticated by a session
// cookie unless it comes from ACS's own origin.
func (a *API) checkCSRF(r *http.Request) error {
	if acs.AuthMethodFrom(r.Context()) != acs.AuthBySession {
		return nil
	}
	return a.sameOrigin(r)
}

// sameOrigin is nil for a safe method (GET, HEAD, OPTIONS) and for a
// request whose Origin (or Referer) is ACS's; ErrCrossSite otherwise.
func (a *API) sameOrigin(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		ref, err := url.Parse(r.Header.Get("Referer"))
		if err != nil || ref.Scheme == "" || ref.Host == "" {
			return ErrCrossSite
		}
		origin = ref.Scheme + "://" + ref.Host
	}
	origin = strings.ToLower(origin)
	if origin == "null" {
		return ErrCrossSite
	}
	if pub := originOf(a.d.PublicURL); pub != "" && origin == pub {
		return nil
	}
	if r.Host != "" && origin == strings.ToLower(requestScheme(r)+"://"+r.Host) {
		return nil
	}
	return ErrCrossSite
}

// originOf is the scheme://host of a URL, lower-cased ("" when it has
// none).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// requestScheme is the scheme the browser used: https over TLS or behind a
// proxy that says so.
func requestScheme(r *http.Request) string {
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return "https"
	}
	return "http"
}

// secureCookies says whether cookies get Secure: when ACS is served over
// https.
func (a *API) secureCookies(r *http.Request) bool {
	return strings.HasPrefix(strings.ToLower(a.d.PublicURL), "https://") || requestScheme(r) == "https"
}

// policy is the sign-in policy of the configuration.
func (a *API) policy() accounts.SignInPolicy {
	o := a.d.SignIn.OIDC
	return accounts.SignInPolicy{SessionTTL: a.d.SignIn.SessionTTL, AllowedDomains: o.AllowedDomains,
		AllowedEmails: o.AllowedEmails, CreateUsers: o.CreateUsers}
}

// setSession gives the browser the session's cookie.
func (a *API) setSession(w http.ResponseWriter, r *http.Request, ns accounts.NewSession) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: ns.ID, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: a.secureCookies(r), MaxAge: int(ns.ExpiresAt.Sub(ns.CreatedAt).Seconds())})
}

// clearSession removes the session cookie from the browser.
func (a *API) clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: a.secureCookies(r), MaxAge: -1})
}

// SessionUser returns the user of the request's session cookie, if it has
// a valid one (acs serve's pages use it to decide whether to sign in).
func (a *API) SessionUser(r *http.Request) (acs.User, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return acs.User{}, false
	}
	u, _, err := a.accounts.Session(r.Context(), c.Value)
	return u, err == nil
}

// IssueSignInLink makes a one-time sign-in link for the user: the public
// URL's /login?token=….
func (a *API) IssueSignInLink(ctx context.Context, userID string) (string, error) {
	tok, err := a.accounts.IssueSignInToken(ctx, userID)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(a.d.PublicURL, "/") + "/login?token=" + url.QueryEscape(tok), nil
}

// revokeSessions: DELETE /api/v1/users/{user_id}/sessions ends every
// browser session of the user ("me": the caller); an admin may name any
// user, others only themselves.
func (a *API) revokeSessions(w http.ResponseWriter, r *http.Request) {
	n, err := a.accounts.RevokeSessions(r.Context(), userOf(r), r.PathValue("user_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.RevokedSessions{Revoked: n})
}
