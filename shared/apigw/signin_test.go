package apigw_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
)

// The authorizer accepts a browser session's cookie (without an
// Authorization header) and says so in its context.
func TestAuthorizerAcceptsTheSessionCookie(t *testing.T) {
	store := newStore(t)
	now := time.Now().UTC()
	if err := store.CreateSession(context.Background(), acs.BrowserSession{Hash: acs.HashKey("cookie-1"), UserID: "u1",
		Method: acs.SignInByToken, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	auth := apigw.Authorizer(store)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		method  string // "": refused
	}{
		{"session cookie", map[string]string{"Cookie": "a=b; acs_session=cookie-1; c=d"}, "session"},
		{"lower-case header", map[string]string{"cookie": "acs_session=cookie-1"}, "session"},
		{"key and cookie: the key", map[string]string{"Authorization": "Bearer " + key, "Cookie": "acs_session=nope"}, "api_key"},
		{"wrong key and good cookie: refused", map[string]string{"Authorization": "Bearer nope", "Cookie": "acs_session=cookie-1"}, ""},
		{"unknown session", map[string]string{"Cookie": "acs_session=nope"}, ""},
		{"other cookies only", map[string]string{"Cookie": "a=b"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := auth(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{
				Type: "REQUEST", MethodArn: methodArn, Headers: tc.headers})
			if tc.method == "" {
				if err == nil || err.Error() != "Unauthorized" {
					t.Fatalf("got %+v, %v; want Unauthorized", res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.PrincipalID != "u1" || res.Context[apigw.CtxAuthMethod] != tc.method {
				t.Fatalf("principal %s, context %v", res.PrincipalID, res.Context)
			}
		})
	}
}

// A route function applies the session's same-origin rule from the
// authorizer's context.
func TestRouteFunctionChecksTheOriginOfSessionRequests(t *testing.T) {
	store := newStore(t)
	h := apigw.Handler(api.New(api.Deps{Services: services.Build(services.Adapters{Store: store,
		Sealer: sealbox.FromPassphrase("apigw test passphrase")}), ContextAuthOnly: true, PublicURL: "https://acs.example.com"}).RouteHandler("create_key"))
	for _, tc := range []struct {
		name, method, origin string
		status               int
	}{
		{"session, no origin", "session", "", 403},
		{"session, another origin", "session", "https://evil.example.com", 403},
		{"session, ACS's origin", "session", "https://acs.example.com", 201},
		{"key, no origin", "api_key", "", 201},
		{"older authorizer without a method: key", "", "", 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{"Content-Type": "application/json", "Host": "abc123.execute-api.eu-west-1.amazonaws.com"}
			if tc.origin != "" {
				headers["Origin"] = tc.origin
			}
			authz := map[string]any{"user_id": "u1", "user_name": "Ada", "admin": "true", "principalId": "u1"}
			if tc.method != "" {
				authz[apigw.CtxAuthMethod] = tc.method
			}
			res, err := h(context.Background(), events.APIGatewayProxyRequest{Resource: "/api/v1/keys", Path: "/api/v1/keys", HTTPMethod: "POST",
				Headers: headers, Body: `{"name":"k"}`,
				RequestContext: events.APIGatewayProxyRequestContext{Stage: "prod", DomainName: "abc123.execute-api.eu-west-1.amazonaws.com", Authorizer: authz}})
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d %s, want %d", res.StatusCode, res.Body, tc.status)
			}
		})
	}
}
