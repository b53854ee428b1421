// Package api is the V1 HTTP API (/api/v1): the route table, request
// decoding and validation (422 bodies), authentication (Bearer API keys or
// browser session cookies for users, X-Session-API-Key for sandbox
// webhooks), the browser sign-in pages, the mapping of domain
// errors to statuses, and the handlers. The same table drives the local mux
// and each per-route Lambda function.
package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/conversations"
	"github.com/acs-project/acs/shared/gitrepos"
	"github.com/acs-project/acs/shared/llmhealth"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

// Deps are what the handlers use.
type Deps struct {
	// Services are the control plane's services (services.Build). Each
	// route runs on the services Services.Only gives for its Needs.
	Services *services.Set
	// ContextAuthOnly makes user routes trust only a user already in the
	// request context (put there from the API Gateway authorizer's
	// context): no Bearer key is looked up, and a request without one is
	// 401. Behind API Gateway the authorizer is the only authority.
	ContextAuthOnly bool
	// StreamLimit ends a stream-start response (a JSON array of the task's
	// states) after this long even when the task is not done; 0 streams
	// until it is. Behind API Gateway, which buffers responses and gives up
	// after 29 s, it is set below that.
	StreamLimit time.Duration
	// SignIn configures browser sign-in (session lifetime, OpenID
	// Connect).
	SignIn config.SignIn
	// PublicURL is ACS's public URL (ACS_PUBLIC_URL): its origin is the one
	// state-changing requests authenticated by a session cookie must come
	// from, and the OpenID Connect redirect goes to PublicURL/login/oidc/callback.
	PublicURL string

	// oidc caches the issuer's discovery across the API's route copies.
	oidc *oidcCache
	// Skills lists the skills of the installation's user, organisation and
	// public skill directories, which every conversation loads (GET
	// /api/v1/skills/search); nil lists none.
	Skills func(ctx context.Context) ([]v1wire.SkillInfo, error)
	// LLMHealth is the installation's LLM health (llmhealth.Monitor's
	// Current), shown in GET /api/v1/web-client/config; nil reads unknown.
	LLMHealth func() llmhealth.Health
}

// API serves the V1 routes.
type API struct {
	d        Deps
	start    *startflow.Service
	life     *sandboxes.Lifecycle
	accounts *accounts.Service
	conv     *conversations.Service
	git      *gitrepos.Service
	clock    func() time.Time
}

// New returns the API over deps.
func New(d Deps) *API {
	if d.oidc == nil {
		d.oidc = &oidcCache{}
	}
	return over(d, d.Services)
}

// over returns the API of d whose handlers call the services of s.
func over(d Deps, s *services.Set) *API {
	return &API{d: d, start: s.Starts, life: s.Sandboxes, accounts: s.Accounts, conv: s.Conversations, git: s.GitRepos, clock: s.Now}
}

func (a *API) now() time.Time { return a.clock().UTC() }

// Handler mounts every route of the table. Each route runs on the services
// restricted to the adapters its Needs declares (services.Set.Only),
// exactly as its Lambda function does, so local mode and AWS cannot differ
// in what a route may touch. Every answer carries Site's nosniff and
// no-framing headers.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range Routes {
		mux.Handle(rt.Method+" "+rt.Path, a.restricted(rt).wrap(rt))
	}
	mux.HandleFunc("/api/v1/", noRoute(mux, "/api/v1/"))
	// The OpenAPI document of the table and its page (openapi.go): open.
	mux.HandleFunc("GET /openapi.json", serveOpenAPI)
	mux.HandleFunc("GET /docs", serveDocs)
	return secured(canonicalWrites(mux))
}

// RouteHandler mounts only the named route (one Lambda function per route),
// restricted to its Needs. It returns nil for an unknown name.
func (a *API) RouteHandler(name string) http.Handler {
	rt, ok := RouteNamed(name)
	if !ok {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle(rt.Method+" "+rt.Path, a.restricted(rt).wrap(rt))
	mux.HandleFunc("/", writeNoRoute)
	return secured(mux)
}

// writeNoRoute answers a path no route serves.
func writeNoRoute(w http.ResponseWriter, _ *http.Request) {
	writeErr(w, acs.Errorf(acs.ENOTFOUND, "Not Found"))
}

// writePanic answers a request whose handler panicked.
func writePanic(w http.ResponseWriter) {
	v1wire.WriteError(w, &acs.Error{Code: acs.EINTERNAL}) // logged by the caller, with the stack
}

// restricted is a copy of a over only the adapters rt declares.
func (a *API) restricted(rt Route) *API {
	return over(a.d, a.d.Services.Only(rt.Name, rt.Needs))
}

// wrap adds panic recovery and the route's authentication.
func (a *API) wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				slog.Error("api: panic", "route", rt.Name, "panic", p, "stack", string(debug.Stack()))
				writePanic(w)
			}
		}()
		switch rt.Auth {
		case AuthUser:
			if _, ok := acs.UserFrom(r.Context()); !ok {
				if a.d.ContextAuthOnly {
					writeErr(w, acs.Errorf(acs.EUNAUTHORIZED, "no authorizer context"))
					return
				}
				u, m, err := a.authenticateUser(r)
				if err != nil {
					writeErr(w, err)
					return
				}
				r = r.WithContext(acs.WithAuthMethod(acs.WithUser(r.Context(), u), m))
			}
			if err := a.checkCSRF(r); err != nil {
				writeErr(w, err)
				return
			}
		case AuthSandbox:
			sb, err := a.authenticateSandbox(r)
			if err != nil {
				writeErr(w, err)
				return
			}
			r = r.WithContext(acs.WithSandbox(r.Context(), sb))
		}
		rt.Handle(a, w, r)
	})
}

// Authenticate resolves a Bearer API key to its user. It is what the Lambda
// authorizer calls too. A missing, malformed or unknown key is
// EUNAUTHORIZED with the Bearer challenge; a store failure is returned as
// it is.
func Authenticate(ctx context.Context, store acs.UserStore, authorization string) (acs.User, error) {
	return accounts.Authenticate(ctx, store, authorization)
}

// authenticateUser resolves the request's user: by its Authorization
// header when it has one, else by its session cookie.
func (a *API) authenticateUser(r *http.Request) (acs.User, acs.AuthMethod, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		u, err := a.accounts.Authenticate(r.Context(), h)
		return u, acs.AuthByAPIKey, err
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		u, _, err := a.accounts.Session(r.Context(), c.Value)
		return u, acs.AuthBySession, err
	}
	u, err := a.accounts.Authenticate(r.Context(), "")
	return u, acs.AuthByAPIKey, err
}

// authenticateSandbox resolves X-Session-API-Key to the sandbox whose
// current session key it is.
func (a *API) authenticateSandbox(r *http.Request) (acs.Sandbox, error) {
	return a.accounts.AuthenticateSandbox(r.Context(), r.Header.Get("X-Session-API-Key"))
}

func userOf(r *http.Request) acs.User {
	u, _ := acs.UserFrom(r.Context())
	return u
}

// writeErr answers err through the one error table (v1wire.WriteError):
// the code and message of the domain error in its chain, whatever context
// wraps it; anything else is 500 "Internal Server Error". A
// strictjson.Errors in the chain, a service's refusal of request fields,
// is answered 422 with that list. Internal and storage-full errors are
// logged with their details.
func writeErr(w http.ResponseWriter, err error) {
	var errs strictjson.Errors
	if errors.As(err, &errs) {
		httpjson.WriteValidation(w, errs)
		return
	}
	switch acs.ErrorCode(err) {
	case acs.EINTERNAL:
		slog.Error("api: request failed", "error", err)
	case acs.ESTORAGEFULL:
		slog.Error("api: storage full", "error", err)
	}
	v1wire.WriteError(w, err)
}

// writeBadPageID answers a page_id this API did not issue.
func writeBadPageID(w http.ResponseWriter) {
	httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "page_id"},
		Msg: "Unknown page_id: it must be the next_page_id of a previous page", Type: "value_error"}})
}

// readBody reads a request body of at most httpjson.MaxBodyBytes; on failure it
// answers (413 too large, 408 too slow, 400 otherwise) and returns false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpjson.MaxBodyBytes))
	if err != nil {
		httpjson.WriteBodyError(w, err)
		return nil, false
	}
	return body, true
}
