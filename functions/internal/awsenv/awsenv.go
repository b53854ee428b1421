// Package awsenv is what every Lambda function of ACS shares: the
// configuration (read once from the environment the stack sets), the AWS
// client configuration, the DynamoDB store, the sealer and the start-flow
// settings. Adapters only some functions use (SQS, S3, the sandbox runtime)
// live in sibling packages, so a function links only what it needs.
package awsenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

// Env is a function's configuration tree and AWS client settings.
type Env struct {
	Config config.Config
	AWS    aws.Config
}

// Load reads the configuration the function needs (need) from the
// environment and sets up JSON logging. A secret variable given as the
// ARN of a Secrets Manager secret (config.SecretVariables,
// config.SecretARNSuffix) is read from Secrets Manager first. A
// configuration error is logged with everything that is missing and the
// process exits, so the Lambda init fails with that message instead of
// failing each request obscurely.
//
// This is the one place a function reads its environment: the
// configuration tree (config.Load) and the execution role's credentials.
func Load(need config.Need) *Env {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	environ := os.Getenv
	fail := func(err error) {
		slog.Error("acs function: invalid configuration", "function", environ(config.EnvFunctionName), "error", err.Error())
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	getenv, err := ResolveSecrets(ctx, environ)
	cancel()
	if err != nil {
		fail(err)
	}
	cfg, err := config.Load(getenv, config.Target{Program: config.Function, Need: need})
	if err != nil {
		fail(err)
	}
	return &Env{Config: cfg, AWS: aws.Config{Region: cfg.AWS.Region, Credentials: credentialsFrom(environ)}}
}

// credentialsFrom returns the credentials Lambda puts in the environment
// (the execution role's), or anonymous ones without them.
func credentialsFrom(getenv func(string) string) aws.CredentialsProvider {
	if id := getenv("AWS_ACCESS_KEY_ID"); id != "" {
		return credentials.NewStaticCredentialsProvider(id, getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN"))
	}
	return aws.AnonymousCredentials{}
}

// ResolveSecrets returns getenv with every secret variable that is unset
// but named by its NAME_SECRET_ARN variable read from Secrets Manager (the
// secret's string; ACS_SECRETSMANAGER_ENDPOINT overrides the endpoint).
// The error names every secret that could not be read; values are never
// in it.
func ResolveSecrets(ctx context.Context, getenv func(string) string) (func(string) string, error) {
	values := map[string]string{}
	var client *secretsmanager.Client
	var problems []string
	for _, name := range config.SecretVariables {
		arn := strings.TrimSpace(getenv(name + config.SecretARNSuffix))
		if getenv(name) != "" || arn == "" {
			continue
		}
		if client == nil {
			client = secretsmanager.New(secretsmanager.Options{
				Region:      cmp.Or(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
				Credentials: credentialsFrom(getenv),
			}, func(o *secretsmanager.Options) {
				if ep := getenv(config.EnvSecretsManagerEndpoint); ep != "" {
					o.BaseEndpoint = aws.String(ep)
				}
			})
		}
		out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s%s: read secret %s: %v", name, config.SecretARNSuffix, arn, err))
		case aws.ToString(out.SecretString) == "":
			problems = append(problems, fmt.Sprintf("%s%s: secret %s has no string value", name, config.SecretARNSuffix, arn))
		default:
			values[name] = aws.ToString(out.SecretString)
		}
	}
	if len(problems) > 0 {
		return nil, errors.New("configuration: " + strings.Join(problems, "; "))
	}
	return func(k string) string {
		if v, ok := values[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}

// Store is the DynamoDB store; blobs keeps events too large for an item
// (nil when the function never reads or writes event payloads).
func (e *Env) Store(blobs acs.Blobs) *dynamostore.Store {
	c := dynamodb.NewFromConfig(e.AWS, func(o *dynamodb.Options) {
		if e.Config.AWS.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(e.Config.AWS.DynamoDBEndpoint)
		}
	})
	return dynamostore.New(dynamostore.Options{Client: c, Table: e.Config.AWS.Table, Blobs: blobs})
}

// Sealer seals and opens stored secrets with ACS_SECRET_KEY.
func (e *Env) Sealer() acs.Sealer { return sealbox.FromPassphrase(e.Config.SecretKey) }

// DefaultSpecs is the sandbox spec when ACS_SANDBOX_SPECS is unset: the
// sandbox image's agent server with its workspace at /workspace.
func DefaultSpecs() []acs.SandboxSpec {
	return []acs.SandboxSpec{{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"},
		CreatedAt: time.Unix(0, 0).UTC(), InitialEnv: map[string]string{}, WorkingDir: "/workspace"}}
}

// Flow is the start-flow configuration (with the sandbox lifecycle's in
// its Sandboxes).
func (e *Env) Flow() startflow.Config {
	// Load has already validated the specs.
	specs, _ := config.ParseSpecs(e.Config.Specs, DefaultSpecs())
	return startflow.ConfigFrom(e.Config.Common, specs)
}

// Adapters are the adapters every route function shares: the store, the
// sealer and the start-flow settings, and blobs when the route needs them.
// The caller adds the queue and runtime when its route needs them.
func (e *Env) Adapters(blobs acs.Blobs) services.Adapters {
	a := services.Adapters{Store: e.Store(blobs), Sealer: e.Sealer(), Flow: e.Flow()}
	if blobs != nil {
		a.Blobs = blobs
	}
	return a
}

// ServeRoute runs the Lambda function of one V1 route over svc: API
// Gateway REST proxy events in, the route's response out. Users come only
// from the authorizer's context. It does not return.
func (e *Env) ServeRoute(name string, svc *services.Set) {
	h := api.New(api.Deps{Services: svc, ContextAuthOnly: true, StreamLimit: functions.StreamStartLimit,
		SignIn: e.Config.SignIn, PublicURL: e.Config.PublicURL}).RouteHandler(name)
	if h == nil {
		slog.Error("acs function: unknown route", "route", name)
		os.Exit(2)
	}
	lambda.Start(apigw.Handler(h))
}
