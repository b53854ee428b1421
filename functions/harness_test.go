package functions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/lambdatest"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/s3blob"
	"github.com/acs-project/acs/shared/sqsqueue"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lambdatest.RemoveBuilds()
	testbin.Cleanup()
	os.Exit(code)
}

const (
	adminKey   = "acs_aws-e2e-admin-key-0123456789abcdef"
	runtimeKey = "aws-e2e-runtime-api-key-0123456789"
	module     = "github.com/acs-project/acs/functions/"
)

// functionPackages are every Lambda function: one per route, the
// authorizer, the provisioner and the reconciler.
func functionPackages() []string {
	var pkgs []string
	for _, rt := range api.Routes {
		pkgs = append(pkgs, module+"routes/"+rt.Name)
	}
	return append(pkgs, module+"authorizer", module+"provisioner", module+"reconciler")
}

// awsEnv is the AWS deployment on this machine: every function's real
// bootstrap binary behind the API Gateway emulator, over DynamoDB Local,
// fauxqs and gofakes3, with `acs runtime-api` (process sandboxes) standing
// in for Kubernetes and a scripted LLM.
type awsEnv struct {
	t        *testing.T
	url      string // the stage URL
	gw       *lambdatest.Gateway
	fns      map[string]*lambdatest.Function
	ddb      *ddbProxy
	store    *dynamostore.Store // direct, for the test's own checks
	sqs      *sqs.Client
	queueURL string
	dlqURL   string
	s3       *s3.Client
	bucket   string
	rtRoot   string
	llm      *llmtest.Server
	source   *lambdatest.SQSSource
	status   statuses // of the answers the env's clients got
}

type envOptions struct {
	replies []llmtest.Reply
	// provisionerEnv is extra environment of the provisioner (failpoints).
	provisionerEnv []string
}

func endpoints(t *testing.T) (ddb, sqsEP string) {
	ddb, sqsEP = os.Getenv("ACS_TEST_DYNAMODB_ENDPOINT"), os.Getenv("ACS_TEST_SQS_ENDPOINT")
	if ddb == "" || sqsEP == "" {
		t.Skip("ACS_TEST_DYNAMODB_ENDPOINT and ACS_TEST_SQS_ENDPOINT are not set: run the tests through make test / scripts/test.sh")
	}
	return ddb, sqsEP
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

var testCreds = credentials.NewStaticCredentialsProvider("test", "test", "")

func newAWSEnv(t *testing.T, o envOptions) *awsEnv {
	t.Helper()
	ddbEP, sqsEP := endpoints(t)
	ctx := context.Background()
	e := &awsEnv{t: t, fns: map[string]*lambdatest.Function{}}

	// DynamoDB: a fresh table, reached through a proxy that measures the
	// capacity consumed and can throttle.
	table := randomName("acs-e2e-")
	direct := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ddbEP), Credentials: testCreds})
	e.store = dynamostore.New(dynamostore.Options{Client: direct, Table: table})
	if err := e.store.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		direct.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	e.ddb = newDDBProxy(t, ddbEP)

	// SQS: the start-task queue and its dead-letter queue (3 receives).
	e.sqs = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsEP), Credentials: testCreds})
	var err error
	name := randomName("acs-e2e-")
	if e.queueURL, e.dlqURL, err = sqsqueue.Setup(ctx, e.sqs, name, 3); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, u := range []string{e.queueURL, e.dlqURL} {
			e.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})

	// S3: gofakes3 in this process.
	s3srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(s3srv.Close)
	e.s3 = s3blob.NewClient(s3srv.URL, "us-east-1", true, testCreds)
	e.bucket = "acs-e2e"
	if err := s3blob.CreateBucket(ctx, e.s3, e.bucket); err != nil {
		t.Fatal(err)
	}

	rtURL := e.startRuntimeAPI()
	e.llm = llmtest.New(o.replies...)
	t.Cleanup(e.llm.Close)

	// As deployed (infra: authorizer cache off): no identity source, so a
	// browser's cookie-only request reaches the authorizer.
	e.gw = &lambdatest.Gateway{Responses: map[string]lambdatest.GatewayResponse{}, IdentitySources: lambdatest.NoIdentitySources}
	for _, r := range apigw.GatewayResponses {
		e.gw.Responses[r.Type] = lambdatest.GatewayResponse{StatusCode: r.StatusCode, Body: r.Body, Headers: r.Headers}
	}
	stage := httptest.NewServer(e.gw)
	t.Cleanup(stage.Close)
	e.url = stage.URL

	bins := lambdatest.BuildAll(t, functionPackages())
	common := []string{
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"ACS_TABLE=" + table, "ACS_DYNAMODB_ENDPOINT=" + e.ddb.url(),
		"ACS_SQS_ENDPOINT=" + sqsEP, "ACS_QUEUE_URL=" + e.queueURL, "ACS_DLQ_URL=" + e.dlqURL,
		"ACS_S3_ENDPOINT=" + s3srv.URL, "ACS_BUCKET=" + e.bucket,
		"ACS_RUNTIME_URL=" + rtURL, "ACS_RUNTIME_API_KEY=" + runtimeKey,
		"ACS_PUBLIC_URL=" + e.url, "ACS_SECRET_KEY=aws-e2e-secret-key-0123456789",
		"LLM_BASE_URL=" + e.llm.URL, "LLM_MODEL=openai/e2e-model", "LLM_API_KEY=sk-e2e",
		"ACS_SANDBOX_STARTUP_TIMEOUT=60s",
	}
	start := func(name, pkg string, env ...string) *lambdatest.Function {
		f := lambdatest.Start(ctx, t, lambdatest.Options{Name: "acs-" + name, Binary: bins[pkg],
			Env: append(append([]string{}, common...), env...), Timeout: 60 * time.Second})
		e.fns[name] = f
		return f
	}
	// The authorizer creates the admin user from the key's hash.
	e.gw.Authorizer = start("authorizer", module+"authorizer", "ACS_ADMIN_KEY_SHA256="+acs.HashKey(adminKey))
	for _, rt := range api.Routes {
		f := start(rt.Name, module+"routes/"+rt.Name)
		e.gw.Routes = append(e.gw.Routes, lambdatest.GatewayRoute{Method: rt.Method, Resource: rt.Path, Function: f,
			Authorize: rt.Auth == api.AuthUser})
	}
	provisioner := start("provisioner", module+"provisioner", o.provisionerEnv...)
	start("reconciler", module+"reconciler")

	// The event source mapping: batches from the real queue, partial
	// failures reported by the function.
	sctx, stop := context.WithCancel(ctx)
	e.source = lambdatest.PollSQS(sctx, t, lambdatest.SQSOptions{
		Function: provisioner,
		Receive: func(ctx context.Context) ([]events.SQSMessage, error) {
			out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL),
				MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 3,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
			if err != nil {
				return nil, err
			}
			var recs []events.SQSMessage
			for _, m := range out.Messages {
				recs = append(recs, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
					Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes,
					EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + name, AWSRegion: "us-east-1"})
			}
			return recs, nil
		},
		Delete: func(ctx context.Context, receipt string) error {
			_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: aws.String(receipt)})
			return err
		},
	})
	t.Cleanup(func() { stop(); e.source.Wait() })
	return e
}

// startRuntimeAPI runs `acs runtime-api` (process sandboxes) and returns
// its URL.
func (e *awsEnv) startRuntimeAPI() string {
	url, root := lambdatest.StartRuntimeAPI(e.t, runtimeKey)
	e.rtRoot = root
	return url
}

// sandboxDirs lists the sandboxes the runtime holds.
func (e *awsEnv) sandboxDirs() []string {
	entries, _ := os.ReadDir(e.rtRoot)
	var out []string
	for _, d := range entries {
		if d.IsDir() {
			out = append(out, d.Name())
		}
	}
	return out
}

// resp is an HTTP answer through the gateway.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) into(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("not JSON (%d): %s", r.status, r.body)
	}
}

// call sends a request through the gateway with key (none when empty).
func (e *awsEnv) call(method, path string, body any, key string) resp {
	e.t.Helper()
	a := lambdatest.Call(e.t, e.url, method, path, body, key)
	return resp{a.Status, a.Header, a.Body}
}

func (e *awsEnv) admin(method, path string, body any) resp {
	e.t.Helper()
	return e.call(method, path, body, adminKey)
}

// initDurations reports every function's cold-start init time.
func (e *awsEnv) initDurations() (names []string, durs []time.Duration) {
	for name := range e.fns {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, n := range names {
		durs = append(durs, e.fns[n].InitDuration())
	}
	return names, durs
}

// ddbProxy sits between the functions and DynamoDB Local: it counts
// operations and the capacity units the responses report, and can answer
// writes with ProvisionedThroughputExceededException (throttling).
type ddbProxy struct {
	srv *httptest.Server

	mu       sync.Mutex
	ops      map[string]int
	rcu, wcu float64
	throttle map[string]bool // operations refused while set
	refused  int
}

var readOps = map[string]bool{"GetItem": true, "Query": true, "BatchGetItem": true, "Scan": true, "TransactGetItems": true}

func newDDBProxy(t *testing.T, target string) *ddbProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &ddbProxy{ops: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(res *http.Response) error {
		op := opOf(res.Request)
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		res.Body = io.NopCloser(bytes.NewReader(b))
		units := consumed(b)
		p.mu.Lock()
		if readOps[op] {
			p.rcu += units
		} else {
			p.wcu += units
		}
		p.mu.Unlock()
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := opOf(r)
		p.mu.Lock()
		p.ops[op]++
		if op == "Scan" {
			t.Errorf("a function Scanned the table")
		}
		refuse := p.throttle[op]
		if refuse {
			p.refused++
		}
		p.mu.Unlock()
		if refuse {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(400)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *ddbProxy) url() string { return p.srv.URL }

func opOf(r *http.Request) string {
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	return op
}

// consumed sums the capacity units a response reports (one
// ConsumedCapacity object, or a list for batches and transactions).
func consumed(body []byte) float64 {
	var one struct {
		ConsumedCapacity json.RawMessage
	}
	if json.Unmarshal(body, &one) != nil || len(one.ConsumedCapacity) == 0 {
		return 0
	}
	type cc struct{ CapacityUnits float64 }
	var list []cc
	if json.Unmarshal(one.ConsumedCapacity, &list) == nil {
		sum := 0.0
		for _, c := range list {
			sum += c.CapacityUnits
		}
		return sum
	}
	var single cc
	json.Unmarshal(one.ConsumedCapacity, &single)
	return single.CapacityUnits
}

// snapshot returns and resets the counters.
func (p *ddbProxy) snapshot() (ops map[string]int, rcu, wcu float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops, rcu, wcu = p.ops, p.rcu, p.wcu
	p.ops, p.rcu, p.wcu = map[string]int{}, 0, 0
	return ops, rcu, wcu
}

func (p *ddbProxy) setThrottle(ops ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttle = map[string]bool{}
	for _, op := range ops {
		p.throttle[op] = true
	}
}

// statuses records the status of the last answer the environment's
// clients got, so a test asserts 201 against 200 as it did on raw calls.
type statuses struct {
	mu   sync.Mutex
	last int
}

func (s *statuses) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		s.mu.Lock()
		s.last = res.StatusCode
		s.mu.Unlock()
	}
	return res, err
}

func (s *statuses) get() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// api is a client of the gateway that presents key. It never retries:
// the tests assert every answer (a 503 included).
func (e *awsEnv) api(key string) *client.Client {
	return client.New(e.url, key, client.WithHTTPClient(&http.Client{Transport: &e.status}), client.WithRetry(client.Retry{Attempts: 1}))
}

// ok fails unless err is nil and the answer's status was code.
func (e *awsEnv) ok(err error, code int, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	if got := e.status.get(); got != code {
		e.t.Fatalf("%s: HTTP %d, want %d", what, got, code)
	}
}

// fails fails unless err is an error answer of status code.
func (e *awsEnv) fails(err error, code int, what string) {
	e.t.Helper()
	if got := client.StatusOf(err); got != code {
		e.t.Fatalf("%s: %v (HTTP %d), want HTTP %d", what, err, got, code)
	}
}
