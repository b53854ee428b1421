// Package apigw adapts the V1 API to Amazon API Gateway (REST, Lambda proxy
// integration): the REQUEST authorizer that resolves Bearer API keys and
// browser session cookies, the
// authorizer context that carries the user to the route functions, and the
// proxy handler each route function serves.
//
// The authorizer answers API Gateway the documented way: an error whose
// message is exactly "Unauthorized" for a missing or unknown key (API
// Gateway answers 401, the UNAUTHORIZED gateway response), any other error
// when the store is unavailable (AUTHORIZER_FAILURE, which the stack maps
// to 503 with Retry-After), and otherwise an Allow policy over the whole
// stage (arn:…:{api}/{stage}/*/*), so a cached decision is valid for every
// route and not only the first one the key called.
package apigw

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/v1wire"
)

// The authorizer context keys. API Gateway passes context values to the
// integration as strings.
const (
	CtxUserID    = "user_id"
	CtxUserName  = "user_name"
	CtxAdmin     = "admin"
	CtxCreatedAt = "created_at"
	// CtxAuthMethod says how the user was authenticated (acs.AuthMethod:
	// "api_key" or "session"): the route function applies the session
	// cookie's cross-site check from it.
	CtxAuthMethod = "auth_method"
)

// ErrUnauthorized is the authorizer error API Gateway turns into 401.
var ErrUnauthorized = errors.New("Unauthorized")

// Authorizer resolves the Authorization header of a REQUEST authorizer
// event to its user, or, without that header, its browser session cookie
// (api.SessionCookie). It returns ErrUnauthorized for a missing, malformed
// or unknown key or session; another error when the store failed (never a
// Deny for a store failure, so an outage is not cached as a refusal).
func Authorizer(store accounts.CallerStore) func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	return func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
		u, method, err := authenticate(ctx, store, req)
		if errors.Is(err, acs.ErrUnauthorized) {
			return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
		}
		if err != nil {
			slog.Error("authorizer: resolve API key", "error", err)
			return events.APIGatewayCustomAuthorizerResponse{}, errors.New("authorizer: the key store is unavailable")
		}
		resource, err := stageWildcard(req.MethodArn)
		if err != nil {
			slog.Error("authorizer: method ARN", "arn", req.MethodArn, "error", err)
			return events.APIGatewayCustomAuthorizerResponse{}, err
		}
		return events.APIGatewayCustomAuthorizerResponse{
			PrincipalID: u.ID,
			PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
				Version: "2012-10-17",
				Statement: []events.IAMPolicyStatement{{
					Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: []string{resource},
				}},
			},
			Context: map[string]any{
				CtxUserID: u.ID, CtxUserName: u.Name, CtxAdmin: strconv.FormatBool(u.Admin),
				CtxCreatedAt: u.CreatedAt.UTC().Format(time.RFC3339Nano), CtxAuthMethod: string(method),
			},
		}, nil
	}
}

// authenticate resolves the request's Bearer key, or without an
// Authorization header its session cookie.
func authenticate(ctx context.Context, store accounts.CallerStore, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (acs.User, acs.AuthMethod, error) {
	if h := header(req.Headers, req.MultiValueHeaders, "Authorization"); h != "" {
		u, err := api.Authenticate(ctx, store, h)
		return u, acs.AuthByAPIKey, err
	}
	if raw := header(req.Headers, req.MultiValueHeaders, "Cookie"); raw != "" {
		if cs, err := http.ParseCookie(raw); err == nil {
			for _, c := range cs {
				if c.Name == api.SessionCookie {
					u, _, err := accounts.SessionUser(ctx, store, c.Value)
					return u, acs.AuthBySession, err
				}
			}
		}
	}
	u, err := api.Authenticate(ctx, store, "")
	return u, acs.AuthByAPIKey, err
}

// stageWildcard turns arn:aws:execute-api:{region}:{account}:{api}/{stage}/
// {method}/{path} into arn:aws:execute-api:{region}:{account}:{api}/{stage}/*/*.
func stageWildcard(methodArn string) (string, error) {
	parts := strings.SplitN(methodArn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "execute-api" {
		return "", errors.New("authorizer: not an execute-api method ARN")
	}
	segs := strings.SplitN(parts[5], "/", 3)
	if len(segs) < 2 || segs[0] == "" || segs[1] == "" {
		return "", errors.New("authorizer: method ARN without api id and stage")
	}
	parts[5] = segs[0] + "/" + segs[1] + "/*/*"
	return strings.Join(parts, ":"), nil
}

// header reads a header case-insensitively (API Gateway keeps the client's
// case).
func header(single map[string]string, multi map[string][]string, name string) string {
	for k, v := range single {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	for k, v := range multi {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[len(v)-1]
		}
	}
	return ""
}

// UserFromAuthorizer puts the user of the API Gateway authorizer context
// (set by Authorizer) into the request context, where the API's
// ContextAuthOnly mode looks for it. A request without that context (a
// webhook route, which has no authorizer) passes unchanged.
func UserFromAuthorizer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw, ok := core.GetAPIGatewayContextFromContext(r.Context())
		if ok {
			if u, ok := userOf(gw.Authorizer); ok {
				m, _ := gw.Authorizer[CtxAuthMethod].(string)
				r = r.WithContext(acs.WithAuthMethod(acs.WithUser(r.Context(), u), acs.AuthMethod(m)))
			}
		}
		next.ServeHTTP(w, r)
	})
}

func userOf(m map[string]any) (acs.User, bool) {
	str := func(k string) string {
		switch v := m[k].(type) {
		case string:
			return v
		case bool:
			return strconv.FormatBool(v)
		case nil:
			return ""
		default:
			return ""
		}
	}
	id := str(CtxUserID)
	if id == "" {
		return acs.User{}, false
	}
	admin, _ := strconv.ParseBool(str(CtxAdmin))
	created, _ := time.Parse(time.RFC3339Nano, str(CtxCreatedAt))
	return acs.User{ID: id, Name: str(CtxUserName), Admin: admin, CreatedAt: created}, true
}

// Handler is the Lambda handler of a route function: the API Gateway REST
// proxy event becomes an http.Request for h (with the authorizer's user),
// and its response the proxy response.
func Handler(h http.Handler) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return httpadapter.New(UserFromAuthorizer(h)).ProxyWithContext
}

// GatewayResponse is an answer API Gateway gives itself (no function
// answered: no route, no or a refused key, an authorizer or integration
// failure). The stack sets these on the REST API so that clients see the
// V1 error shape ({"detail": ...}) and the statuses `acs serve` gives.
type GatewayResponse struct {
	// Type is API Gateway's response type (UNAUTHORIZED, ...).
	Type       string
	StatusCode int
	Body       string
	// Headers are literal values (the stack quotes them for API Gateway).
	Headers map[string]string
}

// GatewayResponses are the API's gateway responses: each one the answer
// `acs serve` gives to the same domain error, through the one table from
// error code to HTTP answer (v1wire.ErrorResponse).
var GatewayResponses = []GatewayResponse{
	// No key, or a key the authorizer refused.
	gatewayResponse("UNAUTHORIZED", &acs.Error{Code: acs.EUNAUTHORIZED,
		Message: "missing or invalid API key (Authorization: Bearer <API_KEY>)", Challenge: "Bearer"}),
	gatewayResponse("ACCESS_DENIED", &acs.Error{Code: acs.EUNAUTHORIZED, Message: "invalid API key", Challenge: "Bearer"}),
	// The authorizer could not reach the key store: retry, never a refusal.
	gatewayResponse("AUTHORIZER_FAILURE", acs.ErrUnavailable),
	gatewayResponse("AUTHORIZER_CONFIGURATION_ERROR", acs.ErrUnavailable),
	// No such route (API Gateway says "Missing Authentication Token").
	gatewayResponse("MISSING_AUTHENTICATION_TOKEN", &acs.Error{Code: acs.ENOTFOUND, Message: "Not Found"}),
	gatewayResponse("THROTTLED", &acs.Error{Code: acs.ECAPACITY, Message: "Too many requests; retry shortly", RetryAfter: time.Second}),
	gatewayResponse("REQUEST_TOO_LARGE", &acs.Error{Code: acs.ETOOLARGE, Message: "Request body too large"}),
	gatewayResponse("INTEGRATION_FAILURE", acs.ErrUnavailable),
	gatewayResponse("INTEGRATION_TIMEOUT", &acs.Error{Code: acs.ETIMEOUT, Message: "The request timed out; retry shortly"}),
}

// gatewayResponse is the gateway response of type typ that answers err as
// the API does, without Content-Type (API Gateway sets it from the
// response template).
func gatewayResponse(typ string, err error) GatewayResponse {
	status, header, body := v1wire.ErrorResponse(err)
	r := GatewayResponse{Type: typ, StatusCode: status, Body: string(body)}
	for k := range header {
		if k == "Content-Type" {
			continue
		}
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		if k == "Www-Authenticate" {
			r.Headers["WWW-Authenticate"] = header.Get(k) // as the stack has always spelled it
			continue
		}
		r.Headers[k] = header.Get(k)
	}
	return r
}
