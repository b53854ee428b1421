package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/s3blob"
	"github.com/acs-project/acs/shared/sqsqueue"
	"github.com/acs-project/acs/shared/startflow"
)

// Metrics the functions' logs feed (a metric filter on every function's
// log group).
const (
	metricNamespace   = "ACS"
	metricTasksFailed = "StartTasksFailed"
)

// memory is each role's memory (MB). Functions that reach sandboxes link
// client-go and build its clients: they get more.
func memory(f functions.Function) float64 {
	switch {
	case f.Role == functions.RoleAuthorizer:
		return 256
	case f.Need&config.NeedRuntime != 0:
		return 512
	default:
		return 256
	}
}

// Function is one deployed function with what it was derived from.
type Function struct {
	Spec     functions.Function
	Lambda   awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// newFunction deploys one function of the function table: its zip, its
// role with exactly the grants its configuration needs, its log group, and
// the environment its cold start checks (config.NeedVariables of its Need;
// the OpenID Connect client si, when there is one, with config.NeedSignIn).
func newFunction(scope constructs.Construct, f functions.Function, d *Data, p Props, publicURL *string, si *signIn) *Function {
	id := logicalName(f.Name)
	out := &Function{Spec: f}
	out.LogGroup = awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// The grants are the role's inline policy, not a separate
	// AWS::IAM::Policy: one resource fewer per function keeps the API stack,
	// with one function per route, under CloudFormation's 500 resources.
	statements := grants(f, d, p, out.LogGroup, si)
	if p.XRay {
		// X-Ray has no resource-level permissions: "*" is its only
		// resource. Granted here (not by the function construct, which
		// would add a separate policy resource) and tracing switched on
		// below.
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect: awsiam.Effect_ALLOW, Actions: jsii.Strings("xray:PutTelemetryRecords", "xray:PutTraceSegments"), Resources: jsii.Strings("*"),
		}))
	}
	out.Role = awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("ACS function " + f.Name),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"grants": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
		},
	})
	tracing := awslambda.Tracing_DISABLED
	out.Lambda = awslambda.NewFunction(scope, jsii.String(id), &awslambda.FunctionProps{
		Description:   jsii.String(describe(f)),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(p.AssetDir, f.Name+".zip")), nil),
		MemorySize:    jsii.Number(memory(f)),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(f.Timeout.Seconds())),
		Environment:   envMap(environment(f, d, p, publicURL, si)),
		Role:          out.Role,
		LogGroup:      out.LogGroup,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Tracing:       tracing,
	})
	if p.XRay {
		out.Lambda.Node().DefaultChild().(awslambda.CfnFunction).AddPropertyOverride(jsii.String("TracingConfig.Mode"), jsii.String("Active"))
	}
	// Start tasks ending ERROR, counted from the log line startflow writes
	// (in the start routes, the provisioner and the reconciler). Only the
	// start routes among the route functions (those with the queue) can
	// write it, so only they get the filter: one per route function would
	// crowd the API stack past CloudFormation's 500 resources.
	if f.Role != functions.RoleRoute || f.Need&config.NeedQueue != 0 {
		awslogs.NewMetricFilter(scope, jsii.String(id+"TasksFailed"), &awslogs.MetricFilterProps{
			LogGroup:        out.LogGroup,
			FilterPattern:   awslogs.FilterPattern_StringValue(jsii.String("$.msg"), jsii.String("="), jsii.String(startflow.TaskFailedLog)),
			MetricNamespace: jsii.String(metricNamespace),
			MetricName:      jsii.String(metricTasksFailed),
			MetricValue:     jsii.String("1"),
		})
	}
	return out
}

func describe(f functions.Function) string {
	switch f.Role {
	case functions.RoleRoute:
		return "ACS " + f.Route.Method + " " + f.Route.Path
	case functions.RoleAuthorizer:
		return "ACS API Gateway authorizer (Bearer API key)"
	case functions.RoleProvisioner:
		return "ACS provisioner (start queue consumer)"
	default:
		return "ACS reconciler (scheduled)"
	}
}

// logicalName turns a function name (start_conversation) into a construct
// id (StartConversation).
func logicalName(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// value is one variable's value: a token or a literal.
type value = *string

// environment is what a function's cold start checks: the base variables,
// then config.NeedVariables of each need it has (and the runtime's
// variables with NeedRuntime; the OpenID Connect client's with
// NeedSignIn). A secret variable is given as its Secrets Manager secret
// (config.SecretARNSuffix), never as a value. A variable the stacks have no
// value for stops the synthesis: the configuration has outgrown the
// stacks.
func environment(f functions.Function, d *Data, p Props, publicURL *string, si *signIn) map[string]value {
	values := map[string]value{
		config.EnvTable:         d.Table.Ref(),
		config.EnvQueueURL:      d.Queue.QueueUrl(),
		config.EnvDeadLetterURL: d.DeadLetters.QueueUrl(),
		config.EnvBucket:        d.Bucket.BucketName(),
		config.EnvBucketPrefix:  jsii.String(blobPrefix),
		config.EnvPublicURL:     publicURL,
		config.EnvRuntime:       jsii.String(p.Runtime()),
		config.EnvRuntimeURL:    jsii.String(p.RuntimeAPIURL),
		config.EnvKubeNamespace: jsii.String(p.KubeNamespace),
		config.EnvKubeBaseHost:  jsii.String(p.KubeBaseHost),
		config.EnvSandboxImage:  jsii.String(p.SandboxImage),
		config.EnvEKSCluster:    jsii.String(p.EKSCluster),
		config.EnvKubeServer:    jsii.String(p.EKSEndpoint),
		config.EnvKubeCAData:    jsii.String(p.EKSCAData),
	}
	secrets := map[string]value{config.EnvSecretKey: d.SecretKey.ref}
	if d.RuntimeKey != nil {
		secrets[config.EnvRuntimeAPIKey] = d.RuntimeKey.ref
	}
	env := map[string]value{}
	for k, v := range p.Env {
		env[k] = jsii.String(v)
	}
	set := func(name string) {
		if slices.Contains(config.SecretVariables, name) {
			ref, ok := secrets[name]
			if !ok {
				panic(fmt.Sprintf("infra: function %s needs the secret %s, which no stack holds", f.Name, name))
			}
			env[name+config.SecretARNSuffix] = ref
			return
		}
		v, ok := values[name]
		if !ok {
			panic(fmt.Sprintf("infra: function %s needs %s, which the stacks do not set (config.NeedVariables grew)", f.Name, name))
		}
		// Unset settings (no runtime chosen, pod templates instead of an
		// image) stay unset: the cold start names them.
		if v != nil && *v != "" {
			env[name] = v
		}
	}
	for _, v := range config.BaseVariables {
		set(v)
	}
	// Every route may serve a browser session, whose writes are accepted
	// only from the public URL's origin: behind the distribution the
	// request's own Host is the API's, not the page's.
	if f.Role == functions.RoleRoute {
		set(config.EnvPublicURL)
	}
	for _, need := range needBits(f.Need) {
		vars, ok := config.NeedVariables[need]
		if !ok {
			panic(fmt.Sprintf("infra: function %s has configuration need %d, which config.NeedVariables does not describe", f.Name, need))
		}
		for _, v := range vars {
			set(v)
		}
		if need == config.NeedRuntime && p.Runtime() != "" {
			for _, v := range config.RuntimeVariables[p.Runtime()] {
				set(v)
			}
			// The agents' LLM key, for the conversations these functions
			// start and resume.
			if d.LLMKey != nil {
				env[config.EnvLLMAPIKey+config.SecretARNSuffix] = d.LLMKey.ref
			}
		}
		// The issuer people sign in with.
		if need == config.NeedSignIn && si != nil {
			for k, v := range si.env(p) {
				env[k] = v
			}
		}
	}
	if f.Role == functions.RoleAuthorizer && p.AdminKeySHA256 != "" {
		env[config.EnvAdminKeySHA256] = jsii.String(p.AdminKeySHA256)
	}
	return env
}

func envMap(env map[string]value) *map[string]*string {
	m := map[string]*string{}
	for k, v := range env {
		m[k] = v
	}
	return &m
}

// needBits splits a configuration need into its bits, in order.
func needBits(n config.Need) []config.Need {
	var out []config.Need
	for bit := config.Need(1); bit != 0; bit <<= 1 {
		if n&bit != 0 {
			out = append(out, bit)
		}
	}
	return out
}

// blobPrefix is the functions' key prefix in the bucket
// (ACS_BUCKET_PREFIX): their S3 grants stop at it.
const blobPrefix = "acs"

// grants are a function's IAM statements, from its configuration needs:
// DynamoDB on the table and its indexes; the secrets it reads; SQS send
// for the start queue (consume too for the provisioner; the dead-letter
// queue for the reconciler); S3 objects under the prefix; the OpenID
// Connect client's secret for those that sign people in; its own log
// group.
func grants(f functions.Function, d *Data, p Props, logs awslogs.LogGroup, si *signIn) []awsiam.PolicyStatement {
	st := func(actions []string, resources ...*string) awsiam.PolicyStatement {
		a := append([]string{}, actions...)
		sort.Strings(a)
		return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect: awsiam.Effect_ALLOW, Actions: jsii.Strings(a...), Resources: &resources,
		})
	}
	out := []awsiam.PolicyStatement{
		st(dynamostore.IAMActions, d.Table.AttrArn(), jsii.String(*d.Table.AttrArn()+"/index/*")),
		st([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, logs.LogGroupArn()),
		st([]string{"secretsmanager:GetSecretValue"}, d.SecretKey.arn),
	}
	if f.Need&config.NeedQueue != 0 {
		actions := sqsqueue.SendIAMActions
		if f.Role == functions.RoleProvisioner {
			actions = append(append([]string{}, actions...), sqsqueue.ConsumeIAMActions...)
		}
		out = append(out, st(actions, d.Queue.QueueArn()))
	}
	if f.Need&config.NeedDeadLetter != 0 {
		out = append(out, st(sqsqueue.DeadLetterIAMActions, d.DeadLetters.QueueArn()))
	}
	if f.Need&config.NeedBlobs != 0 {
		out = append(out, st(s3blob.ObjectIAMActions, d.Bucket.ArnForObjects(jsii.String(blobPrefix+"/*"))))
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect: awsiam.Effect_ALLOW, Actions: jsii.Strings(s3blob.BucketIAMActions...), Resources: jsii.Strings(*d.Bucket.BucketArn()),
			Conditions: &map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": []string{blobPrefix + "/*"}}},
		}))
	}
	if f.Need&config.NeedRuntime != 0 {
		var secrets []*string
		if d.RuntimeKey != nil && p.Runtime() == config.RuntimeAPI {
			secrets = append(secrets, d.RuntimeKey.arn)
		}
		if d.LLMKey != nil {
			secrets = append(secrets, d.LLMKey.arn)
		}
		if len(secrets) > 0 {
			out = append(out, st([]string{"secretsmanager:GetSecretValue"}, secrets...))
		}
		// Kubernetes: the EKS token is a presigned sts:GetCallerIdentity,
		// which needs no permission; the cluster maps the role with an
		// access entry (the sandboxes stack).
	}
	if f.Need&config.NeedSignIn != 0 && si != nil && si.secret != nil {
		out = append(out, st([]string{"secretsmanager:GetSecretValue"}, si.secret.arn))
	}
	// With tracing=xray, newFunction adds xray:PutTraceSegments and
	// xray:PutTelemetryRecords on "*".
	return out
}
