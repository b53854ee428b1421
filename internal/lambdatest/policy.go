package lambdatest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// authorization is a parsed, valid Lambda authorizer response.
type authorization struct {
	principalID string
	statements  []policyStatement
	// context holds the authorizer's context values stringified the way
	// API Gateway passes them on: strings as is, numbers in their JSON
	// text, booleans as "true"/"false".
	context map[string]string
}

type policyStatement struct {
	effect    string // "Allow" or "Deny"
	actions   []string
	resources []string
}

// policyDecision is the outcome of evaluating a policy for one request.
type policyDecision int

const (
	decisionImplicitDeny policyDecision = iota
	decisionAllow
	decisionExplicitDeny
)

// parseAuthorizerResponse validates an events.APIGatewayCustomAuthorizerResponse
// document. It accepts what API Gateway accepts beyond the Go type: Action
// and Resource as a string or a list, Statement as an object or a list.
func parseAuthorizerResponse(b []byte) (*authorization, error) {
	var raw struct {
		PrincipalID    *string `json:"principalId"`
		PolicyDocument *struct {
			Version   string          `json:"Version"`
			Statement json.RawMessage `json:"Statement"`
		} `json:"policyDocument"`
		Context map[string]json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("authorizer response is not a JSON object: %w", err)
	}
	if raw.PrincipalID == nil {
		return nil, errors.New("authorizer response has no principalId")
	}
	if raw.PolicyDocument == nil {
		return nil, errors.New("authorizer response has no policyDocument")
	}
	type rawStatement struct {
		Effect   string          `json:"Effect"`
		Action   json.RawMessage `json:"Action"`
		Resource json.RawMessage `json:"Resource"`
	}
	var stmts []rawStatement
	s := bytes.TrimSpace(raw.PolicyDocument.Statement)
	switch {
	case len(s) == 0 || string(s) == "null":
		return nil, errors.New("authorizer policy has no Statement")
	case s[0] == '{':
		var one rawStatement
		if err := json.Unmarshal(s, &one); err != nil {
			return nil, fmt.Errorf("authorizer policy Statement: %w", err)
		}
		stmts = []rawStatement{one}
	default:
		if err := json.Unmarshal(s, &stmts); err != nil {
			return nil, fmt.Errorf("authorizer policy Statement: %w", err)
		}
	}
	a := &authorization{principalID: *raw.PrincipalID, context: map[string]string{}}
	for i, st := range stmts {
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, fmt.Errorf("authorizer policy statement %d: Effect %q is neither Allow nor Deny", i, st.Effect)
		}
		actions, err := stringOrList(st.Action)
		if err != nil {
			return nil, fmt.Errorf("authorizer policy statement %d: Action: %w", i, err)
		}
		resources, err := stringOrList(st.Resource)
		if err != nil {
			return nil, fmt.Errorf("authorizer policy statement %d: Resource: %w", i, err)
		}
		a.statements = append(a.statements, policyStatement{effect: st.Effect, actions: actions, resources: resources})
	}
	for k, v := range raw.Context {
		str, ok, err := contextValue(v)
		if err != nil {
			return nil, fmt.Errorf("authorizer context %q: %w", k, err)
		}
		if ok {
			a.context[k] = str
		}
	}
	return a, nil
}

// contextValue stringifies one authorizer context value. Objects and arrays
// are invalid (API Gateway rejects the response); null is dropped.
func contextValue(v json.RawMessage) (string, bool, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return "", false, nil
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	case '{', '[':
		return "", false, errors.New("context values must be strings, numbers or booleans")
	default: // number, true, false
		return string(v), true, nil
	}
}

func stringOrList(v json.RawMessage) ([]string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil, errors.New("missing")
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var l []string
	if err := json.Unmarshal(v, &l); err != nil {
		return nil, fmt.Errorf("want a string or a list of strings: %w", err)
	}
	return l, nil
}

// evaluate decides whether the policy lets the caller invoke methodArn:
// an explicit Deny wins, then any Allow, else the request is implicitly
// denied. Only statements whose Action matches "execute-api:Invoke" count.
func (a *authorization) evaluate(methodArn string) policyDecision {
	allowed := false
	for _, st := range a.statements {
		if !matchesAny(st.actions, "execute-api:Invoke", true) || !matchesAny(st.resources, methodArn, false) {
			continue
		}
		if st.effect == "Deny" {
			return decisionExplicitDeny
		}
		allowed = true
	}
	if allowed {
		return decisionAllow
	}
	return decisionImplicitDeny
}

func matchesAny(patterns []string, s string, foldCase bool) bool {
	for _, p := range patterns {
		if foldCase {
			if wildcardMatch(strings.ToLower(p), strings.ToLower(s)) {
				return true
			}
		} else if wildcardMatch(p, s) {
			return true
		}
	}
	return false
}

// wildcardMatch reports whether s matches the IAM pattern p, where '*'
// matches any run of characters (including '/' and ':') and '?' any single
// character.
func wildcardMatch(p, s string) bool {
	// Iterative glob matching with single-star backtracking.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
