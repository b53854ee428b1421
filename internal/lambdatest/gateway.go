package lambdatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Gateway response types, named as in API Gateway. Use them as keys of
// [Gateway.Responses].
const (
	ResponseMissingAuthenticationToken = "MISSING_AUTHENTICATION_TOKEN"
	ResponseUnauthorized               = "UNAUTHORIZED"
	ResponseAccessDenied               = "ACCESS_DENIED"
	ResponseAuthorizerFailure          = "AUTHORIZER_FAILURE"
	ResponseIntegrationFailure         = "INTEGRATION_FAILURE"
	ResponseIntegrationTimeout         = "INTEGRATION_TIMEOUT"
	ResponseRequestTooLarge            = "REQUEST_TOO_LARGE"
	// ResponseDefault4XX and ResponseDefault5XX apply to every response
	// type of that status class that has no override of its own.
	ResponseDefault4XX = "DEFAULT_4XX"
	ResponseDefault5XX = "DEFAULT_5XX"
)

const (
	// DefaultIntegrationTimeout is API Gateway's default (and maximum)
	// integration timeout for REST APIs.
	DefaultIntegrationTimeout = 29 * time.Second
	// maxRequestBody is API Gateway's payload limit (10 MB).
	maxRequestBody = 10 * 1024 * 1024
)

// GatewayRoute is one API Gateway method: an HTTP method on a resource,
// integrated with a Lambda function through a Lambda proxy integration.
type GatewayRoute struct {
	// Method is an HTTP method ("GET", "POST", ...) or "ANY".
	Method string
	// Resource is the API Gateway resource path, e.g.
	// "/api/v1/app-conversations/{conversation_id}" or "/files/{proxy+}".
	Resource string
	// Function is the integration.
	Function *Function
	// Authorize puts the Gateway's REQUEST authorizer in front of the
	// method.
	Authorize bool
}

// GatewayResponse overrides one gateway response type. Zero fields keep the
// default. Body may use $context.error.messageString (the JSON-quoted
// message, or null), $context.error.message, $context.error.responseType
// and $context.requestId, as API Gateway templates do. Header values may be
// written in API Gateway's quoted form ('value').
type GatewayResponse struct {
	StatusCode int
	Body       string
	Headers    map[string]string
}

// GatewayStats counts what a Gateway did.
type GatewayStats struct {
	// Requests is the number of HTTP requests received.
	Requests int
	// AuthorizerInvocations counts invocations of the authorizer function.
	AuthorizerInvocations int
	// AuthorizerCacheHits counts authorizations served from the cache.
	AuthorizerCacheHits int
	// IntegrationInvocations counts invocations of route functions.
	IntegrationInvocations int
	// Responses counts the gateway responses sent, by type.
	Responses map[string]int
}

// Gateway is an http.Handler that behaves like one stage of an API Gateway
// REST API (id [APIID], account [AccountID], region [Region]) whose methods
// use Lambda proxy integrations, optionally behind a REQUEST Lambda
// authorizer whose identity sources are the Authorization header unless
// IdentitySources says otherwise. The stage
// is mounted at the root: the request path is the resource path, and the
// server URL stands for the stage URL.
//
// Set the fields before serving the first request; the Gateway is safe for
// concurrent requests.
type Gateway struct {
	// Authorizer is the REQUEST authorizer used by routes with Authorize.
	Authorizer *Function
	// Routes are the API's methods.
	Routes []GatewayRoute
	// StageName is the stage; default [DefaultStage].
	StageName string
	// StageVariables are passed to functions as stageVariables (nil: null).
	StageVariables map[string]string
	// AuthorizerTTL caches authorizer results per identity source values;
	// 0 disables caching. A cached policy is evaluated again for each
	// request's method ARN, as API Gateway does.
	AuthorizerTTL time.Duration
	// IdentitySources are the authorizer's identity sources as API Gateway
	// writes them (method.request.header.NAME,
	// method.request.querystring.NAME). As in API Gateway, a request in
	// which any of them is missing or empty is refused with 401 before the
	// authorizer runs, and their values together key the cache. Nil means
	// the Authorization header alone; NoIdentitySources means none, so
	// every request reaches the authorizer (API Gateway allows that only
	// with caching off: AuthorizerTTL 0).
	IdentitySources []string
	// IntegrationTimeout bounds each route function invocation; default
	// [DefaultIntegrationTimeout].
	IntegrationTimeout time.Duration
	// Responses overrides gateway responses by type (Response* constants).
	Responses map[string]GatewayResponse
	// Logf, when set, receives an execution-log line for every gateway
	// response with the reason behind it (e.g. t.Logf); clients never see
	// these details, as with API Gateway.
	Logf func(format string, args ...any)

	mu    sync.Mutex
	cache map[string]cachedAuthorization
	stats GatewayStats
}

// NoIdentitySources is the IdentitySources of an authorizer without any.
var NoIdentitySources = []string{}

type cachedAuthorization struct {
	auth    *authorization
	expires time.Time
}

// NewGateway returns a Gateway with the given authorizer (may be nil when
// no route uses Authorize) and routes, and defaults everywhere else.
func NewGateway(auth *Function, routes []GatewayRoute) *Gateway {
	return &Gateway{Authorizer: auth, Routes: routes}
}

// Stats returns a snapshot of the Gateway's counters.
func (g *Gateway) Stats() GatewayStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	s.Responses = make(map[string]int, len(g.stats.Responses))
	for k, v := range g.stats.Responses {
		s.Responses[k] = v
	}
	return s
}

// ClearAuthorizerCache drops every cached authorizer result (like
// flushing the stage's authorizer cache).
func (g *Gateway) ClearAuthorizerCache() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cache = nil
}

func (g *Gateway) count(fn func(s *GatewayStats)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(&g.stats)
}

func (g *Gateway) stage() string {
	if g.StageName != "" {
		return g.StageName
	}
	return DefaultStage
}

// gatewayRequest is what the gateway knows about one request.
type gatewayRequest struct {
	r         *http.Request
	id        string
	extID     string
	trace     string
	received  time.Time
	body      []byte
	route     *GatewayRoute
	params    map[string]string
	sourceIP  string
	path      string
	methodArn string
}

// ServeHTTP handles one request the way API Gateway does: it matches a
// resource and method (403 MISSING_AUTHENTICATION_TOKEN when none), runs the
// authorizer when the method has one, invokes the integration with an
// APIGatewayProxyRequest event and translates its APIGatewayProxyResponse.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.count(func(s *GatewayStats) { s.Requests++ })
	req := &gatewayRequest{
		r:        r,
		id:       uuid.NewString(),
		extID:    newExtendedRequestID(),
		trace:    strings.SplitN(newTraceID(), ";", 2)[0],
		received: time.Now(),
		path:     r.URL.Path,
	}
	if req.path == "" {
		req.path = "/"
	}
	req.sourceIP = r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		req.sourceIP = host
	}

	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		g.fail(w, req, ResponseIntegrationFailure, "", "read request body: "+err.Error())
		return
	}
	if len(body) > maxRequestBody {
		g.fail(w, req, ResponseRequestTooLarge, "", "")
		return
	}
	req.body = body

	req.route, req.params = g.match(r.Method, r.URL.EscapedPath())
	if req.route == nil {
		g.fail(w, req, ResponseMissingAuthenticationToken, "", "")
		return
	}
	req.methodArn = fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s/%s",
		Region, AccountID, APIID, g.stage(), r.Method, strings.TrimPrefix(req.path, "/"))

	var authorizer map[string]any
	if req.route.Authorize {
		var ok bool
		if authorizer, ok = g.authorize(w, req); !ok {
			return
		}
	}
	g.integrate(w, req, authorizer)
}

// authorize runs the REQUEST authorizer (or uses its cached result) and
// evaluates its policy. It writes the gateway response and returns false
// when the request may not proceed; otherwise it returns the
// requestContext.authorizer map for the integration.
func (g *Gateway) authorize(w http.ResponseWriter, req *gatewayRequest) (map[string]any, bool) {
	sources := g.IdentitySources
	if sources == nil {
		sources = []string{"method.request.header.Authorization"}
	}
	if len(sources) == 0 && g.AuthorizerTTL > 0 {
		g.fail(w, req, ResponseAuthorizerFailure, "", "an authorizer without identity sources cannot cache its results")
		return nil, false
	}
	var values []string
	for _, src := range sources {
		v, ok := req.identity(src)
		if !ok {
			g.fail(w, req, ResponseAuthorizerFailure, "", "unsupported identity source "+src)
			return nil, false
		}
		if v == "" {
			g.fail(w, req, ResponseUnauthorized, "", "")
			return nil, false
		}
		values = append(values, v)
	}
	token := strings.Join(values, "\x00")
	if g.Authorizer == nil {
		g.fail(w, req, ResponseAuthorizerFailure, "", "route "+req.route.Resource+" uses an authorizer, but the Gateway has none")
		return nil, false
	}
	auth, latency := g.cachedAuthorization(token)
	if auth == nil {
		event := g.authorizerEvent(req)
		payload, err := json.Marshal(event)
		if err != nil {
			g.fail(w, req, ResponseAuthorizerFailure, "", "marshal authorizer event: "+err.Error())
			return nil, false
		}
		g.count(func(s *GatewayStats) { s.AuthorizerInvocations++ })
		ctx, cancel := context.WithTimeout(req.r.Context(), g.integrationTimeout())
		start := time.Now()
		resp, err := g.Authorizer.Invoke(ctx, payload)
		cancel()
		latency = time.Since(start).Milliseconds()
		if err != nil {
			var fe *FunctionError
			if errors.As(err, &fe) && fe.Message == "Unauthorized" {
				g.fail(w, req, ResponseUnauthorized, "", "")
			} else {
				g.fail(w, req, ResponseAuthorizerFailure, "", "authorizer: "+err.Error())
			}
			return nil, false
		}
		auth, err = parseAuthorizerResponse(resp)
		if err != nil {
			g.fail(w, req, ResponseAuthorizerFailure, "", err.Error())
			return nil, false
		}
		g.storeAuthorization(token, auth)
	}
	switch auth.evaluate(req.methodArn) {
	case decisionExplicitDeny:
		g.fail(w, req, ResponseAccessDenied, "User is not authorized to access this resource with an explicit deny", "")
		return nil, false
	case decisionImplicitDeny:
		g.fail(w, req, ResponseAccessDenied, "User is not authorized to access this resource", "")
		return nil, false
	}
	ctx := make(map[string]any, len(auth.context)+2)
	for k, v := range auth.context {
		ctx[k] = v
	}
	ctx["principalId"] = auth.principalID
	ctx["integrationLatency"] = latency
	return ctx, true
}

// identity returns the value of an identity source in the request, false
// for a kind of source the Gateway does not support.
func (req *gatewayRequest) identity(source string) (string, bool) {
	if name, ok := strings.CutPrefix(source, "method.request.header."); ok {
		return req.r.Header.Get(name), true
	}
	if name, ok := strings.CutPrefix(source, "method.request.querystring."); ok {
		return req.r.URL.Query().Get(name), true
	}
	return "", false
}

// cachedAuthorization returns a live cached result for token, with an
// integration latency of 0 as API Gateway reports for cache hits.
func (g *Gateway) cachedAuthorization(token string) (*authorization, int64) {
	if g.AuthorizerTTL <= 0 {
		return nil, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.cache[token]
	if !ok || time.Now().After(c.expires) {
		delete(g.cache, token)
		return nil, 0
	}
	g.stats.AuthorizerCacheHits++
	return c.auth, 0
}

func (g *Gateway) storeAuthorization(token string, auth *authorization) {
	if g.AuthorizerTTL <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cache == nil {
		g.cache = map[string]cachedAuthorization{}
	}
	g.cache[token] = cachedAuthorization{auth: auth, expires: time.Now().Add(g.AuthorizerTTL)}
}

func (g *Gateway) integrationTimeout() time.Duration {
	if g.IntegrationTimeout > 0 {
		return g.IntegrationTimeout
	}
	return DefaultIntegrationTimeout
}

// integrate invokes the route's function with the proxy event and writes
// its response.
func (g *Gateway) integrate(w http.ResponseWriter, req *gatewayRequest, authorizer map[string]any) {
	if req.route.Function == nil {
		g.fail(w, req, ResponseIntegrationFailure, "", "route "+req.route.Resource+" has no function")
		return
	}
	payload, err := json.Marshal(g.proxyEvent(req, authorizer))
	if err != nil {
		g.fail(w, req, ResponseIntegrationFailure, "", "marshal proxy event: "+err.Error())
		return
	}
	g.count(func(s *GatewayStats) { s.IntegrationInvocations++ })
	ctx, cancel := context.WithTimeout(req.r.Context(), g.integrationTimeout())
	defer cancel()
	resp, err := req.route.Function.Invoke(ctx, payload)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && req.r.Context().Err() == nil {
			g.fail(w, req, ResponseIntegrationTimeout, "", "")
			return
		}
		g.fail(w, req, ResponseIntegrationFailure, "", "integration: "+err.Error())
		return
	}
	out, err := parseProxyResponse(resp)
	if err != nil {
		g.fail(w, req, ResponseIntegrationFailure, "", "Malformed Lambda proxy response: "+err.Error())
		return
	}
	h := w.Header()
	for k, vs := range out.header {
		h[k] = vs
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	g.addGatewayHeaders(h, req)
	w.WriteHeader(out.status)
	_, _ = w.Write(out.body)
}

func (g *Gateway) addGatewayHeaders(h http.Header, req *gatewayRequest) {
	h.Set("x-amzn-RequestId", req.id)
	h.Set("x-amz-apigw-id", req.extID)
	h.Set("X-Amzn-Trace-Id", req.trace)
}

// proxyResponse is a validated APIGatewayProxyResponse.
type proxyResponse struct {
	status int
	header http.Header
	body   []byte
}

// parseProxyResponse validates an events.APIGatewayProxyResponse document
// and merges its headers: a key in multiValueHeaders replaces the same key
// in headers.
func parseProxyResponse(b []byte) (*proxyResponse, error) {
	var raw struct {
		StatusCode        *int                `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
		Body              *string             `json:"body"`
		IsBase64Encoded   bool                `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not an APIGatewayProxyResponse: %w", err)
	}
	if raw.StatusCode == nil {
		return nil, errors.New("no statusCode")
	}
	if *raw.StatusCode < 100 || *raw.StatusCode > 599 {
		return nil, fmt.Errorf("invalid statusCode %d", *raw.StatusCode)
	}
	out := &proxyResponse{status: *raw.StatusCode, header: http.Header{}}
	for k, v := range raw.Headers {
		out.header.Set(k, v)
	}
	multi := http.Header{}
	for k, vs := range raw.MultiValueHeaders {
		for _, v := range vs {
			multi.Add(k, v)
		}
	}
	for k, vs := range multi {
		out.header[k] = vs
	}
	if raw.Body != nil {
		if raw.IsBase64Encoded {
			body, err := base64.StdEncoding.DecodeString(*raw.Body)
			if err != nil {
				return nil, fmt.Errorf("isBase64Encoded body is not base64: %w", err)
			}
			out.body = body
		} else {
			out.body = []byte(*raw.Body)
		}
	}
	return out, nil
}

// match finds the method for an escaped request path: the most specific
// matching resource (at the first differing segment a literal beats a
// {param}, which beats a {greedy+}), then the exact method on it, else ANY.
// A method missing on the best resource is not looked up on others, as in
// API Gateway. Path parameters are URL-decoded.
func (g *Gateway) match(method, escapedPath string) (*GatewayRoute, map[string]string) {
	segs := splitPath(escapedPath)
	var (
		bestResource string
		bestScore    []int
		bestParams   map[string]string
		found        bool
	)
	for i := range g.Routes {
		res := g.Routes[i].Resource
		if found && res == bestResource {
			continue
		}
		params, score, ok := matchResource(res, segs)
		if !ok {
			continue
		}
		if !found || lessScore(score, bestScore) {
			bestResource, bestScore, bestParams, found = res, score, params, true
		}
	}
	if !found {
		return nil, nil
	}
	var anyRoute *GatewayRoute
	for i := range g.Routes {
		rt := &g.Routes[i]
		if rt.Resource != bestResource {
			continue
		}
		if strings.EqualFold(rt.Method, method) {
			return rt, bestParams
		}
		if strings.EqualFold(rt.Method, "ANY") && anyRoute == nil {
			anyRoute = rt
		}
	}
	if anyRoute != nil {
		return anyRoute, bestParams
	}
	return nil, nil
}

// splitPath splits an escaped path into segments; a single trailing slash
// is ignored.
func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

const (
	segLiteral = iota
	segParam
	segGreedy
)

// matchResource matches escaped path segments against a resource path.
func matchResource(resource string, segs []string) (map[string]string, []int, bool) {
	rsegs := splitPath(resource)
	var params map[string]string
	setParam := func(k, v string) {
		if params == nil {
			params = map[string]string{}
		}
		params[k] = v
	}
	score := make([]int, 0, len(rsegs))
	for i, rs := range rsegs {
		switch {
		case strings.HasPrefix(rs, "{") && strings.HasSuffix(rs, "+}") && i == len(rsegs)-1:
			if i >= len(segs) {
				return nil, nil, false
			}
			parts := make([]string, 0, len(segs)-i)
			for _, s := range segs[i:] {
				parts = append(parts, unescape(s))
			}
			setParam(rs[1:len(rs)-2], strings.Join(parts, "/"))
			return params, append(score, segGreedy), true
		case strings.HasPrefix(rs, "{") && strings.HasSuffix(rs, "}"):
			if i >= len(segs) || segs[i] == "" {
				return nil, nil, false
			}
			setParam(rs[1:len(rs)-1], unescape(segs[i]))
			score = append(score, segParam)
		default:
			if i >= len(segs) || unescape(segs[i]) != rs {
				return nil, nil, false
			}
			score = append(score, segLiteral)
		}
	}
	if len(segs) != len(rsegs) {
		return nil, nil, false
	}
	return params, score, true
}

func lessScore(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) > len(b)
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// The wire shapes below follow what API Gateway sends, key for key,
// including the nulls; the aws-lambda-go event types decode them but omit
// some keys (deploymentId, identity.principalOrgId) and nulls when encoding.

type requestContextWire struct {
	ResourceID        string         `json:"resourceId"`
	ResourcePath      string         `json:"resourcePath"`
	HTTPMethod        string         `json:"httpMethod"`
	ExtendedRequestID string         `json:"extendedRequestId"`
	RequestTime       string         `json:"requestTime"`
	Path              string         `json:"path"`
	AccountID         string         `json:"accountId"`
	Protocol          string         `json:"protocol"`
	Stage             string         `json:"stage"`
	DomainPrefix      string         `json:"domainPrefix"`
	RequestTimeEpoch  int64          `json:"requestTimeEpoch"`
	RequestID         string         `json:"requestId"`
	Identity          identityWire   `json:"identity"`
	DomainName        string         `json:"domainName"`
	DeploymentID      string         `json:"deploymentId"`
	APIID             string         `json:"apiId"`
	Authorizer        map[string]any `json:"authorizer,omitempty"`
}

type identityWire struct {
	CognitoIdentityPoolID         *string `json:"cognitoIdentityPoolId"`
	AccountID                     *string `json:"accountId"`
	CognitoIdentityID             *string `json:"cognitoIdentityId"`
	Caller                        *string `json:"caller"`
	SourceIP                      string  `json:"sourceIp"`
	PrincipalOrgID                *string `json:"principalOrgId"`
	AccessKey                     *string `json:"accessKey"`
	CognitoAuthenticationType     *string `json:"cognitoAuthenticationType"`
	CognitoAuthenticationProvider *string `json:"cognitoAuthenticationProvider"`
	UserArn                       *string `json:"userArn"`
	UserAgent                     *string `json:"userAgent"`
	User                          *string `json:"user"`
}

type proxyEventWire struct {
	Resource                        string              `json:"resource"`
	Path                            string              `json:"path"`
	HTTPMethod                      string              `json:"httpMethod"`
	Headers                         map[string]string   `json:"headers"`
	MultiValueHeaders               map[string][]string `json:"multiValueHeaders"`
	QueryStringParameters           map[string]string   `json:"queryStringParameters"`
	MultiValueQueryStringParameters map[string][]string `json:"multiValueQueryStringParameters"`
	PathParameters                  map[string]string   `json:"pathParameters"`
	StageVariables                  map[string]string   `json:"stageVariables"`
	RequestContext                  requestContextWire  `json:"requestContext"`
	Body                            *string             `json:"body"`
	IsBase64Encoded                 bool                `json:"isBase64Encoded"`
}

type authorizerEventWire struct {
	Type                            string              `json:"type"`
	MethodArn                       string              `json:"methodArn"`
	Resource                        string              `json:"resource"`
	Path                            string              `json:"path"`
	HTTPMethod                      string              `json:"httpMethod"`
	Headers                         map[string]string   `json:"headers"`
	MultiValueHeaders               map[string][]string `json:"multiValueHeaders"`
	QueryStringParameters           map[string]string   `json:"queryStringParameters"`
	MultiValueQueryStringParameters map[string][]string `json:"multiValueQueryStringParameters"`
	PathParameters                  map[string]string   `json:"pathParameters"`
	StageVariables                  map[string]string   `json:"stageVariables"`
	RequestContext                  requestContextWire  `json:"requestContext"`
}

// headers returns the single- and multi-value header maps API Gateway
// builds: the request headers (canonicalized by net/http), Host, and the
// X-Forwarded-* and X-Amzn-Trace-Id headers API Gateway adds.
func (req *gatewayRequest) headers() (map[string]string, map[string][]string) {
	h := req.r.Header.Clone()
	h.Set("Host", req.r.Host)
	xff := req.sourceIP
	if prev := h.Get("X-Forwarded-For"); prev != "" {
		xff = prev + ", " + req.sourceIP
	}
	h.Set("X-Forwarded-For", xff)
	proto, port := "http", ""
	if req.r.TLS != nil {
		proto = "https"
	}
	if addr, ok := req.r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, p, err := net.SplitHostPort(addr.String()); err == nil {
			port = p
		}
	}
	h.Set("X-Forwarded-Proto", proto)
	if port != "" {
		h.Set("X-Forwarded-Port", port)
	}
	h.Set("X-Amzn-Trace-Id", req.trace)
	single := make(map[string]string, len(h))
	multi := make(map[string][]string, len(h))
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		single[k] = vs[len(vs)-1]
		multi[k] = append([]string(nil), vs...)
	}
	return single, multi
}

// query returns the single- (last value) and multi-value query maps, both
// nil when the request has no query string.
func (req *gatewayRequest) query() (map[string]string, map[string][]string) {
	q, _ := url.ParseQuery(req.r.URL.RawQuery)
	if len(q) == 0 {
		return nil, nil
	}
	single := make(map[string]string, len(q))
	for k, vs := range q {
		single[k] = vs[len(vs)-1]
	}
	return single, q
}

func (g *Gateway) requestContext(req *gatewayRequest) requestContextWire {
	var ua *string
	if v := req.r.Header.Get("User-Agent"); v != "" {
		ua = &v
	}
	return requestContextWire{
		ResourceID:        resourceID(req.route.Resource),
		ResourcePath:      req.route.Resource,
		HTTPMethod:        req.r.Method,
		ExtendedRequestID: req.extID,
		RequestTime:       req.received.UTC().Format("02/Jan/2006:15:04:05 -0700"),
		Path:              "/" + g.stage() + req.path,
		AccountID:         AccountID,
		Protocol:          req.r.Proto,
		Stage:             g.stage(),
		DomainPrefix:      APIID,
		RequestTimeEpoch:  req.received.UnixMilli(),
		RequestID:         req.id,
		Identity:          identityWire{SourceIP: req.sourceIP, UserAgent: ua},
		DomainName:        APIID + ".execute-api." + Region + ".amazonaws.com",
		DeploymentID:      resourceID("deployment:" + g.stage()),
		APIID:             APIID,
	}
}

func (g *Gateway) authorizerEvent(req *gatewayRequest) authorizerEventWire {
	headers, multiHeaders := req.headers()
	query, multiQuery := req.query()
	return authorizerEventWire{
		Type:                            "REQUEST",
		MethodArn:                       req.methodArn,
		Resource:                        req.route.Resource,
		Path:                            req.path,
		HTTPMethod:                      req.r.Method,
		Headers:                         headers,
		MultiValueHeaders:               multiHeaders,
		QueryStringParameters:           query,
		MultiValueQueryStringParameters: multiQuery,
		PathParameters:                  req.params,
		StageVariables:                  g.StageVariables,
		RequestContext:                  g.requestContext(req),
	}
}

func (g *Gateway) proxyEvent(req *gatewayRequest, authorizer map[string]any) proxyEventWire {
	headers, multiHeaders := req.headers()
	query, multiQuery := req.query()
	rc := g.requestContext(req)
	rc.Authorizer = authorizer
	ev := proxyEventWire{
		Resource:                        req.route.Resource,
		Path:                            req.path,
		HTTPMethod:                      req.r.Method,
		Headers:                         headers,
		MultiValueHeaders:               multiHeaders,
		QueryStringParameters:           query,
		MultiValueQueryStringParameters: multiQuery,
		PathParameters:                  req.params,
		StageVariables:                  g.StageVariables,
		RequestContext:                  rc,
	}
	if len(req.body) > 0 {
		var body string
		if isTextual(req.r.Header.Get("Content-Type")) && utf8.Valid(req.body) {
			body = string(req.body)
		} else {
			body = base64.StdEncoding.EncodeToString(req.body)
			ev.IsBase64Encoded = true
		}
		ev.Body = &body
	}
	return ev
}

// isTextual reports whether a request body of this content type is passed
// to the function as text (otherwise it is base64-encoded): text/*,
// application/json, application/xml, application/x-www-form-urlencoded and
// the +json and +xml structured syntaxes.
func isTextual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json",
		mt == "application/xml",
		mt == "application/x-www-form-urlencoded",
		strings.HasSuffix(mt, "+json"),
		strings.HasSuffix(mt, "+xml"):
		return true
	}
	return false
}

// gatewayResponseDefault is API Gateway's default for one response type.
type gatewayResponseDefault struct {
	status    int
	errorType string // x-amzn-ErrorType
	message   string // $context.error.message; "" means null
	key       string // the JSON key of the default body
}

var gatewayResponseDefaults = map[string]gatewayResponseDefault{
	ResponseMissingAuthenticationToken: {403, "MissingAuthenticationTokenException", "Missing Authentication Token", "message"},
	ResponseUnauthorized:               {401, "UnauthorizedException", "Unauthorized", "message"},
	ResponseAccessDenied:               {403, "AccessDeniedException", "User is not authorized to access this resource", "Message"},
	ResponseAuthorizerFailure:          {500, "AuthorizerConfigurationException", "", "message"},
	ResponseIntegrationFailure:         {502, "InternalServerErrorException", "Internal server error", "message"},
	ResponseIntegrationTimeout:         {504, "InternalServerErrorException", "Endpoint request timed out", "message"},
	ResponseRequestTooLarge:            {413, "RequestTooLargeException", "Request Too Long", "message"},
}

// fail writes the gateway response of type typ. message overrides the
// default $context.error.message; detail goes to Logf only.
func (g *Gateway) fail(w http.ResponseWriter, req *gatewayRequest, typ, message, detail string) {
	if g.Logf != nil {
		if detail == "" {
			detail = "-"
		}
		g.Logf("lambdatest gateway: %s %s: %s (request %s): %s", req.r.Method, req.r.URL.Path, typ, req.id, detail)
	}
	g.count(func(s *GatewayStats) {
		if s.Responses == nil {
			s.Responses = map[string]int{}
		}
		s.Responses[typ]++
	})
	def := gatewayResponseDefaults[typ]
	if message == "" {
		message = def.message
	}
	var msgString string
	if message == "" {
		msgString = "null"
	} else {
		b, _ := json.Marshal(message)
		msgString = string(b)
	}
	status := def.status
	body := fmt.Sprintf(`{"%s":%s}`, def.key, msgString)
	var headers map[string]string

	override, ok := g.Responses[typ]
	if !ok {
		class := ResponseDefault4XX
		if status >= 500 {
			class = ResponseDefault5XX
		}
		override, ok = g.Responses[class]
	}
	if ok {
		if override.StatusCode != 0 {
			status = override.StatusCode
		}
		if override.Body != "" {
			body = strings.NewReplacer(
				"$context.error.messageString", msgString,
				"$context.error.message", message,
				"$context.error.responseType", typ,
				"$context.requestId", req.id,
			).Replace(override.Body)
		}
		headers = override.Headers
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-amzn-ErrorType", def.errorType)
	g.addGatewayHeaders(h, req)
	for k, v := range headers {
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		h.Set(k, v)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// resourceID returns a stable 6-character id like API Gateway's resource
// ids.
func resourceID(s string) string {
	h := fnv.New32a()
	_, _ = io.WriteString(h, s)
	id := strconv.FormatUint(uint64(h.Sum32()), 36)
	for len(id) < 6 {
		id = "0" + id
	}
	return id[len(id)-6:]
}

func newExtendedRequestID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])[:14] + "="
}
