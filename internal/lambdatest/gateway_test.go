package lambdatest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// gatewayEnv is an API with an authorizer and two route functions.
type gatewayEnv struct {
	gw      *Gateway
	srv     *httptest.Server
	auth    *Function
	param   *Function // serves the {param} resources
	literal *Function // serves the literal resource
}

// newGatewayEnv starts the functions and a server for the Gateway; configure
// may adjust the Gateway before it serves.
func newGatewayEnv(t *testing.T, configure func(*Gateway)) *gatewayEnv {
	t.Helper()
	e := &gatewayEnv{
		auth:    startEcho(t, Options{Name: "authorizer"}),
		param:   startEcho(t, Options{Name: "param"}),
		literal: startEcho(t, Options{Name: "literal"}),
	}
	e.gw = NewGateway(e.auth, []GatewayRoute{
		{Method: "GET", Resource: "/api/v1/app-conversations/{conversation_id}", Function: e.param, Authorize: true},
		{Method: "GET", Resource: "/api/v1/app-conversations/search", Function: e.literal, Authorize: true},
		{Method: "GET", Resource: "/api/v1/app-conversations/{conversation_id}/events", Function: e.param, Authorize: true},
		{Method: "ANY", Resource: "/public/{proxy+}", Function: e.param},
		{Method: "POST", Resource: "/upload", Function: e.param},
	})
	e.gw.Logf = t.Logf
	if configure != nil {
		configure(e.gw)
	}
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(e.srv.Close)
	return e
}

type gatewayResult struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic map.
func (r gatewayResult) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// event returns the proxy event echoed by echofn.
func (r gatewayResult) event(t *testing.T) map[string]any {
	t.Helper()
	m := r.json(t)
	ev, ok := m["event"].(map[string]any)
	if !ok {
		t.Fatalf("response %s has no echoed event", r.body)
	}
	return ev
}

func (e *gatewayEnv) do(t *testing.T, method, path, token string, body []byte, header map[string]string) gatewayResult {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return gatewayResult{status: resp.StatusCode, header: resp.Header, body: b}
}

func expectGatewayResponse(t *testing.T, r gatewayResult, status int, body string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	var got, want any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("body = %s, want %s", r.body, body)
	}
}

func TestGatewayRoutingPrecedence(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)

	r := e.do(t, "GET", "/api/v1/app-conversations/search", "allow", nil, nil)
	if r.status != 200 || r.header.Get("X-Function") != "literal" {
		t.Fatalf("literal resource: status %d, served by %q; want 200 from literal", r.status, r.header.Get("X-Function"))
	}

	r = e.do(t, "GET", "/api/v1/app-conversations/c-1", "allow", nil, nil)
	if r.status != 200 || r.header.Get("X-Function") != "param" {
		t.Fatalf("param resource: status %d, served by %q", r.status, r.header.Get("X-Function"))
	}
	ev := r.event(t)
	if ev["resource"] != "/api/v1/app-conversations/{conversation_id}" {
		t.Errorf("resource = %v", ev["resource"])
	}
	if pp, _ := ev["pathParameters"].(map[string]any); pp["conversation_id"] != "c-1" {
		t.Errorf("pathParameters = %v", ev["pathParameters"])
	}

	r = e.do(t, "GET", "/api/v1/app-conversations/c%201%2Fx/events", "allow", nil, nil)
	ev = r.event(t)
	if pp, _ := ev["pathParameters"].(map[string]any); pp["conversation_id"] != "c 1/x" {
		t.Errorf("URL-encoded path parameter: pathParameters = %v", ev["pathParameters"])
	}

	r = e.do(t, "DELETE", "/public/a/b/c.txt", "", nil, nil)
	ev = r.event(t)
	if pp, _ := ev["pathParameters"].(map[string]any); r.status != 200 || pp["proxy"] != "a/b/c.txt" {
		t.Errorf("greedy resource: status %d, pathParameters %v", r.status, ev["pathParameters"])
	}
}

func TestGatewayMatch(t *testing.T) {
	t.Parallel()
	g := NewGateway(nil, []GatewayRoute{
		{Method: "GET", Resource: "/"},
		{Method: "GET", Resource: "/a/{x}/c"},
		{Method: "GET", Resource: "/a/b/{y}"},
		{Method: "ANY", Resource: "/a/{proxy+}"},
		{Method: "POST", Resource: "/items/{id}"},
		{Method: "GET", Resource: "/items/new"},
	})
	for _, tc := range []struct {
		method, path, resource string
	}{
		{"GET", "/", "/"},
		{"GET", "/a/b/c", "/a/b/{y}"}, // literal "b" beats {x} at the first difference
		{"GET", "/a/z/c", "/a/{x}/c"},
		{"GET", "/a/z/d", "/a/{proxy+}"},
		{"PUT", "/a/z", "/a/{proxy+}"},
		{"GET", "/a/b/c/", "/a/b/{y}"}, // a trailing slash is ignored
		{"POST", "/items/123", "/items/{id}"},
		{"POST", "/items/new", ""}, // the best resource has no POST: no fallback
		{"GET", "/nothing", ""},
		{"GET", "/a", ""}, // {proxy+} needs at least one segment
	} {
		rt, _ := g.match(tc.method, tc.path)
		got := ""
		if rt != nil {
			got = rt.Resource
		}
		if got != tc.resource {
			t.Errorf("%s %s matched %q, want %q", tc.method, tc.path, got, tc.resource)
		}
	}
}

func TestGatewayMissingRoute(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	r := e.do(t, "GET", "/no/such/route", "allow", nil, nil)
	expectGatewayResponse(t, r, 403, `{"message":"Missing Authentication Token"}`)
	if got := r.header.Get("x-amzn-ErrorType"); got != "MissingAuthenticationTokenException" {
		t.Errorf("x-amzn-ErrorType = %q", got)
	}
	// A known resource without the method answers the same way.
	r = e.do(t, "POST", "/api/v1/app-conversations/search", "allow", nil, nil)
	expectGatewayResponse(t, r, 403, `{"message":"Missing Authentication Token"}`)
	if n := e.auth.Invocations(); n != 0 {
		t.Errorf("the authorizer ran %d times for unmatched routes", n)
	}
}

func TestGatewayMissingAuthorizationHeader(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	r := e.do(t, "GET", "/api/v1/app-conversations/c-1", "", nil, nil)
	expectGatewayResponse(t, r, 401, `{"message":"Unauthorized"}`)
	r = e.do(t, "GET", "/api/v1/app-conversations/c-1", "", nil, map[string]string{"Authorization": ""})
	expectGatewayResponse(t, r, 401, `{"message":"Unauthorized"}`)
	if n := e.auth.Invocations(); n != 0 {
		t.Errorf("authorizer invocations = %d, want 0", n)
	}
	if s := e.gw.Stats(); s.AuthorizerInvocations != 0 || s.IntegrationInvocations != 0 || s.Responses[ResponseUnauthorized] != 2 {
		t.Errorf("stats = %+v", s)
	}
}

// Identity sources: every one must be present (a second source refuses
// requests that carry only the first); without any, every request reaches
// the authorizer, which then decides on whatever the request carries.
func TestGatewayIdentitySources(t *testing.T) {
	t.Parallel()
	const path = "/api/v1/app-conversations/c-1"
	cookie := map[string]string{"Cookie": "acs_session=s"}
	both := withSources(t, []string{"method.request.header.Authorization", "method.request.header.Cookie"})
	expectGatewayResponse(t, both.do(t, "GET", path, "allow", nil, nil), 401, `{"message":"Unauthorized"}`)
	expectGatewayResponse(t, both.do(t, "GET", path, "", nil, cookie), 401, `{"message":"Unauthorized"}`)
	if n := both.auth.Invocations(); n != 0 {
		t.Errorf("both sources: the authorizer ran %d times for requests lacking one", n)
	}
	if r := both.do(t, "GET", path, "allow", nil, cookie); r.status != 200 {
		t.Errorf("both sources present: status %d (%s)", r.status, r.body)
	}

	none := withSources(t, NoIdentitySources)
	// echofn's authorizer fails a request without a token it knows: the
	// point is that it ran.
	if r := none.do(t, "GET", path, "", nil, cookie); r.status != 500 || none.auth.Invocations() != 1 {
		t.Errorf("no sources, cookie only: status %d, %d authorizer runs; want the authorizer to decide", r.status, none.auth.Invocations())
	}
	if r := none.do(t, "GET", path, "allow", nil, nil); r.status != 200 || none.auth.Invocations() != 2 {
		t.Errorf("no sources, Bearer: status %d, %d authorizer runs", r.status, none.auth.Invocations())
	}
	none.gw.AuthorizerTTL = time.Minute
	if r := none.do(t, "GET", path, "allow", nil, nil); r.status != 500 {
		t.Errorf("caching without identity sources: status %d, want an authorizer failure", r.status)
	}
}

func withSources(t *testing.T, sources []string) *gatewayEnv {
	return newGatewayEnv(t, func(g *Gateway) { g.IdentitySources = sources })
}

func TestGatewayAuthorizerDecisions(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	const path = "/api/v1/app-conversations/c-1"
	for _, tc := range []struct {
		token  string
		status int
		body   string
	}{
		{"deny", 403, `{"Message":"User is not authorized to access this resource with an explicit deny"}`},
		{"other", 403, `{"Message":"User is not authorized to access this resource"}`},
		{"unauthorized", 401, `{"message":"Unauthorized"}`},
		{"error", 500, `{"message":null}`},
		{"invalid", 500, `{"message":null}`},
		{"bad-context", 500, `{"message":null}`},
	} {
		t.Run(tc.token, func(t *testing.T) {
			expectGatewayResponse(t, e.do(t, "GET", path, tc.token, nil, nil), tc.status, tc.body)
		})
	}
	if n := e.param.Invocations(); n != 0 {
		t.Errorf("the route function ran %d times for refused requests", n)
	}
	for _, token := range []string{"allow", "allow-string", "allow-all"} {
		if r := e.do(t, "GET", path, token, nil, nil); r.status != 200 {
			t.Errorf("token %s: status %d (%s), want 200", token, r.status, r.body)
		}
	}
}

func TestGatewayResponseOverrides(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, func(g *Gateway) {
		g.Responses = map[string]GatewayResponse{
			ResponseUnauthorized: {
				Body:    `{"error":"unauthenticated","detail":$context.error.messageString,"type":"$context.error.responseType"}`,
				Headers: map[string]string{"WWW-Authenticate": "'Bearer realm=\"acs\"'"},
			},
			ResponseDefault4XX: {
				Headers: map[string]string{"Access-Control-Allow-Origin": "'*'"},
			},
			ResponseAccessDenied: {StatusCode: 404, Body: `{"message":"not found"}`},
		}
	})
	r := e.do(t, "GET", "/api/v1/app-conversations/c-1", "", nil, nil)
	expectGatewayResponse(t, r, 401, `{"error":"unauthenticated","detail":"Unauthorized","type":"UNAUTHORIZED"}`)
	if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="acs"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("a specific override must not inherit DEFAULT_4XX headers, got %q", got)
	}

	r = e.do(t, "GET", "/nowhere", "", nil, nil)
	expectGatewayResponse(t, r, 403, `{"message":"Missing Authentication Token"}`)
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("DEFAULT_4XX header: Access-Control-Allow-Origin = %q, want *", got)
	}

	expectGatewayResponse(t, e.do(t, "GET", "/api/v1/app-conversations/c-1", "deny", nil, nil), 404, `{"message":"not found"}`)
}

func TestGatewayAuthorizerContextReachesRoute(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	r := e.do(t, "GET", "/api/v1/app-conversations/c-9", "allow", nil, nil)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	rc := r.event(t)["requestContext"].(map[string]any)
	authz, ok := rc["authorizer"].(map[string]any)
	if !ok {
		t.Fatalf("requestContext.authorizer = %v", rc["authorizer"])
	}
	want := map[string]any{
		"principalId": "user-42",
		"userId":      "user-42",
		"tenantId":    "tenant-1",
		"admin":       "true",
		"quota":       "42",
		"ratio":       "1.5",
	}
	for k, v := range want {
		if authz[k] != v {
			t.Errorf("authorizer[%q] = %#v, want %#v", k, authz[k], v)
		}
	}
	if _, ok := authz["integrationLatency"].(float64); !ok {
		t.Errorf("authorizer.integrationLatency = %#v, want a number", authz["integrationLatency"])
	}

	// The typed view a Go handler gets.
	var typed events.APIGatewayProxyRequest
	ev, _ := json.Marshal(r.event(t))
	if err := json.Unmarshal(ev, &typed); err != nil {
		t.Fatal(err)
	}
	if typed.RequestContext.Authorizer["tenantId"] != "tenant-1" || typed.PathParameters["conversation_id"] != "c-9" {
		t.Errorf("typed event: authorizer %v, path parameters %v", typed.RequestContext.Authorizer, typed.PathParameters)
	}

	// Response headers: multiValueHeaders win over headers for the same key.
	if got := r.header.Values("Set-Cookie"); !slices.Equal(got, []string{"a=1", "b=2"}) {
		t.Errorf("Set-Cookie = %q", got)
	}
	if got := r.header.Values("X-Both"); !slices.Equal(got, []string{"multi1", "multi2"}) {
		t.Errorf("X-Both = %q, want only the multiValueHeaders values", got)
	}
	if r.header.Get("x-amzn-RequestId") == "" {
		t.Error("no x-amzn-RequestId header")
	}
}

func TestGatewayBodies(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}

	r := e.do(t, "POST", "/upload?mode=binary", "", bin, map[string]string{"Content-Type": "application/octet-stream"})
	if r.status != 200 || !bytes.Equal(r.body, bin) {
		t.Fatalf("binary round trip: status %d, %d bytes back (want the 256 sent)", r.status, len(r.body))
	}
	if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type = %q", ct)
	}

	ev := e.do(t, "POST", "/upload", "", bin, map[string]string{"Content-Type": "application/octet-stream"}).event(t)
	if ev["isBase64Encoded"] != true || ev["body"] != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("binary body: isBase64Encoded %v, body %v", ev["isBase64Encoded"], ev["body"])
	}

	ev = e.do(t, "POST", "/upload", "", []byte(`{"a":"é"}`), map[string]string{"Content-Type": "application/json; charset=utf-8"}).event(t)
	if ev["isBase64Encoded"] != false || ev["body"] != `{"a":"é"}` {
		t.Errorf("JSON body: isBase64Encoded %v, body %v", ev["isBase64Encoded"], ev["body"])
	}

	ev = e.do(t, "POST", "/upload", "", []byte{0xff, 0xfe}, map[string]string{"Content-Type": "text/plain"}).event(t)
	if ev["isBase64Encoded"] != true {
		t.Errorf("invalid UTF-8 text body: isBase64Encoded %v", ev["isBase64Encoded"])
	}

	big := bytes.Repeat([]byte("x"), maxRequestBody+1)
	expectGatewayResponse(t, e.do(t, "POST", "/upload", "", big, map[string]string{"Content-Type": "text/plain"}),
		413, `{"message":"Request Too Long"}`)
}

func TestGatewayCachedPolicyIsEvaluatedPerMethodARN(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, func(g *Gateway) { g.AuthorizerTTL = time.Minute })

	// "allow" returns a policy for exactly the first request's method ARN.
	if r := e.do(t, "GET", "/api/v1/app-conversations/c-1", "allow", nil, nil); r.status != 200 {
		t.Fatalf("first request: status %d (%s)", r.status, r.body)
	}
	r := e.do(t, "GET", "/api/v1/app-conversations/c-2", "allow", nil, nil)
	expectGatewayResponse(t, r, 403, `{"Message":"User is not authorized to access this resource"}`)
	if n := e.auth.Invocations(); n != 1 {
		t.Errorf("authorizer invocations = %d, want 1 (the second request uses the cache)", n)
	}
	if s := e.gw.Stats(); s.AuthorizerCacheHits != 1 {
		t.Errorf("cache hits = %d, want 1", s.AuthorizerCacheHits)
	}

	// A policy for the whole stage works for every method ARN.
	for _, p := range []string{"/api/v1/app-conversations/c-1", "/api/v1/app-conversations/c-2", "/api/v1/app-conversations/search"} {
		if r := e.do(t, "GET", p, "allow-all", nil, nil); r.status != 200 {
			t.Errorf("allow-all %s: status %d", p, r.status)
		}
	}
	if n := e.auth.Invocations(); n != 2 {
		t.Errorf("authorizer invocations = %d, want 2", n)
	}

	// Without caching every request is authorized afresh.
	e.gw.AuthorizerTTL = 0
	if r := e.do(t, "GET", "/api/v1/app-conversations/c-3", "allow", nil, nil); r.status != 200 {
		t.Errorf("uncached: status %d", r.status)
	}
}

func TestGatewayIntegrationFailures(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	for _, q := range []string{"mode=error", "mode=malformed", "mode=status&code=0"} {
		expectGatewayResponse(t, e.do(t, "GET", "/public/x?"+q, "", nil, nil), 502, `{"message":"Internal server error"}`)
	}
	if r := e.do(t, "GET", "/public/x?mode=status&code=418", "", nil, nil); r.status != 418 || string(r.body) != "status" {
		t.Errorf("status passthrough: %d %q", r.status, r.body)
	} else if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("default Content-Type = %q, want application/json", ct)
	}
}

func TestGatewayIntegrationTimeout(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, func(g *Gateway) { g.IntegrationTimeout = 200 * time.Millisecond })
	start := time.Now()
	r := e.do(t, "GET", "/public/slow?mode=sleep&ms=1500", "", nil, nil)
	expectGatewayResponse(t, r, 504, `{"message":"Endpoint request timed out"}`)
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Errorf("the gateway answered after %v", d)
	}
}

// TestGatewayEventShape guards against drift from the real event shapes:
// the events the Gateway sends have the same top-level and requestContext
// keys as the hand-written samples of real API Gateway events.
func TestGatewayEventShape(t *testing.T) {
	t.Parallel()
	e := newGatewayEnv(t, nil)
	r := e.do(t, "GET", "/api/v1/app-conversations/c-7f3e2a91/events?limit=50&page_id=p-2", "echo-event", nil,
		map[string]string{"Accept": "application/json", "User-Agent": "curl/8.5.0"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	proxy := r.event(t)
	rc := proxy["requestContext"].(map[string]any)
	authzEventJSON, _ := rc["authorizer"].(map[string]any)["event"].(string)
	var authz map[string]any
	if err := json.Unmarshal([]byte(authzEventJSON), &authz); err != nil {
		t.Fatalf("authorizer event %q: %v", authzEventJSON, err)
	}

	for _, tc := range []struct {
		sample string
		got    map[string]any
	}{
		{"testdata/apigw-proxy-request.json", proxy},
		{"testdata/apigw-authorizer-request.json", authz},
	} {
		want := readSample(t, tc.sample)
		if g, w := sortedKeys(tc.got), sortedKeys(want); !slices.Equal(g, w) {
			t.Errorf("%s: top-level keys\n got %v\nwant %v", tc.sample, g, w)
		}
		grc, _ := tc.got["requestContext"].(map[string]any)
		wrc, _ := want["requestContext"].(map[string]any)
		if g, w := sortedKeys(grc), sortedKeys(wrc); !slices.Equal(g, w) {
			t.Errorf("%s: requestContext keys\n got %v\nwant %v", tc.sample, g, w)
		}
		gid, _ := grc["identity"].(map[string]any)
		wid, _ := wrc["identity"].(map[string]any)
		if g, w := sortedKeys(gid), sortedKeys(wid); !slices.Equal(g, w) {
			t.Errorf("%s: requestContext.identity keys\n got %v\nwant %v", tc.sample, g, w)
		}
	}

	// Values that must match the sample exactly (they do not depend on the
	// request's timing or on the test server's address).
	sample := readSample(t, "testdata/apigw-proxy-request.json")
	src := sample["requestContext"].(map[string]any)
	for _, k := range []string{"resourcePath", "httpMethod", "path", "accountId", "protocol", "stage", "domainPrefix", "domainName", "apiId"} {
		if rc[k] != src[k] {
			t.Errorf("requestContext.%s = %v, sample has %v", k, rc[k], src[k])
		}
	}
	for _, k := range []string{"resource", "path", "httpMethod", "queryStringParameters", "multiValueQueryStringParameters", "pathParameters", "stageVariables", "body", "isBase64Encoded"} {
		gb, _ := json.Marshal(proxy[k])
		wb, _ := json.Marshal(sample[k])
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s = %s, sample has %s", k, gb, wb)
		}
	}
	if id := rc["identity"].(map[string]any); id["sourceIp"] != "127.0.0.1" || id["userAgent"] != "curl/8.5.0" {
		t.Errorf("identity = %v", id)
	}
	if h := proxy["headers"].(map[string]any); h["Authorization"] != "Bearer echo-event" || h["Accept"] != "application/json" || h["Host"] == nil {
		t.Errorf("headers = %v", h)
	}
	wantArn := "arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/GET/api/v1/app-conversations/c-7f3e2a91/events"
	if authz["methodArn"] != wantArn || authz["type"] != "REQUEST" {
		t.Errorf("authorizer event: type %v, methodArn %v; want REQUEST, %s", authz["type"], authz["methodArn"], wantArn)
	}

	// Without a query string or path parameters those maps are null.
	ev := e.do(t, "POST", "/upload", "", nil, nil).event(t)
	for _, k := range []string{"queryStringParameters", "multiValueQueryStringParameters", "pathParameters", "body"} {
		if v, ok := ev[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

// TestSampleEventsDecode checks that the samples are in the shape the
// aws-lambda-go types expect. The types do not cover every key API Gateway
// sends (e.g. requestContext.deploymentId, identity.principalOrgId), so
// unknown fields are allowed and the important values are checked instead.
func TestSampleEventsDecode(t *testing.T) {
	t.Parallel()
	var proxy events.APIGatewayProxyRequest
	decodeSample(t, "testdata/apigw-proxy-request.json", &proxy)
	if proxy.Resource != "/api/v1/app-conversations/{conversation_id}/events" ||
		proxy.PathParameters["conversation_id"] != "c-7f3e2a91" ||
		proxy.RequestContext.APIID != APIID ||
		proxy.RequestContext.Stage != DefaultStage ||
		proxy.RequestContext.Identity.SourceIP == "" ||
		proxy.RequestContext.Authorizer["principalId"] != "user-42" ||
		proxy.MultiValueQueryStringParameters["limit"][0] != "50" {
		t.Errorf("proxy sample decoded to %+v", proxy)
	}

	var authz events.APIGatewayCustomAuthorizerRequestTypeRequest
	decodeSample(t, "testdata/apigw-authorizer-request.json", &authz)
	if authz.Type != "REQUEST" ||
		!strings.HasPrefix(authz.MethodArn, "arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/GET/") ||
		authz.Headers["Authorization"] == "" ||
		authz.RequestContext.ResourcePath != authz.Resource ||
		authz.RequestContext.Identity.SourceIP == "" {
		t.Errorf("authorizer sample decoded to %+v", authz)
	}
}

func readSample(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	decodeSample(t, path, &m)
	return m
}

func decodeSample(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
