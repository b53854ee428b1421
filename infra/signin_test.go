package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/config"
)

// signInFixture is a route that signs people in (config.NeedSignIn), so
// that the stacks' sign-in configuration is exercised whatever the route
// table holds.
var signInFixture = api.Route{Name: "sign_in_fixture", Method: "GET", Path: "/login/fixture", Auth: api.AuthNone, Needs: config.NeedSignIn}

// signInVariables are the variables the stacks set only on functions that
// sign people in.
var signInVariables = []string{config.EnvOIDCIssuer, config.EnvOIDCClientID, config.EnvOIDCClientSecret + config.SecretARNSuffix,
	envOIDCName, envOIDCAllowedDomains, envOIDCAllowedEmails, envOIDCCreateUsers}

// functionVariables reads every function's variables from the API and
// provisioning templates, by function name.
func functionVariables(t *testing.T, s *Stacks, dir string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, f := range allFunctions(s) {
		raw := readTemplate(t, dir, stackOf(f))
		id := logicalOf(t, raw, "AWS::Lambda::Function", describe(f.Spec))
		props := raw["Resources"].(map[string]any)[id].(map[string]any)["Properties"].(map[string]any)
		vars, _ := props["Environment"].(map[string]any)["Variables"].(map[string]any)
		out[f.Spec.Name] = vars
	}
	return out
}

// With Cognito (the default): a retained user pool with e-mail as the
// verified sign-in name, its hosted UI, an app client for the code grant
// coming back to the sign-in pages, its secret in Secrets Manager, and the
// issuer and client on exactly the functions that sign people in (those
// whose route needs config.NeedSignIn, here the fixture), which alone may
// read the secret.
func TestSignInWithCognito(t *testing.T) {
	s := mainSynth(t)
	data, at := tpl(t, s.dir, DataStack), tpl(t, s.dir, APIStack)
	check(t, "the user pool", func() {
		data.HasResource(jsii.String("AWS::Cognito::UserPool"), obj(map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
			"Properties": map[string]any{
				"UsernameAttributes": []any{"email"}, "AutoVerifiedAttributes": []any{"email"},
				"AdminCreateUserConfig": map[string]any{"AllowAdminCreateUserOnly": true},
				"DeletionProtection":    "ACTIVE",
				"Schema":                assertions.Match_ArrayWith(&[]any{map[string]any{"Name": "email", "Required": true, "Mutable": true}}),
				"AccountRecoverySetting": map[string]any{"RecoveryMechanisms": []any{
					map[string]any{"Name": "verified_email", "Priority": 1}}},
				"SmsConfiguration": assertions.Match_Absent(),
			}}))
	})
	check(t, "the hosted UI", func() {
		data.HasResourceProperties(jsii.String("AWS::Cognito::UserPoolDomain"), obj(map[string]any{
			"Domain":     map[string]any{"Fn::Join": []any{"", []any{"acs-", map[string]any{"Ref": "AWS::AccountId"}}}},
			"UserPoolId": map[string]any{"Ref": assertions.Match_AnyValue()}, "CustomDomainConfig": assertions.Match_Absent()}))
	})
	for _, o := range []string{"UserPoolId", "HostedUiUrl"} {
		check(t, "output "+o, func() { data.HasOutput(jsii.String(o), obj(map[string]any{"Value": assertions.Match_AnyValue()})) })
	}
	check(t, "the app client", func() {
		at.HasResourceProperties(jsii.String("AWS::Cognito::UserPoolClient"), obj(map[string]any{
			"UserPoolId":                      map[string]any{"Fn::ImportValue": assertions.Match_AnyValue()},
			"GenerateSecret":                  true,
			"AllowedOAuthFlowsUserPoolClient": true,
			"AllowedOAuthFlows":               []any{"code"},
			"AllowedOAuthScopes":              []any{"openid", "email", "profile"},
			"SupportedIdentityProviders":      []any{"COGNITO"},
			"ExplicitAuthFlows":               []any{"ALLOW_REFRESH_TOKEN_AUTH"},
		}))
	})
	// The redirect URIs are the public URL's sign-in pages: the web UI's
	// distribution, where a person signs in.
	raw := readTemplate(t, s.dir, APIStack)
	for _, c := range []struct{ prop, path string }{{"CallbackURLs", oidcCallbackPath}, {"LogoutURLs", oidcLogoutPath}} {
		var got []string
		for _, r := range raw["Resources"].(map[string]any) {
			r := r.(map[string]any)
			if r["Type"] == "AWS::Cognito::UserPoolClient" {
				for _, u := range listOf(r["Properties"].(map[string]any)[c.prop]) {
					got = append(got, jsonString(u))
				}
			}
		}
		want := regexp.MustCompile(`^\{"Fn::Join":\["",\["https://",\{"Fn::GetAtt":\["Distribution[0-9A-F]{8}","DomainName"\]\},"` +
			regexp.QuoteMeta(c.path) + `"\]\]\}$`)
		if len(got) != 1 || !want.MatchString(got[0]) {
			t.Errorf("%s %v: want the distribution's URL + %s", c.prop, got, c.path)
		}
	}
	check(t, "the client secret", func() {
		at.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), obj(map[string]any{
			"SecretString":         map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^SignInClient")), "ClientSecret"}},
			"GenerateSecretString": assertions.Match_Absent()}))
	})
	check(t, "output OidcIssuer", func() { at.HasOutput(jsii.String("OidcIssuer"), obj(map[string]any{})) })

	// The variables: on exactly the functions that sign people in.
	vars := functionVariables(t, s.stacks, s.dir)
	signers := 0
	for _, f := range functions.All(s.props.Routes) {
		v := vars[f.Name]
		if f.Need&config.NeedSignIn == 0 {
			for _, name := range signInVariables {
				if _, ok := v[name]; ok {
					t.Errorf("%s does not sign people in, but has %s", f.Name, name)
				}
			}
			continue
		}
		signers++
		for _, name := range config.NeedVariables[config.NeedSignIn] {
			if _, ok := v[name]; !ok {
				t.Errorf("%s signs people in without %s", f.Name, name)
			}
		}
		issuer := jsonString(v[config.EnvOIDCIssuer])
		if !strings.HasPrefix(issuer, `{"Fn::Join":["",["https://cognito-idp.",{"Ref":"AWS::Region"},".",{"Ref":"AWS::URLSuffix"},"/",{"Fn::ImportValue":`) {
			t.Errorf("%s: issuer %s, want https://cognito-idp.<region>.<suffix>/<pool id>", f.Name, issuer)
		}
		if c := jsonString(v[config.EnvOIDCClientID]); !strings.Contains(c, `"Ref":"SignInClient`) {
			t.Errorf("%s: client id %s", f.Name, c)
		}
		if c := jsonString(v[config.EnvOIDCClientSecret+config.SecretARNSuffix]); !strings.Contains(c, `"Ref":"OidcClientSecret`) {
			t.Errorf("%s: client secret %s, want the secret's ARN", f.Name, c)
		}
		if v[envOIDCName] != config.DefaultOIDCName {
			t.Errorf("%s: %s %v", f.Name, envOIDCName, v[envOIDCName])
		}
		for _, unset := range []string{envOIDCAllowedDomains, envOIDCAllowedEmails, envOIDCCreateUsers, config.EnvOIDCClientSecret} {
			if _, ok := v[unset]; ok {
				t.Errorf("%s: %s is set though the props leave it out", f.Name, unset)
			}
		}
	}
	if signers == 0 {
		t.Fatal("no function signs people in: the fixture route is missing")
	}
	// Only their roles may read the secret.
	readers := 0
	for _, st := range []string{APIStack, ProvisioningStack} {
		for _, r := range readTemplate(t, s.dir, st)["Resources"].(map[string]any) {
			r := r.(map[string]any)
			if (r["Type"] == "AWS::IAM::Policy" || r["Type"] == "AWS::IAM::Role") && strings.Contains(jsonString(r["Properties"]), `"Ref":"OidcClientSecret`) {
				readers++
			}
		}
	}
	if readers != signers {
		t.Errorf("%d policies grant the client secret, want the %d of the functions that sign people in", readers, signers)
	}
}

// Self sign-up and the hosted UI's prefix are the props'; with OIDC off
// there is no Cognito and the sign-in functions get the public URL only.
func TestSignInProps(t *testing.T) {
	p, err := FromContext(func(k string) string {
		return map[string]string{"runtimeApiUrl": "https://runtime.example.com", "oidc": "none"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Routes = append(slices.Clone(api.Routes), signInFixture)
	p.AssetDir = stubAssets(t, p.Routes)
	s, dir := synth(t, p)
	for _, st := range []string{DataStack, APIStack} {
		for _, typ := range []string{"AWS::Cognito::UserPool", "AWS::Cognito::UserPoolClient", "AWS::Cognito::UserPoolDomain"} {
			check(t, st+": no "+typ, func() { tpl(t, dir, st).ResourceCountIs(jsii.String(typ), jsii.Number(0)) })
		}
	}
	v := functionVariables(t, s, dir)[signInFixture.Name]
	if _, ok := v[config.EnvPublicURL]; !ok {
		t.Errorf("the sign-in function lacks %s: %v", config.EnvPublicURL, v)
	}
	for _, name := range signInVariables {
		if _, ok := v[name]; ok {
			t.Errorf("OIDC is off, yet the sign-in function has %s", name)
		}
	}

	// Cognito with self sign-up and a prefix: only the pool's construction
	// is needed.
	p, err = FromContext(func(k string) string {
		return map[string]string{"cognitoSelfSignUp": "true", "cognitoDomainPrefix": "acs-example"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	app := newTestApp(t)
	d := &Data{Stack: awscdk.NewStack(app, jsii.String("Pool"), nil)}
	newUserPool(d, p)
	pt := assertions.Template_FromStack(d.Stack, nil)
	check(t, "self sign-up", func() {
		pt.HasResourceProperties(jsii.String("AWS::Cognito::UserPool"), obj(map[string]any{
			"AdminCreateUserConfig": map[string]any{"AllowAdminCreateUserOnly": false}}))
	})
	check(t, "the prefix", func() {
		pt.HasResourceProperties(jsii.String("AWS::Cognito::UserPoolDomain"), obj(map[string]any{"Domain": "acs-example"}))
	})
}

// The variables the stacks give a function that signs people in are the
// ones config.Load reads: loaded as a function with config.NeedSignIn (the
// secret's ARN standing for the value awsenv reads from Secrets Manager),
// they configure exactly the issuer the props name.
func TestSignInVariablesAreWhatLoadReads(t *testing.T) {
	p, err := FromContext(func(k string) string {
		return map[string]string{"oidcIssuer": "https://login.example.com/", "oidcClientId": "acs-client",
			"oidcClientSecret": "acs/oidc", "oidcName": "Example SSO", "oidcAllowedDomains": "Example.com, corp.example",
			"oidcAllowedEmails": "a@x.org", "oidcCreateUsers": "false"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	si := &signIn{issuer: jsii.String(p.OIDCIssuerURL), clientID: jsii.String(p.OIDCClientID), secret: &secretRef{ref: jsii.String(p.OIDCClientSecret)}}
	env := map[string]string{"AWS_REGION": "eu-west-1", config.EnvTable: "acs", config.EnvSecretKey: "0123456789abcdef0123",
		config.EnvPublicURL: "https://acs.example.com"}
	for _, v := range config.NeedVariables[config.NeedSignIn] {
		if env[v] == "" {
			t.Fatalf("no test value for %s, which config.NeedVariables names for sign-in", v)
		}
	}
	for k, v := range si.env(p) {
		if name, ok := strings.CutSuffix(k, config.SecretARNSuffix); ok {
			if !slices.Contains(config.SecretVariables, name) {
				t.Fatalf("%s names a secret, but %s is not among config.SecretVariables: the functions would not read it", k, name)
			}
			k, v = name, jsii.String("the-client-secret")
		}
		env[k] = *v
	}
	c, err := config.Load(func(k string) string { return env[k] }, config.Target{Program: config.Function, Need: config.NeedSignIn})
	if err != nil {
		t.Fatal(err)
	}
	want := config.OIDC{Issuer: "https://login.example.com", ClientID: "acs-client", ClientSecret: "the-client-secret", Name: "Example SSO",
		AllowedDomains: []string{"example.com", "corp.example"}, AllowedEmails: []string{"a@x.org"}, CreateUsers: false}
	if got := c.SignIn.OIDC; fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("loaded %+v\nwant   %+v", got, want)
	}
	if c.PublicURL != "https://acs.example.com" {
		t.Errorf("public URL %q", c.PublicURL)
	}
}
