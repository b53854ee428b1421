package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"sigs.k8s.io/yaml"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/s3blob"
	"github.com/acs-project/acs/shared/sqsqueue"
)

// synthesized is one synthesis shared by the tests that only read it.
type synthesized struct {
	stacks *Stacks
	dir    string
	props  Props
}

var (
	mainOnce sync.Once
	mainSyn  synthesized
)

// mainSynth is the stacks of testProps (a runtime API, an admin key hash,
// an LLM key secret, extra variables, Cognito sign-in) with signInFixture
// among the routes, synthesized once.
func mainSynth(t *testing.T) synthesized {
	t.Helper()
	mainOnce.Do(func() {
		p := testProps(t)
		p.Routes = append(slices.Clone(p.Routes), signInFixture)
		// The assembly must outlive the first test that asks for it.
		dir, err := os.MkdirTemp("", "acs-infra-test-")
		if err != nil {
			t.Fatal(err)
		}
		assets := filepath.Join(dir, "assets")
		os.Mkdir(assets, 0o755)
		copyDir(t, p.AssetDir, assets)
		copyDir(t, stubAssets(t, p.Routes), assets)
		p.AssetDir = assets
		s, out := synthInto(t, p, filepath.Join(dir, "cdk.out"))
		mainSyn = synthesized{s, out, p}
	})
	if mainSyn.stacks == nil {
		t.Fatal("the stacks did not synthesize")
	}
	return mainSyn
}

// tpl is a stack's template for the CDK assertions library.
func tpl(t *testing.T, dir, stack string) assertions.Template {
	t.Helper()
	m := readTemplate(t, dir, stack)
	return assertions.Template_FromJSON(&m, nil)
}

// check runs one assertion, turning its failure into a test error.
func check(t *testing.T, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

func obj(m map[string]any) *map[string]any { return &m }

func TestOneMethodPerRouteWithTheAuthorizerWhereItBelongs(t *testing.T) {
	s := mainSynth(t)
	at := tpl(t, s.dir, APIStack)
	check(t, "method count", func() { at.ResourceCountIs(jsii.String("AWS::ApiGateway::Method"), jsii.Number(len(s.props.Routes))) })
	raw := readTemplate(t, s.dir, APIStack)
	for _, rt := range s.props.Routes {
		fn := logicalOf(t, raw, "AWS::Lambda::Function", "ACS "+rt.Method+" "+rt.Path)
		props := map[string]any{
			"HttpMethod": rt.Method, "OperationName": rt.Name,
			"Integration": map[string]any{"Type": "AWS_PROXY", "IntegrationHttpMethod": "POST",
				"Uri": map[string]any{"Fn::Join": []any{"", assertions.Match_ArrayWith(&[]any{map[string]any{"Fn::GetAtt": []any{fn, "Arn"}}})}},
				// A Lambda proxy passes every request header (Cookie) to the
				// function and every response header (Set-Cookie) back: no
				// mapping may narrow that.
				"RequestParameters": assertions.Match_Absent(), "IntegrationResponses": assertions.Match_Absent()},
			"RequestParameters": assertions.Match_Absent(), "MethodResponses": assertions.Match_Absent(),
		}
		if rt.Auth == api.AuthUser {
			props["AuthorizationType"] = "CUSTOM"
			props["AuthorizerId"] = assertions.Match_AnyValue()
		} else {
			props["AuthorizationType"] = "NONE"
			props["AuthorizerId"] = assertions.Match_Absent()
		}
		check(t, rt.Name+": its method", func() { at.HasResourceProperties(jsii.String("AWS::ApiGateway::Method"), obj(props)) })
		// The resource path is the route's.
		if got := methodPath(t, raw, rt.Name); got != rt.Path {
			t.Errorf("%s: method on %s, want %s", rt.Name, got, rt.Path)
		}
	}
	// No identity source (a Bearer request has no cookie, a browser's no
	// Authorization header, and API Gateway refuses a request lacking any
	// source), so no result cache: every request reaches the authorizer.
	check(t, "the authorizer", func() {
		at.HasResourceProperties(jsii.String("AWS::ApiGateway::Authorizer"), obj(map[string]any{
			"Type": "REQUEST", "IdentitySource": assertions.Match_Absent(), "AuthorizerResultTtlInSeconds": 0}))
	})
	check(t, "one authorizer", func() { at.ResourceCountIs(jsii.String("AWS::ApiGateway::Authorizer"), jsii.Number(1)) })
	for _, r := range apigw.GatewayResponses {
		headers := map[string]any{}
		for k, v := range r.Headers {
			headers["gatewayresponse.header."+k] = "'" + v + "'"
		}
		check(t, "gateway response "+r.Type, func() {
			at.HasResourceProperties(jsii.String("AWS::ApiGateway::GatewayResponse"), obj(map[string]any{
				"ResponseType": r.Type, "StatusCode": fmt.Sprint(r.StatusCode),
				"ResponseTemplates": map[string]any{"application/json": r.Body}, "ResponseParameters": headers}))
		})
	}
	check(t, "stage: throttling, JSON access logs", func() {
		at.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), obj(map[string]any{
			"StageName":      "prod",
			"MethodSettings": []any{map[string]any{"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 100, "HttpMethod": "*", "ResourcePath": "/*", "DataTraceEnabled": false}},
			"AccessLogSetting": map[string]any{"Format": assertions.Match_SerializedJson(obj(map[string]any{
				"requestId": "$context.requestId", "status": "$context.status", "resourcePath": "$context.resourcePath",
				"httpMethod": "$context.httpMethod", "ip": "$context.identity.sourceIp", "user": "$context.identity.user",
				"caller": "$context.identity.caller", "requestTime": "$context.requestTime", "protocol": "$context.protocol",
				"responseLength": "$context.responseLength"}))},
		}))
	})
	// Stream-start answers within API Gateway's integration limit.
	if functions.StreamStartLimit >= functions.IntegrationTimeout || functions.RouteTimeout > functions.IntegrationTimeout {
		t.Errorf("stream-start streams %s, routes run %s: beyond API Gateway's %s", functions.StreamStartLimit, functions.RouteTimeout, functions.IntegrationTimeout)
	}
	check(t, "integration timeouts", func() {
		at.AllResourcesProperties(jsii.String("AWS::ApiGateway::Method"), obj(map[string]any{
			"Integration": map[string]any{"TimeoutInMillis": functions.IntegrationTimeout.Milliseconds()}}))
	})
}

func TestEveryFunctionIsArm64ProvidedAL2023FromItsZip(t *testing.T) {
	s := mainSynth(t)
	total := 0
	for _, st := range []string{APIStack, ProvisioningStack} {
		tp := tpl(t, s.dir, st)
		check(t, st+": runtime", func() {
			tp.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
				"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap",
				"LoggingConfig":                map[string]any{"LogFormat": "JSON", "LogGroup": assertions.Match_AnyValue()},
				"ReservedConcurrentExecutions": assertions.Match_Absent(),
			}))
		})
		total += len(*tp.FindResources(jsii.String("AWS::Lambda::Function"), nil))
		check(t, st+": log retention", func() {
			tp.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), obj(map[string]any{"RetentionInDays": 30}))
		})
	}
	if want := len(functions.All(s.props.Routes)); total != want {
		t.Errorf("%d functions, want %d (one per route, the authorizer, the provisioner, the reconciler)", total, want)
	}
	for _, f := range allFunctions(s.stacks) {
		w := f.Spec.Timeout.Seconds()
		check(t, f.Spec.Name+": timeout", func() {
			tpl(t, s.dir, stackOf(f)).HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
				"Description": describe(f.Spec), "Timeout": w}))
		})
	}
}

func allFunctions(s *Stacks) []*Function {
	return append(append([]*Function{s.API.Authorizer}, s.API.Routes...), s.Provisioning.Provisioner, s.Provisioning.Reconciler)
}

func stackOf(f *Function) string {
	if f.Spec.Role == functions.RoleProvisioner || f.Spec.Role == functions.RoleReconciler {
		return ProvisioningStack
	}
	return APIStack
}

// expectedGrants is what a function's role must allow, written here from
// the function's configuration needs (not with the stacks' code): action
// → the resources, named by what they are.
func expectedGrants(f functions.Function, p Props) map[string][]string {
	g := map[string][]string{}
	add := func(actions []string, res ...string) {
		for _, a := range actions {
			g[a] = append(g[a], res...)
		}
	}
	add(dynamostore.IAMActions, "table", "table-indexes")
	add([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, "own-log-group")
	add([]string{"secretsmanager:GetSecretValue"}, "secret-key")
	if f.Need&config.NeedQueue != 0 {
		add(sqsqueue.SendIAMActions, "start-queue")
		if f.Role == functions.RoleProvisioner {
			add(sqsqueue.ConsumeIAMActions, "start-queue")
		}
	}
	if f.Need&config.NeedDeadLetter != 0 {
		add(sqsqueue.DeadLetterIAMActions, "dead-letter-queue")
	}
	if f.Need&config.NeedBlobs != 0 {
		add(s3blob.ObjectIAMActions, "objects-under-prefix")
		add(s3blob.BucketIAMActions, "bucket-prefix-only")
	}
	if f.Need&config.NeedSignIn != 0 && (p.OIDC == OIDCCognito || p.OIDCClientSecret != "") {
		add([]string{"secretsmanager:GetSecretValue"}, "oidc-client-secret")
	}
	if f.Need&config.NeedRuntime != 0 {
		if p.RuntimeAPIURL != "" {
			add([]string{"secretsmanager:GetSecretValue"}, "runtime-key")
		}
		if p.LLMAPIKeySecret != "" {
			add([]string{"secretsmanager:GetSecretValue"}, "llm-key")
		}
	}
	if p.XRay {
		add([]string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}, "*")
	}
	for a := range g {
		sort.Strings(g[a])
	}
	return g
}

// grantsOf reads a function's role policy from its template: action → the
// resources, named by what they are.
func grantsOf(t *testing.T, raw map[string]any, role, logGroup string) map[string][]string {
	t.Helper()
	g := map[string][]string{}
	res := raw["Resources"].(map[string]any)
	found := false
	var docs []any
	for id, r := range res {
		r := r.(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		switch {
		case r["Type"] == "AWS::IAM::Policy" && jsonString(props["Roles"]) == jsonString([]any{map[string]any{"Ref": role}}):
			docs = append(docs, props["PolicyDocument"])
		case r["Type"] == "AWS::IAM::Role" && id == role:
			for _, p := range listOf(props["Policies"]) {
				if p, ok := p.(map[string]any); ok {
					docs = append(docs, p["PolicyDocument"])
				}
			}
		}
	}
	for _, doc := range docs {
		found = true
		for _, st := range doc.(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Errorf("role %s: statement %v", role, st)
			}
			for _, a := range listOf(st["Action"]) {
				for _, r := range listOf(st["Resource"]) {
					g[fmt.Sprint(a)] = append(g[fmt.Sprint(a)], resourceKind(t, r, logGroup, st["Condition"]))
				}
			}
		}
	}
	if !found {
		t.Errorf("role %s has no policy", role)
	}
	for a := range g {
		sort.Strings(g[a])
	}
	return g
}

func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// resourceKind names a policy resource by what it refers to.
func resourceKind(t *testing.T, r any, logGroup string, cond any) string {
	s := jsonString(r)
	switch {
	case s == `"*"`:
		return "*"
	case strings.Contains(s, "TableArn") && strings.HasSuffix(s, `"/index/*"]]}`):
		return "table-indexes"
	case strings.Contains(s, "TableArn"):
		return "table"
	case strings.Contains(s, logGroup):
		return "own-log-group"
	case strings.Contains(s, "OidcClientSecret") || strings.Contains(s, "oidc-client-secret"):
		return "oidc-client-secret"
	case strings.Contains(s, "SecretKey"):
		return "secret-key"
	case strings.Contains(s, "RuntimeApiKey"):
		return "runtime-key"
	case strings.Contains(s, "llm-api-key"):
		return "llm-key"
	case strings.Contains(s, "StartDeadLetters"):
		return "dead-letter-queue"
	case strings.Contains(s, "StartQueue"):
		return "start-queue"
	case strings.Contains(s, "Bucket") && strings.HasSuffix(s, `"/`+blobPrefix+`/*"]]}`):
		return "objects-under-prefix"
	case strings.Contains(s, "Bucket") && jsonString(cond) == `{"StringLike":{"s3:prefix":["`+blobPrefix+`/*"]}}`:
		return "bucket-prefix-only"
	}
	t.Errorf("policy resource %s: not one the functions should reach", s)
	return s
}

// Each function's policy is exactly what its configuration needs: a route
// that gains a need its policy lacks fails here.
func TestFunctionPoliciesEqualTheirNeeds(t *testing.T) {
	s := mainSynth(t)
	raws := map[string]map[string]any{APIStack: readTemplate(t, s.dir, APIStack), ProvisioningStack: readTemplate(t, s.dir, ProvisioningStack)}
	for _, f := range allFunctions(s.stacks) {
		raw := raws[stackOf(f)]
		role := logicalOfPrefix(t, raw, "AWS::IAM::Role", logicalName(f.Spec.Name)+"Role")
		logs := logicalOfPrefix(t, raw, "AWS::Logs::LogGroup", logicalName(f.Spec.Name)+"Logs")
		got, want := grantsOf(t, raw, role, logs), expectedGrants(f.Spec, s.props)
		if jsonString(got) != jsonString(want) {
			t.Errorf("%s (needs %d): grants\n%s\nwant\n%s", f.Spec.Name, f.Spec.Need, jsonString(got), jsonString(want))
		}
	}
}

// A route that gains needs gets their configuration and grants; a need the
// functions cannot configure stops the synthesis.
func TestARouteThatGainsANeedGetsItsGrant(t *testing.T) {
	p := testProps(t)
	p.Routes = slices.Clone(api.Routes)
	i := slices.IndexFunc(p.Routes, func(r api.Route) bool { return r.Name == "get_me" })
	p.Routes[i].Needs |= config.NeedQueue | config.NeedBlobs | config.NeedSignIn
	// The EKS runtime, X-Ray and a custom domain, in the same synthesis;
	// and your own OpenID Connect issuer with a cached authorizer.
	p.OIDC, p.OIDCIssuerURL, p.OIDCClientID, p.OIDCClientSecret = OIDCIssuer, "https://accounts.google.com", "acs-client", "acs/oidc-client-secret"
	p.OIDCAllowedDomains, p.OIDCCreateUsers = "example.com", jsii.Bool(false)
	p.AuthorizerCacheTTL = 5 * time.Minute
	p.RuntimeAPIURL, p.EKSCluster, p.EKSEndpoint, p.EKSCAData = "", "acs", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "LS0tLS1CRUdJTg=="
	p.KubeBaseHost, p.SandboxImage, p.XRay = "sandboxes.example.com", "example.com/acs-sandbox:1", true
	p.DomainName, p.CertificateARN = "acs.example.com", "arn:aws:acm:eu-west-1:123456789012:certificate/abc"
	s, dir := synth(t, p)
	raw := readTemplate(t, dir, APIStack)
	getMe := s.API.Routes[slices.IndexFunc(s.API.Routes, func(f *Function) bool { return f.Spec.Name == "get_me" })]
	role := logicalOfPrefix(t, raw, "AWS::IAM::Role", "GetMeRole")
	got := grantsOf(t, raw, role, logicalOfPrefix(t, raw, "AWS::Logs::LogGroup", "GetMeLogs"))
	if jsonString(got) != jsonString(expectedGrants(getMe.Spec, p)) || len(got["sqs:SendMessage"]) == 0 || len(got["s3:GetObject"]) == 0 ||
		!slices.Contains(got["secretsmanager:GetSecretValue"], "oidc-client-secret") {
		t.Errorf("get_me with the queue and blobs: grants %s", jsonString(got))
	}
	at := tpl(t, dir, APIStack)
	// The public URL is the web UI's distribution, custom domain or not;
	// the custom domain is the API's URL for programs.
	distURL := map[string]any{"Fn::Join": []any{"", []any{"https://",
		map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Distribution")), "DomainName"}}}}}
	check(t, "ApiUrl is the custom domain", func() {
		at.HasOutput(jsii.String("ApiUrl"), obj(map[string]any{"Value": "https://acs.example.com"}))
	})
	check(t, "get_me's configuration", func() {
		at.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
			"Description": "ACS GET /api/v1/users/me", "TracingConfig": map[string]any{"Mode": "Active"},
			"Environment": map[string]any{"Variables": map[string]any{"ACS_QUEUE_URL": assertions.Match_AnyValue(),
				"ACS_BUCKET": assertions.Match_AnyValue(), "ACS_BUCKET_PREFIX": blobPrefix,
				config.EnvPublicURL: distURL, config.EnvOIDCIssuer: "https://accounts.google.com",
				config.EnvOIDCClientID: "acs-client", config.EnvOIDCClientSecret + config.SecretARNSuffix: "acs/oidc-client-secret",
				envOIDCName: config.DefaultOIDCName, envOIDCAllowedDomains: "example.com", envOIDCCreateUsers: "false",
				envOIDCAllowedEmails: assertions.Match_Absent()}}}))
	})
	// Your own issuer: no Cognito; a cached authorizer keys on the
	// Authorization header (and so admits Bearer keys only).
	for _, typ := range []string{"AWS::Cognito::UserPool", "AWS::Cognito::UserPoolClient", "AWS::Cognito::UserPoolDomain"} {
		for _, st := range []string{DataStack, APIStack} {
			check(t, st+": no "+typ, func() { tpl(t, dir, st).ResourceCountIs(jsii.String(typ), jsii.Number(0)) })
		}
	}
	check(t, "the cached authorizer", func() {
		at.HasResourceProperties(jsii.String("AWS::ApiGateway::Authorizer"), obj(map[string]any{
			"Type": "REQUEST", "IdentitySource": "method.request.header.Authorization", "AuthorizerResultTtlInSeconds": 300}))
	})
	// The EKS runtime: the variables the Kubernetes runtime requires, and
	// one access entry per function that reaches sandboxes, in the group
	// deploy/kubernetes grants the sandbox namespace's Role to.
	check(t, "a runtime function's EKS configuration", func() {
		at.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
			"Description": "ACS GET /api/v1/app-conversations",
			"Environment": map[string]any{"Variables": map[string]any{
				config.EnvRuntime: "kubernetes", config.EnvEKSCluster: "acs", config.EnvKubeServer: p.EKSEndpoint,
				config.EnvKubeCAData: p.EKSCAData, config.EnvKubeBaseHost: p.KubeBaseHost, config.EnvSandboxImage: p.SandboxImage,
				config.EnvKubeNamespace: "acs-sandboxes", config.EnvPublicURL: distURL,
				config.EnvRuntimeAPIKey + config.SecretARNSuffix: assertions.Match_Absent()}}}))
	})
	runtimeFns := 0
	for _, f := range allFunctions(s) {
		if f.Spec.Need&config.NeedRuntime != 0 {
			runtimeFns++
		}
	}
	sb := tpl(t, dir, SandboxesStack)
	check(t, "access entries", func() { sb.ResourceCountIs(jsii.String("AWS::EKS::AccessEntry"), jsii.Number(runtimeFns)) })
	check(t, "access entry scope", func() {
		sb.AllResourcesProperties(jsii.String("AWS::EKS::AccessEntry"), obj(map[string]any{
			"ClusterName": "acs", "Type": "STANDARD", "KubernetesGroups": []any{KubeGroup}, "AccessPolicies": assertions.Match_Absent()}))
	})
	check(t, "custom domain", func() {
		at.HasResourceProperties(jsii.String("AWS::ApiGateway::DomainName"), obj(map[string]any{
			"DomainName": "acs.example.com", "RegionalCertificateArn": p.CertificateARN, "SecurityPolicy": "TLS_1_2"}))
		at.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), obj(map[string]any{"TracingEnabled": true}))
	})

	// A need nothing configures stops the synthesis.
	bad := testProps(t)
	bad.Routes = slices.Clone(api.Routes)
	bad.Routes[0].Needs |= 1 << 7
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), bad.Routes[0].Name) {
				t.Errorf("a route with an unknown need synthesized: %v", r)
			}
		}()
		NewStacks(newTestApp(t), bad)
	}()
}

// The group the access entries use is the one deploy/kubernetes binds.
func TestKubeGroupIsTheRoleBindingsGroup(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var obj struct {
			Kind     string
			Subjects []struct{ Kind, Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		for _, s := range obj.Subjects {
			if obj.Kind == "RoleBinding" && s.Kind == "Group" && s.Name == KubeGroup {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("deploy/kubernetes/rbac.yaml binds no group %s", KubeGroup)
	}
}

// The table is dynamostore's definition, on demand, with point-in-time
// recovery, deletion protection, time to live, retained.
func TestTableIsTheStoresDefinition(t *testing.T) {
	s := mainSynth(t)
	def := dynamostore.TableDefinition("")
	var want map[string]any
	remarshal(t, map[string]any{"AttributeDefinitions": def.AttributeDefinitions, "KeySchema": def.KeySchema,
		"GlobalSecondaryIndexes": def.GlobalSecondaryIndexes, "BillingMode": def.BillingMode}, &want)
	dropEmpty(want)
	want["TimeToLiveSpecification"] = map[string]any{"AttributeName": dynamostore.TTLAttribute, "Enabled": true}
	want["PointInTimeRecoverySpecification"] = map[string]any{"PointInTimeRecoveryEnabled": true}
	want["DeletionProtectionEnabled"] = true
	want["SSESpecification"] = map[string]any{"SSEEnabled": false}
	data := tpl(t, s.dir, DataStack)
	check(t, "the table", func() {
		data.HasResource(jsii.String("AWS::DynamoDB::Table"), obj(map[string]any{
			"Properties": assertions.Match_ObjectEquals(&want), "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}))
	})
	check(t, "the bucket", func() {
		data.HasResource(jsii.String("AWS::S3::Bucket"), obj(map[string]any{"DeletionPolicy": "Retain", "Properties": map[string]any{
			"BucketEncryption":               map[string]any{"ServerSideEncryptionConfiguration": []any{map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}}},
			"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
			"LifecycleConfiguration": map[string]any{"Rules": []any{
				map[string]any{"Id": "archives", "Prefix": "acs/archives/", "ExpirationInDays": 90, "Status": "Enabled"},
				map[string]any{"Id": "large-events", "Prefix": "acs/events/", "Status": "Enabled",
					"Transitions": []any{map[string]any{"StorageClass": "INTELLIGENT_TIERING", "TransitionInDays": 30}}},
				map[string]any{"Id": "incomplete-uploads", "Status": "Enabled", "AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1}},
			}}}}))
		data.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), obj(map[string]any{"PolicyDocument": map[string]any{
			"Statement": []any{map[string]any{"Effect": "Deny", "Action": "s3:*", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				"Principal": map[string]any{"AWS": "*"}, "Resource": assertions.Match_AnyValue()}}}}))
	})
	check(t, "the secret key", func() {
		data.HasResource(jsii.String("AWS::SecretsManager::Secret"), obj(map[string]any{"DeletionPolicy": "Retain", "Properties": map[string]any{
			"GenerateSecretString": map[string]any{"PasswordLength": 48, "ExcludePunctuation": true}, "SecretString": assertions.Match_Absent()}}))
	})
	for _, o := range []string{"TableName", "BucketName", "StartQueueName", "DeadLetterQueueName"} {
		check(t, "output "+o, func() { data.HasOutput(jsii.String(o), obj(map[string]any{"Value": assertions.Match_AnyValue()})) })
	}
	check(t, "output ApiUrl", func() { tpl(t, s.dir, APIStack).HasOutput(jsii.String("ApiUrl"), obj(map[string]any{})) })
}

func dropEmpty(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else if l, ok := e.([]any); ok && len(l) == 0 {
				delete(v, k)
			} else {
				dropEmpty(e)
			}
		}
	case []any:
		for _, e := range v {
			dropEmpty(e)
		}
	}
}

// The queues, the event source and the schedule carry the functions'
// constants.
func TestQueueRedriveAndScheduleFromTheFunctionsConstants(t *testing.T) {
	s := mainSynth(t)
	data := tpl(t, s.dir, DataStack)
	check(t, "the start queue", func() {
		data.HasResourceProperties(jsii.String("AWS::SQS::Queue"), obj(map[string]any{
			"VisibilityTimeout": functions.StartQueueVisibility.Seconds(), "SqsManagedSseEnabled": true,
			"RedrivePolicy": map[string]any{"maxReceiveCount": functions.StartQueueMaxReceiveCount, "deadLetterTargetArn": assertions.Match_AnyValue()}}))
		data.HasResourceProperties(jsii.String("AWS::SQS::Queue"), obj(map[string]any{
			"MessageRetentionPeriod": sqsqueue.DeadLetterRetention.Seconds(), "SqsManagedSseEnabled": true}))
	})
	if functions.StartQueueVisibility < functions.ProvisionerTimeout {
		t.Errorf("the start queue's visibility %s is shorter than the provisioner's timeout %s", functions.StartQueueVisibility, functions.ProvisionerTimeout)
	}
	pr := tpl(t, s.dir, ProvisioningStack)
	check(t, "the event source", func() {
		pr.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj(map[string]any{
			"BatchSize": functions.ProvisionerBatchSize, "FunctionResponseTypes": []any{"ReportBatchItemFailures"}}))
	})
	check(t, "the schedule", func() {
		pr.HasResourceProperties(jsii.String("AWS::Events::Rule"), obj(map[string]any{"ScheduleExpression": "rate(1 minute)", "State": "ENABLED"}))
	})
}

func TestAlarmsAndDashboard(t *testing.T) {
	s := mainSynth(t)
	ops := tpl(t, s.dir, OperationsStack)
	n := len(functions.All(s.props.Routes))
	groups := (n + metricsPerAlarm - 1) / metricsPerAlarm
	check(t, "alarm count", func() { ops.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(4+2*groups)) })
	check(t, "alarms notify", func() {
		ops.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), obj(map[string]any{"AlarmActions": []any{assertions.Match_AnyValue()}}))
	})
	for _, m := range []map[string]any{
		{"MetricName": "ApproximateNumberOfMessagesVisible", "Namespace": "AWS/SQS", "Threshold": 0},
		{"MetricName": "5XXError", "Namespace": "AWS/ApiGateway", "Threshold": 0.05},
		{"MetricName": "ApproximateAgeOfOldestMessage", "Namespace": "AWS/SQS"},
		{"MetricName": metricTasksFailed, "Namespace": metricNamespace, "Threshold": 0},
	} {
		check(t, fmt.Sprint("alarm ", m["MetricName"]), func() {
			ops.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), obj(m))
		})
	}
	// Every function's errors and throttles are in an alarm.
	b, _ := json.Marshal(readTemplate(t, s.dir, OperationsStack))
	for _, kind := range []string{"Errors", "Throttles"} {
		if got := strings.Count(string(b), `"MetricName":"`+kind+`"`); got < n {
			t.Errorf("%d functions' %s in the alarms and dashboard, want all %d", got, kind, n)
		}
	}
	check(t, "dashboard", func() { ops.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1)) })
	for _, st := range []string{APIStack, ProvisioningStack} {
		check(t, st+": the failed-start metric on every log group", func() {
			tpl(t, s.dir, st).AllResourcesProperties(jsii.String("AWS::Logs::MetricFilter"), obj(map[string]any{
				"FilterPattern":         `{ $.msg = "startflow: start task ended ERROR" }`,
				"MetricTransformations": []any{map[string]any{"MetricName": metricTasksFailed, "MetricNamespace": metricNamespace, "MetricValue": "1"}}}))
		})
	}
}

// No wildcard actions, no "*" resource but X-Ray's, no secret values, no
// provisioned concurrency, NAT gateway or always-on compute.
func TestNothingWildNothingSecretNothingAlwaysOn(t *testing.T) {
	s := mainSynth(t)
	allowed := map[string]bool{}
	for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::S3::BucketPolicy", "AWS::SQS::Queue", "AWS::SQS::QueuePolicy",
		"AWS::SecretsManager::Secret", "AWS::Logs::LogGroup", "AWS::Logs::MetricFilter", "AWS::IAM::Role", "AWS::IAM::Policy",
		"AWS::Lambda::Function", "AWS::Lambda::Permission", "AWS::Lambda::EventSourceMapping", "AWS::Events::Rule",
		"AWS::ApiGateway::RestApi", "AWS::ApiGateway::Account", "AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage",
		"AWS::ApiGateway::Resource", "AWS::ApiGateway::Method", "AWS::ApiGateway::GatewayResponse", "AWS::ApiGateway::Authorizer",
		"AWS::SNS::Topic", "AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard", "AWS::CDK::Metadata",
		"AWS::Cognito::UserPool", "AWS::Cognito::UserPoolDomain", "AWS::Cognito::UserPoolClient",
		"AWS::CloudFront::Distribution", "AWS::CloudFront::OriginAccessControl", "AWS::CloudFront::Function",
		"AWS::CloudFront::CachePolicy"} {
		allowed[typ] = true // storage, serverless on demand, or free when idle (CloudFront: per request)
	}
	secretNames := regexp.MustCompile(`"(` + strings.Join(config.SecretVariables, "|") + `)":`)
	for _, st := range []string{DataStack, APIStack, ProvisioningStack, OperationsStack} {
		raw := readTemplate(t, s.dir, st)
		b, _ := json.Marshal(raw)
		for _, bad := range []string{"ProvisionedConcurrencyConfig", "NatGateway", `"sk-`} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s: template holds %s", st, bad)
			}
		}
		if m := secretNames.FindString(string(b)); m != "" {
			t.Errorf("%s: a secret's value is configured in plain text (%s)", st, m)
		}
		for id, r := range raw["Resources"].(map[string]any) {
			r := r.(map[string]any)
			typ := r["Type"].(string)
			if !allowed[typ] {
				t.Errorf("%s: %s is a %s, which is not among the scale-to-zero resources", st, id, typ)
			}
			// A secret's value is generated by Secrets Manager, or is the
			// Cognito app client's generated secret, which CloudFormation
			// copies at deployment: never a value in the template.
			if props, ok := r["Properties"].(map[string]any); ok && typ == "AWS::SecretsManager::Secret" {
				if v, ok := props["SecretString"]; ok && !clientSecretAttr(raw, v) {
					t.Errorf("%s: secret %s holds %s", st, id, jsonString(v))
				}
			}
			if typ != "AWS::IAM::Policy" && typ != "AWS::IAM::Role" {
				continue
			}
			props := r["Properties"].(map[string]any)
			docs := []any{props["PolicyDocument"]}
			for _, p := range listOf(props["Policies"]) {
				if p, ok := p.(map[string]any); ok {
					docs = append(docs, p["PolicyDocument"])
				}
			}
			for _, d := range docs {
				d, ok := d.(map[string]any)
				if !ok {
					continue
				}
				for _, stmt := range listOf(d["Statement"]) {
					stmt := stmt.(map[string]any)
					actions := listOf(stmt["Action"])
					for _, a := range actions {
						if a == "*" || strings.HasSuffix(fmt.Sprint(a), ":*") {
							t.Errorf("%s: %s allows %v", st, id, a)
						}
					}
					for _, res := range listOf(stmt["Resource"]) {
						if res == "*" && !allXRay(actions) {
							t.Errorf("%s: %s grants %v on *", st, id, actions)
						}
					}
				}
			}
		}
	}
}

// clientSecretAttr reports whether v is {"Fn::GetAtt": [<a Cognito app
// client of raw>, "ClientSecret"]}.
func clientSecretAttr(raw map[string]any, v any) bool {
	m, _ := v.(map[string]any)
	ga, _ := m["Fn::GetAtt"].([]any)
	if len(m) != 1 || len(ga) != 2 || ga[1] != "ClientSecret" {
		return false
	}
	id, _ := ga[0].(string)
	r, _ := raw["Resources"].(map[string]any)[id].(map[string]any)
	return r["Type"] == "AWS::Cognito::UserPoolClient"
}

func allXRay(actions []any) bool {
	for _, a := range actions {
		if !strings.HasPrefix(fmt.Sprint(a), "xray:") {
			return false
		}
	}
	return len(actions) > 0
}

// Bad context is refused with every problem named.
func TestContextIsValidated(t *testing.T) {
	_, err := FromContext(func(k string) string {
		return map[string]string{"stage": "a b", "eksCluster": "c", "runtimeApiUrl": "http://x", "adminKeySha256": "nothex",
			"logRetentionDays": "31", "tracing": "zipkin", "domainName": "acs.example.com", "env": `{"ACS_SECRET_KEY":"x","ACS_TABLE":"t"}`}[k]
	})
	if err == nil {
		t.Fatal("bad context accepted")
	}
	for _, want := range []string{"stage", "exclude each other", "adminKeySha256", "logRetentionDays", "tracing", "certificateArn",
		"env ACS_SECRET_KEY", "env ACS_TABLE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if _, err := FromContext(func(string) string { return "" }); err != nil {
		t.Errorf("no context at all: %v", err)
	}
	// Sign-in.
	for _, tc := range []struct {
		ctx  map[string]string
		want []string
	}{
		{map[string]string{"oidc": "saml"}, []string{"oidc \"saml\""}},
		{map[string]string{"oidcIssuer": "http://id.example.com"}, []string{"oidcIssuer", "oidcClientId is required"}},
		{map[string]string{"oidc": "none", "oidcClientId": "x", "oidcAllowedDomains": "example.com", "cognitoSelfSignUp": "true"},
			[]string{"go with oidc=issuer", "go with oidc=cognito", "need OpenID Connect"}},
		{map[string]string{"cognitoDomainPrefix": "my-cognito", "cognitoSelfSignUp": "yes", "oidcCreateUsers": "maybe"},
			[]string{"cognitoDomainPrefix", "cognitoSelfSignUp", "oidcCreateUsers"}},
		{map[string]string{"env": `{"ACS_OIDC_ISSUER":"https://id.example.com","ACS_OIDC_CLIENT_SECRET":"s"}`},
			[]string{"env ACS_OIDC_ISSUER", "env ACS_OIDC_CLIENT_SECRET: a secret"}},
	} {
		_, err := FromContext(func(k string) string { return tc.ctx[k] })
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %v does not name %s", tc.ctx, err, want)
			}
		}
	}
	for _, ok := range []map[string]string{
		{"oidcIssuer": "https://accounts.google.com", "oidcClientId": "c"},
		{"oidc": "issuer", "oidcIssuer": "https://id.example.com/", "oidcClientId": "c", "oidcClientSecret": "acs/oidc"},
		{"oidc": "none"},
		{"cognitoDomainPrefix": "acs-prod-1", "cognitoSelfSignUp": "true", "oidcAllowedDomains": "example.com", "oidcCreateUsers": "false"},
	} {
		if p, err := FromContext(func(k string) string { return ok[k] }); err != nil {
			t.Errorf("%v: %v", ok, err)
		} else if want := map[bool]string{true: OIDCIssuer, false: p.OIDC}[ok["oidcIssuer"] != ""]; p.OIDC != want {
			t.Errorf("%v: oidc %s, want %s", ok, p.OIDC, want)
		}
	}
}

// logicalOf finds the one resource of typ whose Description is desc.
func logicalOf(t *testing.T, raw map[string]any, typ, desc string) string {
	t.Helper()
	for id, r := range raw["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ && r["Properties"].(map[string]any)["Description"] == desc {
			return id
		}
	}
	t.Fatalf("no %s described %q", typ, desc)
	return ""
}

func logicalOfPrefix(t *testing.T, raw map[string]any, typ, prefix string) string {
	t.Helper()
	var found []string
	for id, r := range raw["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == typ && strings.HasPrefix(id, prefix) && len(id) == len(prefix)+8 {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %s*: %v", typ, prefix, found)
	}
	return found[0]
}

// methodPath is the resource path of the method of a route.
func methodPath(t *testing.T, raw map[string]any, name string) string {
	t.Helper()
	res := raw["Resources"].(map[string]any)
	var path func(id string) string
	path = func(id string) string {
		r, ok := res[id].(map[string]any)
		if !ok || r["Type"] != "AWS::ApiGateway::Resource" {
			return ""
		}
		p := r["Properties"].(map[string]any)
		parent := ""
		if ref, ok := p["ParentId"].(map[string]any)["Ref"].(string); ok {
			parent = path(ref)
		}
		return parent + "/" + fmt.Sprint(p["PathPart"])
	}
	for _, r := range res {
		r := r.(map[string]any)
		if r["Type"] == "AWS::ApiGateway::Method" && r["Properties"].(map[string]any)["OperationName"] == name {
			return path(r["Properties"].(map[string]any)["ResourceId"].(map[string]any)["Ref"].(string))
		}
	}
	return ""
}
