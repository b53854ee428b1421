package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/internal/lambdatest"
	"github.com/acs-project/acs/shared/config"
)

// TestWebStack: the UI's bucket is private and read by the distribution
// alone (Origin Access Control); the distribution serves the UI with app
// routes rewritten to /index.html, forwards the API's paths to the stage
// uncached with every method, and its URL is an output; the UI files are
// deployed from WebDir.
func TestWebStack(t *testing.T) {
	p := webDirProps(t)
	_, dir := synth(t, p)
	web := tpl(t, dir, APIStack)

	check(t, "bucket not public", func() {
		web.HasResourceProperties(jsii.String("AWS::S3::Bucket"), obj(map[string]any{
			"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true,
				"IgnorePublicAcls": true, "RestrictPublicBuckets": true},
		}))
	})
	check(t, "origin access control", func() {
		web.HasResourceProperties(jsii.String("AWS::CloudFront::OriginAccessControl"), obj(map[string]any{
			"OriginAccessControlConfig": assertions.Match_ObjectLike(&map[string]any{"OriginAccessControlOriginType": "s3", "SigningBehavior": "always"}),
		}))
	})
	check(t, "bucket readable by the distribution only", func() {
		web.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), obj(map[string]any{
			"PolicyDocument": assertions.Match_ObjectLike(&map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
				assertions.Match_ObjectLike(&map[string]any{"Action": "s3:GetObject", "Effect": "Allow",
					"Principal": map[string]any{"Service": "cloudfront.amazonaws.com"}}),
			})}),
		}))
	})
	raw := readTemplate(t, dir, APIStack)
	var dist map[string]any
	for _, r := range raw["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == "AWS::CloudFront::Distribution" {
			dist = r["Properties"].(map[string]any)["DistributionConfig"].(map[string]any)
		}
	}
	if dist == nil {
		t.Fatal("no distribution")
	}
	def := dist["DefaultCacheBehavior"].(map[string]any)
	if dist["DefaultRootObject"] != "index.html" || len(listOf(def["FunctionAssociations"])) != 1 || def["ViewerProtocolPolicy"] != "redirect-to-https" {
		t.Errorf("default behaviour %s", jsonString(def))
	}
	origins := map[string]map[string]any{}
	for _, o := range listOf(dist["Origins"]) {
		o := o.(map[string]any)
		origins[o["Id"].(string)] = o
	}
	paths := map[string]bool{}
	for _, b := range listOf(dist["CacheBehaviors"]) {
		b := b.(map[string]any)
		paths[b["PathPattern"].(string)] = true
		o := origins[b["TargetOriginId"].(string)]
		if o == nil || o["OriginPath"] != "/"+p.Stage || !strings.Contains(jsonString(o["DomainName"]), "execute-api") {
			t.Errorf("%s goes to %s, not the API's stage", b["PathPattern"], jsonString(o))
		}
		// The viewer's Origin reaches the API (a session's writes are
		// checked against it): the managed AllViewerExceptHostHeader policy.
		if len(listOf(b["AllowedMethods"])) != 7 || b["CachePolicyId"] == nil || b["OriginRequestPolicyId"] != "b689b0a8-53d0-40ab-baf2-68738e2966ac" {
			t.Errorf("%s: %s", b["PathPattern"], jsonString(b))
		}
	}
	for _, want := range apiPaths {
		if !paths[want] {
			t.Errorf("no behaviour for %s (have %v)", want, paths)
		}
	}
	check(t, "API cache policy caches nothing and forwards Authorization", func() {
		web.HasResourceProperties(jsii.String("AWS::CloudFront::CachePolicy"), obj(map[string]any{
			"CachePolicyConfig": assertions.Match_ObjectLike(&map[string]any{"DefaultTTL": 0, "MinTTL": 0,
				"ParametersInCacheKeyAndForwardedToOrigin": assertions.Match_ObjectLike(&map[string]any{
					"HeadersConfig": map[string]any{"HeaderBehavior": "whitelist", "Headers": []any{"Authorization"}}})}),
		}))
	})
	check(t, "UI files deployed", func() { web.ResourceCountIs(jsii.String("Custom::CDKBucketDeployment"), jsii.Number(1)) })
	check(t, "URL output", func() { web.HasOutput(jsii.String("WebUrl"), obj(map[string]any{})) })
}

// webDirProps are testProps with UI files to deploy.
func webDirProps(t *testing.T) Props {
	t.Helper()
	p := testProps(t)
	p.WebDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(p.WebDir, "index.html"), []byte("<!doctype html><title>ACS</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPublicURLIsTheDistribution: a person at WebUrl can sign in and
// write. Every function that reads ACS_PUBLIC_URL (the origin a session's
// writes must come from, the sign-in pages' redirect URI, the sandboxes'
// webhooks) is given the distribution's URL, in the API and provisioning
// stacks alike; the Cognito client sends people back to the distribution's
// sign-in pages; the distribution forwards to the very stage the ApiUrl
// output names, which programs with API keys keep using directly.
func TestPublicURLIsTheDistribution(t *testing.T) {
	p := webDirProps(t)
	_, dir := synth(t, p)
	w := readWorld(t, dir)
	dists := w.ofType("AWS::CloudFront::Distribution")
	if len(dists) != 1 || dists[0].Stack != APIStack {
		t.Fatalf("distributions %v: want one, in %s", dists, APIStack)
	}
	const domain = "d111111abcdef8.cloudfront.net"
	webURL := "https://" + domain
	w.set(dists[0], "DomainName", domain)
	for _, r := range w.ofType("AWS::ApiGateway::RestApi") {
		w.set(r, "", lambdatest.APIID)
	}
	stageURL := "https://" + lambdatest.APIID + ".execute-api." + lambdatest.Region + ".amazonaws.com/" + p.Stage

	byDescription := map[string]*resource{}
	for _, r := range w.ofType("AWS::Lambda::Function") {
		if d, ok := r.Props["Description"].(string); ok {
			byDescription[d] = r
		}
	}
	given := map[string]int{}
	for _, f := range functions.All(p.Routes) {
		// Every route (a session's writes are checked against the public
		// URL's origin), and whatever else reads it.
		want := f.Role == functions.RoleRoute
		for _, need := range needBits(f.Need) {
			want = want || slices.Contains(config.NeedVariables[need], config.EnvPublicURL)
		}
		r := byDescription[describe(f)]
		if r == nil {
			t.Errorf("function %s: not in the templates", f.Name)
			continue
		}
		vars, _ := r.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		v, ok := vars[config.EnvPublicURL]
		if ok != want {
			t.Errorf("function %s: has %s %v, want %v", f.Name, config.EnvPublicURL, ok, want)
			continue
		}
		if !ok {
			continue
		}
		if got := w.must(t, r, v); got != webURL {
			t.Errorf("function %s: %s %q, want the distribution's %q", f.Name, config.EnvPublicURL, got, webURL)
		}
		given[r.Stack]++
	}
	if given[APIStack] == 0 || given[ProvisioningStack] == 0 {
		t.Errorf("functions given the public URL per stack: %v; want some in %s and %s", given, APIStack, ProvisioningStack)
	}

	clients := w.ofType("AWS::Cognito::UserPoolClient")
	if len(clients) != 1 {
		t.Fatalf("%d app clients, want 1", len(clients))
	}
	for _, r := range clients {
		cb, _ := r.Props["CallbackURLs"].([]any)
		lo, _ := r.Props["LogoutURLs"].([]any)
		if len(cb) != 1 || w.must(t, r, cb[0]) != webURL+oidcCallbackPath || len(lo) != 1 || w.must(t, r, lo[0]) != webURL+oidcLogoutPath {
			t.Errorf("app client: callback %s, logout %s; want %s%s and %s%s", jsonString(cb), jsonString(lo), webURL, oidcCallbackPath, webURL, oidcLogoutPath)
		}
	}

	// The distribution's API origin is the stage ApiUrl names.
	dist := dists[0].Props["DistributionConfig"].(map[string]any)
	apiOrigins := 0
	for _, o := range listOf(dist["Origins"]) {
		o := o.(map[string]any)
		if _, ok := o["CustomOriginConfig"]; !ok {
			continue
		}
		apiOrigins++
		if got := "https://" + w.must(t, dists[0], o["DomainName"]) + fmt.Sprint(o["OriginPath"]); got != stageURL {
			t.Errorf("the API origin is %s, want the stage %s", got, stageURL)
		}
	}
	if apiOrigins != 1 {
		t.Errorf("%d API origins, want 1", apiOrigins)
	}
	outs := readTemplate(t, dir, APIStack)["Outputs"].(map[string]any)
	for name, want := range map[string]string{"ApiUrl": stageURL, "WebUrl": webURL} {
		o, ok := outs[name].(map[string]any)
		if !ok {
			t.Errorf("no output %s", name)
			continue
		}
		if got, err := w.resolve(APIStack, o["Value"]); err != nil || got != want {
			t.Errorf("output %s: %q (%v), want %q", name, got, err, want)
		}
	}
}
