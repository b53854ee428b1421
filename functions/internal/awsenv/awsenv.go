// Package awsenv is what every Lambda function of ACS shares: the
// configuration (read once from the environment the stack sets), the AWS
// client configuration, the DynamoDB store, the sealer and the start-flow
// settings. Adapters only some functions use (SQS, S3, the sandbox runtime)
// live in sibling packages, so a function links only what it needs.
package awsenv

import (
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/startflow"
)

// Env is a function's configuration and AWS client settings.
type Env struct {
	Config config.AWS
	AWS    aws.Config
}

// Load reads the configuration the function needs (need) from the
// environment and sets up JSON logging. A configuration error is logged
// with everything that is missing and the process exits, so the Lambda
// init fails with that message instead of failing each request obscurely.
func Load(need config.Need) *Env {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	cfg, err := config.LoadAWS(os.Getenv, need)
	if err != nil {
		slog.Error("acs function: invalid configuration", "function", os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), "error", err.Error())
		os.Exit(2)
	}
	e := &Env{Config: cfg, AWS: aws.Config{Region: cfg.Region}}
	// Lambda puts the execution role's credentials in the environment.
	if id := os.Getenv("AWS_ACCESS_KEY_ID"); id != "" {
		e.AWS.Credentials = credentials.NewStaticCredentialsProvider(id, os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	} else {
		e.AWS.Credentials = aws.AnonymousCredentials{}
	}
	return e
}

// Store is the DynamoDB store; blobs keeps events too large for an item
// (nil when the function never reads or writes event payloads).
func (e *Env) Store(blobs acs.Blobs) *dynamostore.Store {
	c := dynamodb.NewFromConfig(e.AWS, func(o *dynamodb.Options) {
		if e.Config.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(e.Config.DynamoDBEndpoint)
		}
	})
	return dynamostore.New(dynamostore.Options{Client: c, Table: e.Config.Table, Blobs: blobs})
}

// Sealer seals and opens stored secrets with ACS_SECRET_KEY.
func (e *Env) Sealer() acs.Sealer { return sealbox.FromPassphrase(e.Config.SecretKey) }

// DefaultSpecs is the sandbox spec when ACS_SANDBOX_SPECS is unset: the
// sandbox image's agent server with its workspace at /workspace.
func DefaultSpecs() []acs.SandboxSpec {
	return []acs.SandboxSpec{{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"},
		CreatedAt: time.Unix(0, 0).UTC(), InitialEnv: map[string]string{}, WorkingDir: "/workspace"}}
}

// Flow is the start-flow and lifecycle configuration.
func (e *Env) Flow() startflow.Config {
	// LoadAWS has already validated the specs.
	specs, _ := config.ParseSpecs(e.Config.Specs, DefaultSpecs())
	return startflow.ConfigFrom(e.Config.Common, specs)
}

// Deps are the API's dependencies shared by every route function; the
// caller adds the queue and runtime when its route needs them. Users come
// only from the authorizer's context.
func (e *Env) Deps(blobs acs.Blobs) api.Deps {
	d := api.Deps{Store: e.Store(blobs), Sealer: e.Sealer(), Flow: e.Flow(), ContextAuthOnly: true,
		StreamLimit: 25 * time.Second}
	if blobs != nil {
		d.Blobs = blobs
	}
	return d
}

// ServeRoute runs the Lambda function of one V1 route: API Gateway REST
// proxy events in, the route's response out. It does not return.
func ServeRoute(name string, d api.Deps) {
	h := api.New(d).RouteHandler(name)
	if h == nil {
		slog.Error("acs function: unknown route", "route", name)
		os.Exit(2)
	}
	lambda.Start(apigw.Handler(h))
}
