package apigw_test

import (
	"reflect"
	"testing"

	"github.com/acs-project/acs/shared/apigw"
)

// TestGatewayResponses pins the gateway responses the stack deploys, byte
// for byte, now that they come from the error table.
func TestGatewayResponses(t *testing.T) {
	bearer := map[string]string{"WWW-Authenticate": "Bearer"}
	retry2 := map[string]string{"Retry-After": "2"}
	unavailable := `{"detail":"Service temporarily unavailable; retry shortly"}`
	want := []apigw.GatewayResponse{
		{Type: "UNAUTHORIZED", StatusCode: 401, Body: `{"detail":"Unauthorized: missing or invalid API key (Authorization: Bearer <API_KEY>)"}`, Headers: bearer},
		{Type: "ACCESS_DENIED", StatusCode: 401, Body: `{"detail":"Unauthorized: invalid API key"}`, Headers: bearer},
		{Type: "AUTHORIZER_FAILURE", StatusCode: 503, Body: unavailable, Headers: retry2},
		{Type: "AUTHORIZER_CONFIGURATION_ERROR", StatusCode: 503, Body: unavailable, Headers: retry2},
		{Type: "MISSING_AUTHENTICATION_TOKEN", StatusCode: 404, Body: `{"detail":"Not Found"}`},
		{Type: "THROTTLED", StatusCode: 429, Body: `{"detail":"Too many requests; retry shortly"}`, Headers: map[string]string{"Retry-After": "1"}},
		{Type: "REQUEST_TOO_LARGE", StatusCode: 413, Body: `{"detail":"Request body too large"}`},
		{Type: "INTEGRATION_FAILURE", StatusCode: 503, Body: unavailable, Headers: retry2},
		{Type: "INTEGRATION_TIMEOUT", StatusCode: 504, Body: `{"detail":"The request timed out; retry shortly"}`},
	}
	if len(apigw.GatewayResponses) != len(want) {
		t.Fatalf("%d gateway responses, want %d", len(apigw.GatewayResponses), len(want))
	}
	for i, got := range apigw.GatewayResponses {
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("gateway response %d:\n got  %+v\n want %+v", i, got, want[i])
		}
	}
}
