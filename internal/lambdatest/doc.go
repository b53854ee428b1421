// Package lambdatest runs real AWS Lambda "bootstrap" binaries in tests,
// the way AWS's provided.al2023 runtime does, and puts emulated AWS event
// sources in front of them.
//
// Three pieces:
//
//   - [Function] (created with [Start]) serves the Lambda Runtime API
//     (2018-06-01) on 127.0.0.1 and runs a bootstrap binary against it with
//     the environment Lambda sets. [Function.Invoke] queues one invocation at
//     a time, like a single execution environment; a process that dies is
//     replaced by a fresh one, like Lambda starting a new execution
//     environment. [Build] and [BuildAll] compile Go Lambda functions
//     (-tags lambda.norpc, CGO_ENABLED=0) for the host platform.
//   - [Gateway] is an http.Handler that behaves like an API Gateway REST API
//     stage with Lambda proxy integrations and a REQUEST Lambda authorizer,
//     including gateway responses, IAM policy evaluation and authorizer
//     result caching.
//   - [PollSQS] is an SQS event-source-mapping stand-in with
//     ReportBatchItemFailures semantics.
//
// Typical use:
//
//	bin := lambdatest.Build(t, "github.com/acs-project/acs/functions/api")
//	fn := lambdatest.Start(ctx, t, lambdatest.Options{Name: "api", Binary: bin})
//	gw := lambdatest.NewGateway(auth, []lambdatest.GatewayRoute{
//		{Method: "GET", Resource: "/api/v1/things/{id}", Function: fn, Authorize: true},
//	})
//	srv := httptest.NewServer(gw) // srv.URL stands for the stage URL
//
// Everything runs on 127.0.0.1; nothing talks to AWS.
package lambdatest

// The fixed identity of the emulated AWS environment.
const (
	// Region is the AWS region reported to functions and used in ARNs.
	Region = "us-east-1"
	// AccountID is the AWS account used in ARNs and request contexts.
	AccountID = "000000000000"
	// APIID is the id of the emulated API Gateway REST API.
	APIID = "acsapi0001"
	// DefaultStage is the stage name used when [Gateway.StageName] is empty.
	DefaultStage = "prod"
)
