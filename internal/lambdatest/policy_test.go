package lambdatest

import "testing"

func TestWildcardMatch(t *testing.T) {
	t.Parallel()
	const arn = "arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/GET/api/v1/items/42"
	for _, tc := range []struct {
		pattern string
		want    bool
	}{
		{arn, true},
		{"*", true},
		{"arn:aws:execute-api:us-east-1:000000000000:acsapi0001/*", true},
		{"arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/*/api/*", true},
		{"arn:aws:execute-api:*:*:acsapi0001/prod/GET/api/v1/items/4?", true},
		{"arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/GET/api/v1/items/?", false},
		{"arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/POST/*", false},
		{"arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/GET/api/v1/items", false},
		{"arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/get/api/v1/items/42", false},
		{"*/items/42", true},
		{"*/items/4", false},
		{"", false},
	} {
		if got := wildcardMatch(tc.pattern, arn); got != tc.want {
			t.Errorf("wildcardMatch(%q) = %v, want %v", tc.pattern, got, tc.want)
		}
	}
}

func TestPolicyEvaluation(t *testing.T) {
	t.Parallel()
	const arn = "arn:aws:execute-api:us-east-1:000000000000:acsapi0001/prod/GET/things"
	for _, tc := range []struct {
		name   string
		policy string
		want   policyDecision
	}{
		{"allow list", `{"principalId":"p","policyDocument":{"Version":"2012-10-17","Statement":[{"Action":["execute-api:Invoke"],"Effect":"Allow","Resource":["` + arn + `"]}]}}`, decisionAllow},
		{"allow strings, single statement", `{"principalId":"p","policyDocument":{"Statement":{"Action":"execute-api:*","Effect":"Allow","Resource":"arn:aws:execute-api:*"}}}`, decisionAllow},
		{"deny wins", `{"principalId":"p","policyDocument":{"Statement":[{"Action":"*","Effect":"Allow","Resource":"*"},{"Action":"execute-api:Invoke","Effect":"Deny","Resource":"*/GET/*"}]}}`, decisionExplicitDeny},
		{"deny elsewhere", `{"principalId":"p","policyDocument":{"Statement":[{"Action":"*","Effect":"Allow","Resource":"*"},{"Action":"execute-api:Invoke","Effect":"Deny","Resource":"*/POST/*"}]}}`, decisionAllow},
		{"other action", `{"principalId":"p","policyDocument":{"Statement":[{"Action":"s3:GetObject","Effect":"Allow","Resource":"*"}]}}`, decisionImplicitDeny},
		{"action case-insensitive", `{"principalId":"p","policyDocument":{"Statement":[{"Action":"Execute-API:invoke","Effect":"Allow","Resource":"*"}]}}`, decisionAllow},
	} {
		a, err := parseAuthorizerResponse([]byte(tc.policy))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := a.evaluate(arn); got != tc.want {
			t.Errorf("%s: decision %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseAuthorizerResponse(t *testing.T) {
	t.Parallel()
	a, err := parseAuthorizerResponse([]byte(`{"principalId":"u","policyDocument":{"Statement":[{"Action":"*","Effect":"Allow","Resource":"*"}]},
		"context":{"s":"str","n":42,"f":1.50,"b":false,"z":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s": "str", "n": "42", "f": "1.50", "b": "false"}
	if len(a.context) != len(want) {
		t.Errorf("context = %v, want %v", a.context, want)
	}
	for k, v := range want {
		if a.context[k] != v {
			t.Errorf("context[%q] = %q, want %q", k, a.context[k], v)
		}
	}
	for _, bad := range []string{
		`"Allow"`,
		`{"policyDocument":{"Statement":[]}}`,
		`{"principalId":"u"}`,
		`{"principalId":"u","policyDocument":{}}`,
		`{"principalId":"u","policyDocument":{"Statement":[{"Action":"*","Effect":"allow","Resource":"*"}]}}`,
		`{"principalId":"u","policyDocument":{"Statement":[{"Effect":"Allow","Resource":"*"}]}}`,
		`{"principalId":"u","policyDocument":{"Statement":[{"Action":"*","Effect":"Allow","Resource":"*"}]},"context":{"o":{"a":1}}}`,
		`{"principalId":"u","policyDocument":{"Statement":[{"Action":"*","Effect":"Allow","Resource":"*"}]},"context":{"l":[1]}}`,
	} {
		if _, err := parseAuthorizerResponse([]byte(bad)); err == nil {
			t.Errorf("parseAuthorizerResponse(%s) succeeded, want an error", bad)
		}
	}
}
