package apigw_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
)

const (
	key       = "acs_apigw-test-key-0123456789"
	methodArn = "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/api/v1/users/me"
)

func newStore(t *testing.T) *boltstore.Store {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := store.CreateUser(ctx, acs.User{ID: "u1", Name: "Ada", Admin: true, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateAPIKey(ctx, acs.APIKey{ID: "k1", UserID: "u1", Hash: acs.HashKey(key)}); err != nil {
		t.Fatal(err)
	}
	return store
}

func TestAuthorizer(t *testing.T) {
	store := newStore(t)
	auth := apigw.Authorizer(store)
	tests := []struct {
		name    string
		headers map[string]string
		multi   map[string][]string
		arn     string
		wantErr string
	}{
		{"valid key", map[string]string{"Authorization": "Bearer " + key}, nil, methodArn, ""},
		{"lower-case header and scheme", map[string]string{"authorization": "bearer " + key}, nil, methodArn, ""},
		{"multi-value header only", nil, map[string][]string{"Authorization": {"Bearer " + key}}, methodArn, ""},
		{"missing header", map[string]string{}, nil, methodArn, "Unauthorized"},
		{"unknown key", map[string]string{"Authorization": "Bearer acs_nope"}, nil, methodArn, "Unauthorized"},
		{"not bearer", map[string]string{"Authorization": "Basic " + key}, nil, methodArn, "Unauthorized"},
		{"bad method ARN", map[string]string{"Authorization": "Bearer " + key}, nil, "arn:aws:s3:::bucket", "method ARN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := auth(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{
				Type: "REQUEST", MethodArn: tc.arn, Headers: tc.headers, MultiValueHeaders: tc.multi})
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("allowed: %+v", res)
				}
				if tc.wantErr == "Unauthorized" && err.Error() != "Unauthorized" {
					t.Fatalf("API Gateway needs exactly \"Unauthorized\" for a 401, got %q", err)
				}
				if !errors.Is(err, apigw.ErrUnauthorized) && tc.wantErr == "Unauthorized" {
					t.Fatalf("not ErrUnauthorized: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res)
			var doc struct {
				PrincipalID    string `json:"principalId"`
				PolicyDocument struct {
					Version   string
					Statement []struct {
						Action   []string
						Effect   string
						Resource []string
					}
				} `json:"policyDocument"`
				Context map[string]any `json:"context"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			st := doc.PolicyDocument.Statement
			if doc.PrincipalID != "u1" || doc.PolicyDocument.Version != "2012-10-17" || len(st) != 1 || st[0].Effect != "Allow" ||
				st[0].Resource[0] != "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*" || st[0].Action[0] != "execute-api:Invoke" {
				t.Fatalf("policy %s", b)
			}
			if doc.Context["user_id"] != "u1" || doc.Context["user_name"] != "Ada" || doc.Context["admin"] != "true" ||
				doc.Context["created_at"] != "2026-01-02T03:04:05Z" {
				t.Fatalf("context %v", doc.Context)
			}
		})
	}
}

// A store outage is an authorizer failure (API Gateway: 5xx, not cached),
// never "Unauthorized" (401, cached as a refusal).
func TestAuthorizerStoreFailureIsNotUnauthorized(t *testing.T) {
	store := newStore(t)
	store.Close()
	_, err := apigw.Authorizer(store)(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{
		MethodArn: methodArn, Headers: map[string]string{"Authorization": "Bearer " + key}})
	if err == nil || errors.Is(err, apigw.ErrUnauthorized) || err.Error() == "Unauthorized" {
		t.Fatalf("store failure answered %v", err)
	}
}

// The route function serves the authorizer's user and trusts nothing else.
func TestHandlerTakesTheUserFromTheAuthorizer(t *testing.T) {
	store := newStore(t)
	h := apigw.Handler(api.New(api.Deps{Services: services.Build(services.Adapters{Store: store,
		Sealer: sealbox.FromPassphrase("apigw test passphrase")}), ContextAuthOnly: true}).RouteHandler("get_me"))
	req := func(authorizer map[string]any) events.APIGatewayProxyRequest {
		return events.APIGatewayProxyRequest{
			Resource: "/api/v1/users/me", Path: "/api/v1/users/me", HTTPMethod: "GET",
			Headers:           map[string]string{"Authorization": "Bearer " + key},
			MultiValueHeaders: map[string][]string{"Authorization": {"Bearer " + key}},
			RequestContext: events.APIGatewayProxyRequestContext{Stage: "prod", DomainName: "abc123.execute-api.eu-west-1.amazonaws.com",
				Authorizer: authorizer},
		}
	}
	tests := []struct {
		name       string
		authorizer map[string]any
		status     int
		wantName   string
	}{
		{"authorizer context", map[string]any{"user_id": "u1", "user_name": "Ada", "admin": "true", "created_at": "2026-01-02T03:04:05Z", "principalId": "u1"}, 200, "Ada"},
		{"no authorizer context, only a key", nil, 401, ""},
		{"context without a user id", map[string]any{"principalId": "u1"}, 401, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h(context.Background(), req(tc.authorizer))
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d %s", res.StatusCode, res.Body)
			}
			if tc.status != 200 {
				return
			}
			var u map[string]any
			if err := json.Unmarshal([]byte(res.Body), &u); err != nil {
				t.Fatal(err)
			}
			if u["id"] != "u1" || u["name"] != tc.wantName || u["admin"] != true || u["created_at"] == nil {
				t.Fatalf("me %s", res.Body)
			}
		})
	}
}
