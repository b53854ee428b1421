// Package api is the V1 HTTP API (/api/v1): the route table, request
// decoding and validation (422 bodies), authentication (Bearer API keys for
// users, X-Session-API-Key for sandbox webhooks), the mapping of domain
// errors to statuses, and the handlers. The same table drives the local mux
// and each per-route Lambda function.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/conversations"
	"github.com/acs-project/acs/shared/startflow"
)

// Deps are what the handlers use.
type Deps struct {
	Store   acs.Store
	Queue   acs.Queue
	Runtime acs.Runtime
	// Blobs keeps workspace archives (may be nil: no archive on delete).
	Blobs acs.Blobs
	// Sealer seals stored secrets and LLM keys.
	Sealer acs.Sealer
	// Flow is the start-flow and lifecycle configuration (sandbox specs,
	// environment, caps, timeouts).
	Flow startflow.Config
	Now  func() time.Time
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
}

// API serves the V1 routes.
type API struct {
	d        Deps
	start    *startflow.Service
	life     *startflow.Lifecycle
	accounts *accounts.Service
	conv     *conversations.Service
}

// New returns the API over deps.
func New(d Deps) *API {
	if d.Now == nil {
		d.Now = time.Now
	}
	d.Flow = d.Flow.Defaults()
	life := &startflow.Lifecycle{Store: d.Store, Runtime: d.Runtime, Blobs: d.Blobs, Config: d.Flow, Now: d.Now}
	return &API{d: d, life: life, accounts: accounts.New(d.Store, d.Sealer, d.Now),
		conv:  &conversations.Service{Store: d.Store, Sealer: d.Sealer, Life: life, ResumeWait: d.Flow.ResumeWait, Now: d.Now},
		start: &startflow.Service{Store: d.Store, Queue: d.Queue, Sealer: d.Sealer, Lifecycle: life, Now: d.Now}}
}

// Lifecycle returns the sandbox lifecycle manager the API uses (the
// reconciler runs it too).
func (a *API) Lifecycle() *startflow.Lifecycle { return a.life }

func (a *API) now() time.Time { return a.d.Now().UTC() }

// Handler mounts every route of the table. Each route runs on an API
// restricted to the adapters its Needs declares (Route.Restrict), exactly
// as its Lambda function does, so local mode and AWS cannot differ in what
// a route may touch.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range Routes {
		mux.Handle(rt.Method+" "+rt.Path, a.restricted(rt).wrap(rt))
	}
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) { wire.WriteDetail(w, 404, "Not Found") })
	return mux
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
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { wire.WriteDetail(w, 404, "Not Found") })
	return mux
}

// restricted is a copy of a that has only the adapters rt declares.
func (a *API) restricted(rt Route) *API {
	return New(rt.Restrict(a.d))
}

// wrap adds panic recovery and the route's authentication.
func (a *API) wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				slog.Error("api: panic", "route", rt.Name, "panic", p, "stack", string(debug.Stack()))
				wire.WriteDetail(w, http.StatusInternalServerError, "Internal Server Error")
			}
		}()
		switch rt.Auth {
		case AuthUser:
			if _, ok := acs.UserFrom(r.Context()); !ok {
				if a.d.ContextAuthOnly {
					writeErr(w, fmt.Errorf("no authorizer context: %w", acs.ErrUnauthorized))
					return
				}
				u, err := a.authenticateUser(r)
				if err != nil {
					writeErr(w, err)
					return
				}
				r = r.WithContext(acs.WithUser(r.Context(), u))
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
// authorizer calls too.
func Authenticate(ctx context.Context, store acs.Store, authorization string) (acs.User, error) {
	return accounts.Authenticate(ctx, store, authorization)
}

func (a *API) authenticateUser(r *http.Request) (acs.User, error) {
	return a.accounts.Authenticate(r.Context(), r.Header.Get("Authorization"))
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

// writeErr maps domain errors to statuses with {"detail": ...} bodies. Only
// unexpected errors are 500, with a generic message (details are logged).
func writeErr(w http.ResponseWriter, err error) {
	msg := err.Error()
	switch {
	case errors.Is(err, acs.ErrUnauthorized):
		if strings.Contains(msg, "Bearer") || strings.Contains(msg, "API key") {
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		wire.WriteDetail(w, http.StatusUnauthorized, "Unauthorized: "+strings.TrimSuffix(msg, ": "+acs.ErrUnauthorized.Error()))
	case errors.Is(err, acs.ErrForbidden):
		wire.WriteDetail(w, http.StatusForbidden, strings.TrimSuffix(msg, ": "+acs.ErrForbidden.Error()))
	case errors.Is(err, acs.ErrNotFound):
		wire.WriteDetail(w, http.StatusNotFound, strings.TrimSuffix(msg, ": "+acs.ErrNotFound.Error()))
	case errors.Is(err, acs.ErrConflict):
		wire.WriteDetail(w, http.StatusConflict, strings.TrimSuffix(msg, ": "+acs.ErrConflict.Error()))
	case errors.Is(err, acs.ErrGone):
		wire.WriteDetail(w, http.StatusGone, strings.TrimSuffix(msg, ": "+acs.ErrGone.Error()))
	case errors.Is(err, acs.ErrSandboxFailed):
		wire.WriteDetail(w, http.StatusServiceUnavailable, strings.TrimSuffix(msg, ": "+acs.ErrSandboxFailed.Error()))
	case errors.As(err, new(*startflow.FieldError)):
		var fe *startflow.FieldError
		errors.As(err, &fe)
		wire.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", fe.Field}, Msg: fe.Msg, Type: "value_error"}})
	case errors.Is(err, acs.ErrCapacity):
		w.Header().Set("Retry-After", "30")
		wire.WriteDetail(w, http.StatusTooManyRequests, strings.TrimSuffix(msg, ": "+acs.ErrCapacity.Error()))
	case errors.Is(err, acs.ErrStorageFull): // before ErrUnavailable, which it wraps
		slog.Error("api: storage full", "error", err)
		wire.WriteInsufficientStorage(w, "Insufficient storage: the service's disk is full, so nothing was changed; retry later")
	case errors.Is(err, acs.ErrUnavailable):
		w.Header().Set("Retry-After", "2")
		wire.WriteDetail(w, http.StatusServiceUnavailable, "Service temporarily unavailable; retry shortly")
	case errors.Is(err, acs.ErrInvalid):
		wire.WriteValidation(w, strictjson.Errors{{Loc: []any{}, Msg: strings.TrimSuffix(msg, ": "+acs.ErrInvalid.Error()), Type: "value_error"}})
	default:
		slog.Error("api: request failed", "error", err)
		wire.WriteDetail(w, http.StatusInternalServerError, "Internal Server Error")
	}
}

// writeBadPageID answers a page_id this API did not issue.
func writeBadPageID(w http.ResponseWriter) {
	wire.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "page_id"},
		Msg: "Unknown page_id: it must be the next_page_id of a previous page", Type: "value_error"}})
}

// readBody reads a request body of at most wire.MaxBodyBytes; on failure it
// answers (413 too large, 408 too slow, 400 otherwise) and returns false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxBodyBytes))
	if err != nil {
		wire.WriteBodyError(w, err)
		return nil, false
	}
	return body, true
}
