package api

import (
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// The sign-in pages: server-rendered HTML without external assets.
//
//	GET  /login                 the sign-in page; ?token= signs in with a one-time link
//	POST /login                 signs in with an API key (form field api_key)
//	GET  /login/oidc            starts the OpenID Connect sign-in (code flow, PKCE S256, state, nonce)
//	GET  /login/oidc/callback   the issuer's redirect back: verifies the ID token and signs in
//	GET  /logout                a page with a sign-out button
//	POST /logout                signs out (ends the session, clears the cookie)
//
// Each takes ?next= (or the form field next), where to go once signed in:
// only a path of ACS (starting with one "/") is followed; anything else
// goes to "/". A refusal is an HTML page with a 4xx status.

//go:embed pages/pages.html
var pagesFS embed.FS

var pages = template.Must(template.ParseFS(pagesFS, "pages/pages.html"))

// page is what a page template shows.
type page struct {
	Title, Error, Note string
	User               string
	Admin              bool
	Next               string
	OIDCName           string
	// Retry, when set, is where to sign in again: the page's URL carries a
	// one-time credential, so the page has no form and sends no Referer.
	Retry string
}

// render answers an HTML page. A page sends no Referer beyond ACS, and none
// at all when its URL carries a one-time credential (p.Retry is set). The
// other pages' policy is not no-referrer: with it a browser sends
// "Origin: null" with their forms, which the cross-site check refuses.
func render(w http.ResponseWriter, status int, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	if p.Retry != "" {
		w.Header().Set("Referrer-Policy", "no-referrer")
	} else {
		w.Header().Set("Referrer-Policy", "same-origin")
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, p); err != nil {
		slog.Error("api: render page", "page", name, "error", err)
	}
}

// safeNext is next when it is a path of this site, else "/".
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsAny(next, "\\\r\n\t") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

// loginPage renders the sign-in page with err's message (nil: none).
func (a *API) loginPage(w http.ResponseWriter, r *http.Request, next string, err error) {
	p := page{Title: "Sign in to ACS", Next: safeNext(next)}
	if a.d.SignIn.OIDC.Issuer != "" {
		p.OIDCName = a.d.SignIn.OIDC.Name
	}
	status := http.StatusOK
	if err != nil {
		status, p.Error = pageError(err)
	}
	if r.URL.Query().Has("signed_out") {
		p.Note = "You are signed out."
	}
	if u, ok := a.SessionUser(r); ok {
		p.User = u.Name
	}
	if q := r.URL.Query(); q.Has("token") || q.Has("code") {
		p.Retry = "/login?next=" + url.QueryEscape(p.Next)
	}
	render(w, status, "login", p)
}

// pageError is the status and message a page shows for err: the domain
// error's, or 500 and a generic message (logged) for anything else.
func pageError(err error) (int, string) {
	status, _, _ := v1wire.ErrorResponse(err)
	if status == http.StatusUnprocessableEntity {
		status = http.StatusBadRequest // a form, not a JSON body
	}
	if acs.ErrorCode(err) == acs.EINTERNAL || status >= 500 {
		slog.Error("api: sign-in failed", "error", err)
		if status < 500 {
			status = http.StatusInternalServerError
		}
		return status, "Signing in failed on ACS's side; try again shortly."
	}
	return status, acs.ErrorMessage(err)
}

// signedIn sets the session's cookie and goes on to next.
func (a *API) signedIn(w http.ResponseWriter, r *http.Request, ns accounts.NewSession, next string) {
	a.setSession(w, r, ns)
	w.Header().Set("Referrer-Policy", "no-referrer") // the URL may hold a token or a code
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// getLogin: GET /login; with ?token=, signs in with a one-time link.
func (a *API) getLogin(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("token") {
		ns, _, err := a.accounts.SignInWithToken(r.Context(), q.Get("token"), a.policy())
		if err != nil {
			a.loginPage(w, r, q.Get("next"), err)
			return
		}
		a.signedIn(w, r, ns, q.Get("next"))
		return
	}
	a.loginPage(w, r, q.Get("next"), nil)
}

// postLogin: POST /login signs in with the form's api_key.
func (a *API) postLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		a.loginPage(w, r, "", acs.Errorf(acs.EINVALID, "The sign-in form could not be read."))
		return
	}
	next := r.PostForm.Get("next")
	if err := a.sameOrigin(r); err != nil {
		a.loginPage(w, r, next, err)
		return
	}
	ns, _, err := a.accounts.SignInWithAPIKey(r.Context(), r.PostForm.Get("api_key"), a.policy())
	if err != nil {
		a.loginPage(w, r, next, err)
		return
	}
	a.signedIn(w, r, ns, next)
}

// getLogout: GET /logout shows a sign-out button.
func (a *API) getLogout(w http.ResponseWriter, r *http.Request) {
	p := page{Title: "Sign out of ACS"}
	if u, ok := a.SessionUser(r); ok {
		p.User = u.Name
	} else {
		p.Note = "You are not signed in."
	}
	render(w, http.StatusOK, "logout", p)
}

// postLogout: POST /logout ends the session and clears the cookie.
func (a *API) postLogout(w http.ResponseWriter, r *http.Request) {
	if err := a.sameOrigin(r); err != nil {
		status, msg := pageError(err)
		render(w, status, "logout", page{Title: "Sign out of ACS", Error: msg})
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		if err := a.accounts.SignOut(r.Context(), c.Value); err != nil {
			status, msg := pageError(err)
			render(w, status, "logout", page{Title: "Sign out of ACS", Error: msg})
			return
		}
	}
	a.clearSession(w, r)
	http.Redirect(w, r, "/login?signed_out=1", http.StatusSeeOther)
}

// ---- OpenID Connect

// oidcCookie keeps a sign-in's state, nonce, PKCE verifier and next path
// between /login/oidc and its callback (HttpOnly, for 10 minutes).
const (
	oidcCookie    = "acs_oidc"
	oidcCookieTTL = 10 * time.Minute
)

type oidcPending struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
}

// oidcCache holds the issuer's provider once discovered (a failed
// discovery is retried by the next sign-in).
type oidcCache struct {
	mu       sync.Mutex
	provider *oidc.Provider
}

// errOIDCOff answers the OpenID Connect routes when no issuer is set.
var errOIDCOff = acs.Errorf(acs.ENOTFOUND, "Sign-in with an identity provider is not configured here (ACS_OIDC_ISSUER).")

// oauth returns the issuer's provider and ACS's OAuth 2 client at it.
func (a *API) oauth(r *http.Request) (*oidc.Provider, *oauth2.Config, error) {
	o := a.d.SignIn.OIDC
	if o.Issuer == "" {
		return nil, nil, errOIDCOff
	}
	c := a.d.oidc
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider == nil {
		p, err := oidc.NewProvider(r.Context(), o.Issuer)
		if err != nil {
			slog.Warn("api: OpenID Connect discovery failed", "issuer", o.Issuer, "error", err)
			return nil, nil, &acs.Error{Code: acs.EUNAVAILABLE, Message: "The identity provider could not be reached; try again shortly."}
		}
		c.provider = p
	}
	base := strings.TrimRight(a.d.PublicURL, "/")
	if base == "" {
		base = requestScheme(r) + "://" + r.Host
	}
	return c.provider, &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: c.provider.Endpoint(),
		RedirectURL: base + "/login/oidc/callback", Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}, nil
}

// loginOIDC: GET /login/oidc sends the browser to the issuer.
func (a *API) loginOIDC(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	_, cfg, err := a.oauth(r)
	if err != nil {
		a.loginPage(w, r, next, err)
		return
	}
	p := oidcPending{State: acs.NewSecret(32), Nonce: acs.NewSecret(32), Verifier: oauth2.GenerateVerifier(), Next: safeNext(next)}
	raw, _ := json.Marshal(p)
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: base64.RawURLEncoding.EncodeToString(raw), Path: "/login/oidc",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secureCookies(r), MaxAge: int(oidcCookieTTL.Seconds())})
	http.Redirect(w, r, cfg.AuthCodeURL(p.State, oidc.Nonce(p.Nonce), oauth2.S256ChallengeOption(p.Verifier)), http.StatusFound)
}

// errOIDCState refuses a callback that does not continue a sign-in this
// browser started.
var errOIDCState = acs.Errorf(acs.EUNAUTHORIZED, "This sign-in did not start here or took too long; sign in again.")

// loginOIDCCallback: GET /login/oidc/callback exchanges the code, verifies
// the ID token (signature against the issuer's keys, audience, expiry,
// nonce) and signs in as its identity.
func (a *API) loginOIDCCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var p oidcPending
	c, err := r.Cookie(oidcCookie)
	if err == nil {
		var raw []byte
		if raw, err = base64.RawURLEncoding.DecodeString(c.Value); err == nil {
			err = json.Unmarshal(raw, &p)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/login/oidc", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: a.secureCookies(r), MaxAge: -1})
	if err != nil || p.State == "" || subtle.ConstantTimeCompare([]byte(p.State), []byte(q.Get("state"))) != 1 {
		a.loginPage(w, r, p.Next, errOIDCState)
		return
	}
	if e := q.Get("error"); e != "" {
		a.loginPage(w, r, p.Next, acs.Errorf(acs.EUNAUTHORIZED, "The identity provider did not sign you in: %s", or(q.Get("error_description"), e)))
		return
	}
	id, err := a.verifyOIDC(r, p, q.Get("code"))
	if err != nil {
		a.loginPage(w, r, p.Next, err)
		return
	}
	// A browser already signed in links a new identity to its user.
	signedIn := ""
	if u, ok := a.SessionUser(r); ok {
		signedIn = u.ID
	}
	ns, _, err := a.accounts.SignInWithOIDC(r.Context(), id, a.policy(), signedIn)
	if err != nil {
		a.loginPage(w, r, p.Next, err)
		return
	}
	a.signedIn(w, r, ns, p.Next)
}

// verifyOIDC exchanges the code and verifies the ID token it brings.
func (a *API) verifyOIDC(r *http.Request, p oidcPending, code string) (accounts.OIDCIdentity, error) {
	provider, cfg, err := a.oauth(r)
	if err != nil {
		return accounts.OIDCIdentity{}, err
	}
	if code == "" {
		return accounts.OIDCIdentity{}, acs.Errorf(acs.EUNAUTHORIZED, "The identity provider's answer has no code; sign in again.")
	}
	tok, err := cfg.Exchange(r.Context(), code, oauth2.VerifierOption(p.Verifier))
	if err != nil {
		slog.Warn("api: OpenID Connect code exchange failed", "error", err)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return accounts.OIDCIdentity{}, acs.Errorf(acs.EUNAUTHORIZED, "The identity provider refused the sign-in (%s); sign in again.", or(re.ErrorCode, re.Response.Status))
		}
		return accounts.OIDCIdentity{}, &acs.Error{Code: acs.EUNAVAILABLE, Message: "The identity provider could not be reached; try again shortly."}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return accounts.OIDCIdentity{}, acs.Errorf(acs.EUNAUTHORIZED, "The identity provider sent no ID token.")
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: cfg.ClientID}).Verify(r.Context(), raw)
	if err != nil {
		slog.Warn("api: ID token refused", "error", err)
		return accounts.OIDCIdentity{}, acs.Errorf(acs.EUNAUTHORIZED, "The identity provider's ID token could not be verified; sign in again.")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.Nonce)) != 1 {
		return accounts.OIDCIdentity{}, acs.Errorf(acs.EUNAUTHORIZED, "The ID token was not issued for this sign-in; sign in again.")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
		Name          string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return accounts.OIDCIdentity{}, acs.Errorf(acs.EUNAUTHORIZED, "The ID token's claims could not be read.")
	}
	return accounts.OIDCIdentity{Issuer: idt.Issuer, Subject: idt.Subject, Email: claims.Email,
		EmailVerified: truthy(claims.EmailVerified), Name: claims.Name}, nil
}

// truthy reads email_verified, which some issuers send as a string.
func truthy(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		return strings.EqualFold(b, "true")
	}
	return false
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Home serves "/" without a web directory: who is signed in and a
// sign-out button, or a redirect to the sign-in page.
func (a *API) Home(w http.ResponseWriter, r *http.Request) {
	u, ok := a.SessionUser(r)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	render(w, http.StatusOK, "home", page{Title: "ACS", User: u.Name, Admin: u.Admin})
}
