package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// TestWebStack: the UI's bucket is private and read by the distribution
// alone (Origin Access Control); the distribution serves the UI with app
// routes rewritten to /index.html, forwards the API's paths to the stage
// uncached with every method, and its URL is an output; the UI files are
// deployed from WebDir.
func TestWebStack(t *testing.T) {
	p := testProps(t)
	p.WebDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(p.WebDir, "index.html"), []byte("<!doctype html><title>ACS</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, dir := synth(t, p)
	web := tpl(t, dir, WebStack)

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
	raw := readTemplate(t, dir, WebStack)
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
		if len(listOf(b["AllowedMethods"])) != 7 || b["CachePolicyId"] == nil || b["OriginRequestPolicyId"] == nil {
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
