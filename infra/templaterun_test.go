package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/internal/lambdatest"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/s3blob"
)

const (
	runAdminKey = "acs_template-run-admin-key-0123456789"
	module      = "github.com/acs-project/acs/functions/"
)

var testCreds = credentials.NewStaticCredentialsProvider("test", "test", "")

// TestTemplateRuns stands the synthesized templates up on the local
// servers — the table on DynamoDB Local from the template's
// AWS::DynamoDB::Table, the queues on fauxqs with the template's redrive
// policy, the bucket on gofakes3, the secrets on a stand-in Secrets
// Manager — runs every function's real binary through the Lambda runtime
// harness with the template's environment, behind an API Gateway emulator
// wired by the template's methods, authorizer and gateway responses, with
// the template's event source mapping and schedule, and drives start →
// READY → events → download through it. What the emulators can see of a
// template that would not work in AWS fails here: a variable a function
// lacks, a method integrated with no function or without the permission to
// invoke it, a queue whose visibility is shorter than its consumer's
// timeout, a secret served from nowhere.
func TestTemplateRuns(t *testing.T) {
	ddbEP, sqsEP := os.Getenv("ACS_TEST_DYNAMODB_ENDPOINT"), os.Getenv("ACS_TEST_SQS_ENDPOINT")
	if ddbEP == "" || sqsEP == "" {
		t.Skip("ACS_TEST_DYNAMODB_ENDPOINT and ACS_TEST_SQS_ENDPOINT are not set: run the tests through make test / scripts/test.sh")
	}
	ctx := context.Background()

	// What the deployment is configured with: a sandbox runtime API (acs
	// runtime-api, process sandboxes) and a scripted LLM.
	rtKey := randomHex(16)
	rtURL, rtRoot := lambdatest.StartRuntimeAPI(t, rtKey)
	llm := llmtest.New(script()...)
	t.Cleanup(llm.Close)
	p, err := FromContext(func(k string) string {
		return map[string]string{
			"runtimeApiUrl": rtURL, "adminKeySha256": acs.HashKey(runAdminKey), "llmApiKeySecret": "acs/llm-api-key",
			"env": jsonString(map[string]string{"LLM_BASE_URL": llm.URL, "LLM_MODEL": "openai/template-model", "ACS_SANDBOX_STARTUP_TIMEOUT": "60s"}),
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p.AssetDir = stubAssets(t, p.Routes)
	// No UI files: their deployment is a CDK custom resource (a Python
	// function) this test does not run.
	p.WebDir = filepath.Join(t.TempDir(), "no-web-ui")
	_, dir := synth(t, p)
	w := readWorld(t, dir)

	// Data: the table, from the template's properties.
	ddb := dynamodb.New(dynamodb.Options{Region: lambdatest.Region, BaseEndpoint: aws.String(ddbEP), Credentials: testCreds})
	for _, r := range w.ofType("AWS::DynamoDB::Table") {
		name := "acs-tpl-" + randomHex(6)
		in := &dynamodb.CreateTableInput{TableName: aws.String(name)}
		remarshal(t, map[string]any{"AttributeDefinitions": r.Props["AttributeDefinitions"], "KeySchema": r.Props["KeySchema"],
			"GlobalSecondaryIndexes": r.Props["GlobalSecondaryIndexes"], "BillingMode": r.Props["BillingMode"]}, in)
		if _, err := ddb.CreateTable(ctx, in); err != nil {
			t.Fatalf("create the template's table on DynamoDB Local: %v", err)
		}
		t.Cleanup(func() { ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
		if ttl, ok := r.Props["TimeToLiveSpecification"].(map[string]any); ok {
			if _, err := ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(fmt.Sprint(ttl["AttributeName"])),
					Enabled: aws.Bool(ttl["Enabled"] == true)}}); err != nil {
				t.Fatalf("the template's time to live: %v", err)
			}
		}
		w.set(r, "", name)
		w.set(r, "Arn", "arn:aws:dynamodb:"+lambdatest.Region+":"+lambdatest.AccountID+":table/"+name)
	}

	// Queues: those a redrive policy points at first, then the others with
	// the template's attributes and redrive policy.
	sqsc := sqs.New(sqs.Options{Region: lambdatest.Region, BaseEndpoint: aws.String(sqsEP), Credentials: testCreds})
	queues := w.ofType("AWS::SQS::Queue")
	for pass := 0; pass < 2; pass++ {
		for _, r := range queues {
			_, redrive := r.Props["RedrivePolicy"]
			if redrive != (pass == 1) {
				continue
			}
			attrs := map[string]string{}
			for _, a := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds", "MaximumMessageSize"} {
				if v, ok := r.Props[a]; ok {
					attrs[a] = w.must(t, r, v)
				}
			}
			if rp, ok := r.Props["RedrivePolicy"].(map[string]any); ok {
				attrs["RedrivePolicy"] = jsonString(map[string]any{"deadLetterTargetArn": w.must(t, r, rp["deadLetterTargetArn"]),
					"maxReceiveCount": rp["maxReceiveCount"]})
			}
			name := "acs-tpl-" + strings.ToLower(r.ID[:min(len(r.ID), 20)]) + "-" + randomHex(4)
			out, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
			if err != nil {
				t.Fatalf("create the template's queue %s (%v): %v", r.ID, attrs, err)
			}
			url := aws.ToString(out.QueueUrl)
			t.Cleanup(func() { sqsc.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
			got, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range attrs {
				if k != "RedrivePolicy" && got.Attributes[k] != v {
					t.Fatalf("queue %s: %s is %q on fauxqs, the template says %q", r.ID, k, got.Attributes[k], v)
				}
			}
			w.set(r, "", url)
			w.set(r, "QueueUrl", url)
			w.set(r, "QueueName", name)
			w.set(r, "Arn", got.Attributes["QueueArn"])
		}
	}

	// The bucket, on gofakes3.
	s3srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(s3srv.Close)
	s3c := s3blob.NewClient(s3srv.URL, lambdatest.Region, true, testCreds)
	for _, r := range w.ofType("AWS::S3::Bucket") {
		name := "acs-tpl-" + randomHex(6)
		if err := s3blob.CreateBucket(ctx, s3c, name); err != nil {
			t.Fatal(err)
		}
		w.set(r, "", name)
		w.set(r, "Arn", "arn:aws:s3:::"+name)
	}

	// Cognito: the user pool, its hosted UI domain and the app client (with
	// the secret Cognito generates for it).
	for _, r := range w.ofType("AWS::Cognito::UserPool") {
		id := lambdatest.Region + "_tpl" + randomHex(4)
		w.set(r, "", id)
		w.set(r, "Arn", "arn:aws:cognito-idp:"+lambdatest.Region+":"+lambdatest.AccountID+":userpool/"+id)
		w.set(r, "ProviderURL", "cognito-idp."+lambdatest.Region+".amazonaws.com/"+id)
	}
	for _, r := range w.ofType("AWS::Cognito::UserPoolDomain") {
		w.set(r, "", w.must(t, r, r.Props["Domain"]))
	}
	for _, r := range w.ofType("AWS::Cognito::UserPoolClient") {
		w.set(r, "", "tplclient"+randomHex(8))
		w.set(r, "ClientSecret", randomHex(24))
	}

	// Secrets: generated ones as the template asks (or the Cognito app
	// client's, which CloudFormation copies); the runtime API's key is
	// the one the runtime API was started with (the operator's step); the
	// LLM key is an existing secret, named by the context.
	sm := newFakeSecrets(t)
	for _, r := range w.ofType("AWS::SecretsManager::Secret") {
		fromClient := clientSecretAttr(readTemplate(t, dir, r.Stack), r.Props["SecretString"])
		if _, ok := r.Props["SecretString"]; ok && !fromClient {
			t.Fatalf("secret %s carries its value in the template", r.ID)
		}
		arn := "arn:aws:secretsmanager:" + lambdatest.Region + ":" + lambdatest.AccountID + ":secret:" + r.ID + "-" + randomHex(3)
		if gen, ok := r.Props["GenerateSecretString"].(map[string]any); ok {
			sm.put(arn, generate(gen))
		} else if fromClient {
			sm.put(arn, w.must(t, r, r.Props["SecretString"]))
		} else {
			t.Fatalf("secret %s is neither generated by Secrets Manager nor a Cognito client's", r.ID)
		}
		w.set(r, "", arn)
	}
	sm.put(p.LLMAPIKeySecret, "sk-template-run")
	// The operator gives the runtime API the key of the secret the functions
	// read it from (here the other way round: the secret holds the key the
	// runtime API was started with).
	for _, r := range w.ofType("AWS::Lambda::Function") {
		vars, _ := r.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		if v, ok := vars[config.EnvRuntimeAPIKey+config.SecretARNSuffix]; ok {
			sm.put(w.must(t, r, v), rtKey)
		}
	}

	// The API: its id, resources and stage.
	var stage string
	apiResources := map[string]string{} // "stack/id" → path
	for _, r := range w.ofType("AWS::ApiGateway::RestApi") {
		w.set(r, "", lambdatest.APIID)
		w.set(r, "RootResourceId", "root")
		if bt := jsonString(r.Props["BinaryMediaTypes"]); bt != `["*/*"]` {
			t.Fatalf("the API's binary media types %s: downloads would be mangled", bt)
		}
	}
	for _, r := range w.ofType("AWS::ApiGateway::Stage") {
		stage = w.must(t, r, r.Props["StageName"])
		w.set(r, "", stage)
	}
	var pathOf func(r *resource) string
	pathOf = func(r *resource) string {
		if p, ok := apiResources[key(r.Stack, r.ID)]; ok {
			return p
		}
		parent := ""
		if pr := w.refersTo(r.Stack, r.Props["ParentId"], "AWS::ApiGateway::Resource"); pr != nil {
			parent = pathOf(pr)
		} else if w.refersTo(r.Stack, r.Props["ParentId"], "AWS::ApiGateway::RestApi") == nil {
			t.Fatalf("resource %s: parent %v", r.ID, r.Props["ParentId"])
		}
		p := parent + "/" + w.must(t, r, r.Props["PathPart"])
		apiResources[key(r.Stack, r.ID)] = p
		w.set(r, "", "res-"+r.ID)
		return p
	}
	for _, r := range w.ofType("AWS::ApiGateway::Resource") {
		pathOf(r)
	}
	for _, r := range w.ofType("AWS::ApiGateway::Authorizer") {
		w.set(r, "", "auth-"+strings.ToLower(r.ID[:min(8, len(r.ID))]))
	}
	// What the functions' environment calls the API: the stage's URL in AWS,
	// this test's gateway here (the one name resolution this test does).
	gw := &lambdatest.Gateway{StageName: stage, Responses: map[string]lambdatest.GatewayResponse{}}
	stageSrv := httptest.NewServer(gw)
	t.Cleanup(stageSrv.Close)
	// The distribution's stand-in: the same gateway under another name
	// (localhost, where the stage is 127.0.0.1), so that its origin is not
	// the requests' own.
	webSrvURL := strings.Replace(stageSrv.URL, "127.0.0.1", "localhost", 1)
	awsStageURL := "https://" + lambdatest.APIID + ".execute-api." + lambdatest.Region + ".amazonaws.com/" + stage
	// The public URL is the web UI's distribution, which forwards the API's
	// paths to that stage: here its URL too is the local gateway, once the
	// template shows its API origin is the stage.
	const distDomain = "d111111abcdef8.cloudfront.net"
	awsWebURL := "https://" + distDomain
	for _, r := range w.ofType("AWS::CloudFront::Distribution") {
		w.set(r, "DomainName", distDomain)
		for _, o := range listOf(r.Props["DistributionConfig"].(map[string]any)["Origins"]) {
			o := o.(map[string]any)
			if _, ok := o["CustomOriginConfig"]; ok {
				if got := "https://" + w.must(t, r, o["DomainName"]) + fmt.Sprint(o["OriginPath"]); got != awsStageURL {
					t.Fatalf("the distribution forwards to %s, not the stage %s", got, awsStageURL)
				}
			}
		}
	}

	// The functions: each resource's asset names its function; its
	// environment is the template's, plus where the local servers are.
	lambdas := w.ofType("AWS::Lambda::Function")
	var pkgs []string
	names := map[string]string{}
	for _, r := range lambdas {
		name := w.assetFunction(t, r)
		names[key(r.Stack, r.ID)] = name
		pkgs = append(pkgs, packageOf(name))
		w.set(r, "", "acs-"+r.ID)
		w.set(r, "Arn", "arn:aws:lambda:"+lambdatest.Region+":"+lambdatest.AccountID+":function:acs-"+r.ID)
		for prop, want := range map[string]string{"Runtime": "provided.al2023", "Handler": "bootstrap", "Architectures": `["arm64"]`} {
			if got := fmt.Sprint(r.Props[prop]); prop == "Architectures" {
				got = jsonString(r.Props[prop])
				if got != want {
					t.Errorf("function %s: %s %s, want %s", name, prop, got, want)
				}
			} else if got != want {
				t.Errorf("function %s: %s %s, want %s", name, prop, got, want)
			}
		}
	}
	bins := lambdatest.BuildAll(t, pkgs)
	fns := map[string]*lambdatest.Function{} // by "stack/id"
	byName := map[string]*lambdatest.Function{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range lambdas {
		env := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
			"ACS_DYNAMODB_ENDPOINT=" + ddbEP, "ACS_SQS_ENDPOINT=" + sqsEP, "ACS_S3_ENDPOINT=" + s3srv.URL,
			"ACS_SECRETSMANAGER_ENDPOINT=" + sm.srv.URL}
		vars, _ := r.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		for k, v := range vars {
			s := w.must(t, r, v)
			switch s {
			case awsStageURL:
				s = stageSrv.URL
			case awsWebURL:
				s = webSrvURL
			}
			env = append(env, k+"="+s)
		}
		timeout, _ := r.Props["Timeout"].(float64)
		name := names[key(r.Stack, r.ID)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := lambdatest.Start(ctx, t, lambdatest.Options{Name: "acs-" + r.ID, Binary: bins[packageOf(name)], Env: env,
				Timeout: time.Duration(timeout) * time.Second})
			mu.Lock()
			fns[key(r.Stack, r.ID)] = f
			byName[name] = f
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for name, f := range byName {
		if err := f.InitError(); err != nil {
			t.Fatalf("function %s failed its cold start with the template's configuration: %v\n%s", name, err, f.Stderr())
		}
	}
	fnOf := func(r *resource, v any) (*lambdatest.Function, *resource) {
		t.Helper()
		fr := w.refersTo(r.Stack, v, "AWS::Lambda::Function")
		if fr == nil || fns[key(fr.Stack, fr.ID)] == nil {
			t.Fatalf("%s %s: %v names no function of the template", r.Type, r.ID, v)
		}
		return fns[key(fr.Stack, fr.ID)], fr
	}

	for _, r := range w.ofType("AWS::Events::Rule") {
		w.set(r, "Arn", "arn:aws:events:"+lambdatest.Region+":"+lambdatest.AccountID+":rule/"+r.ID)
	}

	// Permissions to invoke, as Lambda checks them.
	type grant struct{ principal, source string }
	perms := map[string][]grant{}
	for _, r := range w.ofType("AWS::Lambda::Permission") {
		_, fr := fnOf(r, r.Props["FunctionName"])
		if fmt.Sprint(r.Props["Action"]) != "lambda:InvokeFunction" {
			continue
		}
		src := ""
		if s, ok := r.Props["SourceArn"]; ok {
			src = w.must(t, r, s)
		}
		perms[key(fr.Stack, fr.ID)] = append(perms[key(fr.Stack, fr.ID)], grant{fmt.Sprint(r.Props["Principal"]), src})
	}
	mayInvoke := func(fr *resource, principal, source string) bool {
		for _, g := range perms[key(fr.Stack, fr.ID)] {
			if g.principal == principal && (g.source == "" || globMatch(g.source, source)) {
				return true
			}
		}
		return false
	}
	execARN := "arn:aws:execute-api:" + lambdatest.Region + ":" + lambdatest.AccountID + ":" + lambdatest.APIID

	// The authorizer, methods and gateway responses.
	authorizers := map[string]*resource{}
	for _, r := range w.ofType("AWS::ApiGateway::Authorizer") {
		if r.Props["Type"] != "REQUEST" {
			t.Fatalf("authorizer %s: %v, want a REQUEST authorizer", r.ID, r.Props["Type"])
		}
		sources := lambdatest.NoIdentitySources
		if is, ok := r.Props["IdentitySource"]; ok {
			sources = nil
			for _, s := range strings.Split(w.must(t, r, is), ",") {
				sources = append(sources, strings.TrimSpace(s))
			}
		}
		gw.IdentitySources = sources
		f, fr := fnOf(r, r.Props["AuthorizerUri"])
		if !mayInvoke(fr, "apigateway.amazonaws.com", execARN+"/authorizers/"+w.must(t, r, map[string]any{"Ref": r.ID})) {
			t.Fatalf("API Gateway may not invoke the authorizer %s", fr.ID)
		}
		gw.Authorizer = f
		ttl, _ := r.Props["AuthorizerResultTtlInSeconds"].(float64)
		gw.AuthorizerTTL = time.Duration(ttl) * time.Second
		authorizers[key(r.Stack, r.ID)] = r
	}
	for _, r := range w.ofType("AWS::ApiGateway::Method") {
		res := w.refersTo(r.Stack, r.Props["ResourceId"], "AWS::ApiGateway::Resource")
		path := "/"
		if res != nil {
			path = apiResources[key(res.Stack, res.ID)]
		}
		method := fmt.Sprint(r.Props["HttpMethod"])
		integ, _ := r.Props["Integration"].(map[string]any)
		if integ["Type"] != "AWS_PROXY" || integ["IntegrationHttpMethod"] != "POST" {
			t.Fatalf("%s %s: integration %v %v, want a Lambda proxy (AWS_PROXY, POST)", method, path, integ["Type"], integ["IntegrationHttpMethod"])
		}
		f, fr := fnOf(r, integ["Uri"])
		if !mayInvoke(fr, "apigateway.amazonaws.com", execARN+"/"+stage+"/"+method+path) {
			t.Fatalf("%s %s: API Gateway may not invoke %s", method, path, names[key(fr.Stack, fr.ID)])
		}
		authorize := false
		switch r.Props["AuthorizationType"] {
		case "CUSTOM":
			if w.refersTo(r.Stack, r.Props["AuthorizerId"], "AWS::ApiGateway::Authorizer") == nil {
				t.Fatalf("%s %s: CUSTOM authorization without an authorizer", method, path)
			}
			authorize = true
		case "NONE":
		default:
			t.Fatalf("%s %s: authorization %v", method, path, r.Props["AuthorizationType"])
		}
		gw.Routes = append(gw.Routes, lambdatest.GatewayRoute{Method: method, Resource: path, Function: f, Authorize: authorize})
	}
	for _, r := range w.ofType("AWS::ApiGateway::GatewayResponse") {
		gr := lambdatest.GatewayResponse{Headers: map[string]string{}}
		if sc, ok := r.Props["StatusCode"]; ok {
			gr.StatusCode, _ = strconv.Atoi(w.must(t, r, sc))
		}
		if tpl, ok := r.Props["ResponseTemplates"].(map[string]any); ok {
			gr.Body = fmt.Sprint(tpl["application/json"])
		}
		if hs, ok := r.Props["ResponseParameters"].(map[string]any); ok {
			for k, v := range hs {
				gr.Headers[strings.TrimPrefix(k, "gatewayresponse.header.")] = fmt.Sprint(v)
			}
		}
		gw.Responses[fmt.Sprint(r.Props["ResponseType"])] = gr
	}
	if len(gw.Routes) != len(p.Routes) {
		t.Fatalf("%d methods in the template, %d routes", len(gw.Routes), len(p.Routes))
	}
	// The issuer sends people back to the sign-in pages at the public URL.
	for _, r := range w.ofType("AWS::Cognito::UserPoolClient") {
		cb, _ := r.Props["CallbackURLs"].([]any)
		lo, _ := r.Props["LogoutURLs"].([]any)
		if len(cb) != 1 || w.must(t, r, cb[0]) != awsWebURL+oidcCallbackPath || len(lo) != 1 || w.must(t, r, lo[0]) != awsWebURL+oidcLogoutPath {
			t.Fatalf("app client %s: callback %v, logout %v; want the distribution's %s and %s", r.ID, cb, lo, oidcCallbackPath, oidcLogoutPath)
		}
	}

	// The provisioner's event source mapping.
	maps := w.ofType("AWS::Lambda::EventSourceMapping")
	if len(maps) != 1 {
		t.Fatalf("%d event source mappings, want the provisioner's", len(maps))
	}
	esm := maps[0]
	provisioner, pfr := fnOf(esm, esm.Props["FunctionName"])
	queue := w.refersTo(esm.Stack, esm.Props["EventSourceArn"], "AWS::SQS::Queue")
	if queue == nil {
		t.Fatalf("the event source %v is no queue of the template", esm.Props["EventSourceArn"])
	}
	qURL := w.must(t, queue, map[string]any{"Ref": queue.ID})
	if jsonString(esm.Props["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` {
		t.Fatalf("event source mapping: FunctionResponseTypes %v: the provisioner's retries would be deleted", esm.Props["FunctionResponseTypes"])
	}
	// Lambda refuses an SQS event source whose visibility timeout is
	// shorter than the function's timeout.
	vis, _ := strconv.Atoi(w.must(t, queue, queue.Props["VisibilityTimeout"]))
	if ptimeout, _ := pfr.Props["Timeout"].(float64); float64(vis) < ptimeout {
		t.Fatalf("the start queue's visibility timeout %ds is shorter than the provisioner's timeout %gs", vis, ptimeout)
	}
	batch, _ := esm.Props["BatchSize"].(float64)
	sctx, stop := context.WithCancel(ctx)
	source := lambdatest.PollSQS(sctx, t, lambdatest.SQSOptions{Function: provisioner, BatchSize: int(batch),
		QueueARN: w.must(t, queue, map[string]any{"Fn::GetAtt": []any{queue.ID, "Arn"}}),
		Receive: func(ctx context.Context) ([]events.SQSMessage, error) {
			out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
			if err != nil {
				return nil, err
			}
			var recs []events.SQSMessage
			for _, m := range out.Messages {
				recs = append(recs, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
					Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, EventSource: "aws:sqs",
					AWSRegion: lambdatest.Region})
			}
			return recs, nil
		},
		Delete: func(ctx context.Context, receipt string) error {
			_, err := sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(qURL), ReceiptHandle: aws.String(receipt)})
			return err
		},
	})
	t.Cleanup(func() { stop(); source.Wait() })

	// The reconciler's schedule.
	rules := w.ofType("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d rules, want the reconciler's schedule", len(rules))
	}
	rule := rules[0]
	if want := "rate(1 minute)"; rule.Props["ScheduleExpression"] != want || functions.ReconcileEvery != time.Minute {
		t.Fatalf("schedule %v, want %s", rule.Props["ScheduleExpression"], want)
	}
	targets, _ := rule.Props["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("schedule targets %v", targets)
	}
	reconciler, rfr := fnOf(rule, targets[0].(map[string]any)["Arn"])
	if !mayInvoke(rfr, "events.amazonaws.com", w.must(t, rule, map[string]any{"Fn::GetAtt": []any{rule.ID, "Arn"}})) {
		t.Fatalf("EventBridge may not invoke the reconciler")
	}

	// Drive it: start → READY → the agent finishes → events → download.
	c := &client{t: t, url: stageSrv.URL}
	for _, tc := range []struct {
		key  string
		want int
	}{{"", 401}, {"acs_not-a-key-0123456789", 401}} {
		if r := c.do("GET", "/api/v1/users/me", nil, tc.key); r.status != tc.want || !bytes.Contains(r.body, []byte(`"detail"`)) {
			t.Fatalf("key %q: %d %s, want %d with a detail", tc.key, r.status, r.body, tc.want)
		}
	}
	// A browser's request carries a session cookie and no Authorization
	// header: the gateway lets the authorizer decide on it (here: an
	// unknown session, refused).
	before := gw.Stats().AuthorizerInvocations
	req, _ := http.NewRequest("GET", stageSrv.URL+"/api/v1/users/me", nil)
	req.Header.Set("Cookie", "acs_session=not-a-session")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if after := gw.Stats().AuthorizerInvocations; res.StatusCode != 401 || after != before+1 {
		t.Fatalf("a cookie-only request: %d after %d authorizer runs; want 401 from the authorizer itself", res.StatusCode, after-before)
	}
	// A person at the web UI (the distribution, which forwards the viewer's
	// Origin but not its Host) signs in with a key and writes with the
	// session cookie alone: the functions' public URL is the distribution,
	// whose origin is the one a session's writes are accepted from (the
	// requests go to the stage, whose Host is not that origin).
	browser := func(method, path, origin, cookie, contentType, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, stageSrv.URL+path, strings.NewReader(body))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", contentType)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "acs_session", Value: cookie})
		}
		nc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := nc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	var session string
	signIn := browser("POST", "/login", webSrvURL, "", "application/x-www-form-urlencoded", url.Values{"api_key": {runAdminKey}}.Encode())
	for _, ck := range signIn.Cookies() {
		if ck.Name == "acs_session" && ck.Value != "" {
			session = ck.Value
		}
	}
	if session == "" {
		t.Fatalf("signing in at the distribution's origin: %d, no session cookie", signIn.StatusCode)
	}
	// The write keeps the default placement: the start below looks for the
	// agent's file in a sandbox of its own.
	for _, tc := range []struct {
		origin string
		ok     bool
	}{{webSrvURL, true}, {"https://elsewhere.example.com", false}} {
		res := browser("POST", "/api/v1/settings", tc.origin, session, "application/json", `{"sandbox_grouping_strategy":"NO_GROUPING"}`)
		if ok := res.StatusCode/100 == 2; ok != tc.ok || (!ok && res.StatusCode != http.StatusForbidden) {
			t.Fatalf("a session's write from %s: %d; want accepted %v (else 403)", tc.origin, res.StatusCode, tc.ok)
		}
	}

	var task struct {
		ID     string  `json:"id"`
		Status string  `json:"status"`
		Detail *string `json:"detail"`
		Conv   *string `json:"app_conversation_id"`
	}
	r := c.do("POST", "/api/v1/app-conversations", map[string]any{"initial_message": map[string]any{"role": "user",
		"content": []map[string]any{{"type": "text", "text": "Say hi and write notes/result.md"}}, "run": true}}, runAdminKey)
	if r.status != 200 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	r.into(&task)
	testwait.For(t, 120*time.Second, "the start task to be READY", func() bool {
		var ts []*struct {
			Status string  `json:"status"`
			Detail *string `json:"detail"`
			Conv   *string `json:"app_conversation_id"`
		}
		c.do("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, nil, runAdminKey).into(&ts)
		if len(ts) != 1 || ts[0] == nil {
			t.Fatalf("start task %s not served", task.ID)
		}
		if ts[0].Status == "ERROR" {
			t.Fatalf("start ended ERROR: %v\nprovisioner:\n%s", *ts[0].Detail, provisioner.Stderr())
		}
		task.Status, task.Conv = ts[0].Status, ts[0].Conv
		return task.Status == "READY"
	})
	conv := *task.Conv
	testwait.For(t, 90*time.Second, "the agent to finish", func() bool {
		var cs []*struct {
			Exec *string `json:"execution_status"`
		}
		c.do("GET", "/api/v1/app-conversations?ids="+conv, nil, runAdminKey).into(&cs)
		return len(cs) == 1 && cs[0] != nil && cs[0].Exec != nil && *cs[0].Exec == "finished"
	})
	var page struct {
		Items []map[string]any `json:"items"`
	}
	c.do("GET", "/api/v1/conversation/"+conv+"/events/search?limit=100", nil, runAdminKey).into(&page)
	transcript := jsonString(page.Items)
	for _, want := range []string{"ActionEvent", "hi from the template", "FinishAction"} {
		if !strings.Contains(transcript, want) {
			t.Fatalf("transcript lacks %s: %s", want, transcript)
		}
	}
	var count int
	c.do("GET", "/api/v1/conversation/"+conv+"/events/count", nil, runAdminKey).into(&count)
	dl := c.do("GET", "/api/v1/app-conversations/"+conv+"/download", nil, runAdminKey)
	zr, err := zip.NewReader(bytes.NewReader(dl.body), int64(len(dl.body)))
	if dl.status != 200 || err != nil || len(zr.File) != count+1 {
		t.Fatalf("download: %d, %v, %d files for %d events (+ meta.json)", dl.status, err, len(zr.File), count)
	}
	if b, err := os.ReadFile(filepath.Join(rtRoot, conv, "workspace", "notes", "result.md")); err != nil || !strings.Contains(string(b), "template") {
		t.Fatalf("the agent's file: %q %v", b, err)
	}

	// A start that fails: the template's metric filter counts its log line.
	r = c.do("POST", "/api/v1/app-conversations", map[string]any{"sandbox_id": "0123456789abcdef0123456789abcdef"}, runAdminKey)
	if r.status != 200 {
		t.Fatalf("start on an unknown sandbox: %d %s", r.status, r.body)
	}
	var failed struct {
		ID string `json:"id"`
	}
	r.into(&failed)
	testwait.For(t, 60*time.Second, "the failed start to be logged", func() bool {
		for _, mf := range w.ofType("AWS::Logs::MetricFilter") {
			lg := w.refersTo(mf.Stack, mf.Props["LogGroupName"], "AWS::Logs::LogGroup")
			if lg == nil {
				t.Fatalf("metric filter %s names no log group of the template", mf.ID)
			}
			// The function whose log group it is.
			for _, fr := range lambdas {
				if lc, ok := fr.Props["LoggingConfig"].(map[string]any); ok && w.refersTo(fr.Stack, lc["LogGroup"], "AWS::Logs::LogGroup") == lg {
					if matchesFilter(t, fmt.Sprint(mf.Props["FilterPattern"]), fns[key(fr.Stack, fr.ID)].Stderr(), failed.ID) {
						return true
					}
				}
			}
		}
		return false
	})

	// The reconciler, as the schedule invokes it.
	var report map[string]any
	if err := reconciler.InvokeJSON(ctx, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event"}, &report); err != nil {
		t.Fatalf("reconciler: %v\n%s", err, reconciler.Stderr())
	}
	if _, ok := report["dead_lettered_tasks"]; !ok {
		t.Fatalf("reconciler report %v", report)
	}

	// Every secret a function was given was read from Secrets Manager.
	for _, r := range lambdas {
		vars, _ := r.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		for k, v := range vars {
			if strings.HasSuffix(k, "_SECRET_ARN") && sm.readsOf(w.must(t, r, v)) == 0 {
				t.Errorf("%s's %s was never read", names[key(r.Stack, r.ID)], k)
			}
		}
	}
	for name, f := range byName {
		if f.Restarts() != 0 {
			t.Errorf("function %s restarted %d times:\n%s", name, f.Restarts(), f.Stderr())
		}
	}
}

// packageOf is the Go package of a function.
func packageOf(name string) string {
	switch name {
	case functions.Authorizer.Name, functions.Provisioner.Name, functions.Reconciler.Name:
		return module + name
	}
	return module + "routes/" + name
}

// matchesFilter applies a CloudWatch Logs JSON filter pattern of the form
// { $.field = "value" } to the JSON lines of out, looking for a line about
// task.
func matchesFilter(t *testing.T, pattern, out, task string) bool {
	m := regexp.MustCompile(`^\{\s*\$\.([A-Za-z_]+)\s*=\s*"(.*)"\s*\}$`).FindStringSubmatch(strings.TrimSpace(pattern))
	if m == nil {
		t.Fatalf("filter pattern %q: not of the form the test reads", pattern)
	}
	for _, line := range strings.Split(out, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if fmt.Sprint(rec[m[1]]) == m[2] && rec["task"] == task {
			return true
		}
	}
	return false
}

// globMatch is IAM-style matching: '*' any run, '?' one character.
func globMatch(p, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(p)) + "$"
	return regexp.MustCompile(re).MatchString(s)
}

func remarshal(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("template properties %s: %v", b, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// script is the scripted agent: a shell command, a file, finish.
func script() []llmtest.Reply {
	wd := regexp.MustCompile(`Working directory: (\S+)`)
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo hi from the template", "security_risk": "LOW", "summary": "say hi"}}}},
		{Respond: func(req *llmtest.Request) llmtest.Reply {
			path := "/missing-working-directory/result.md"
			if m := wd.FindStringSubmatch(req.SystemText()); m != nil {
				path = filepath.Join(m[1], "notes", "result.md")
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
				"command": "create", "path": path, "file_text": "made through the template\n"}}}}
		}},
		{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}},
	}
}

// client calls the API through the gateway.
type client struct {
	t   *testing.T
	url string
}

type answer struct {
	t      *testing.T
	status int
	body   []byte
}

func (a answer) into(v any) {
	a.t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		a.t.Fatalf("not JSON (%d): %s", a.status, a.body)
	}
}

func (c *client) do(method, path string, body any, key string) answer {
	c.t.Helper()
	a := lambdatest.Call(c.t, c.url, method, path, body, key)
	return answer{c.t, a.Status, a.Body}
}
