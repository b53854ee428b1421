package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
)

// Provisioning is the asynchronous half: the provisioner consuming the
// start queue (an SQS event source reporting batch item failures) and the
// reconciler on an EventBridge schedule, both from the constants the
// functions package declares.
type Provisioning struct {
	Stack       awscdk.Stack
	Provisioner *Function
	Reconciler  *Function
	Schedule    awsevents.Rule
}

// NewProvisioning makes the provisioning stack.
func NewProvisioning(scope constructs.Construct, id string, d *Data, a *API, p Props, sp *awscdk.StackProps) *Provisioning {
	st := awscdk.NewStack(scope, jsii.String(id), sp)
	pr := &Provisioning{Stack: st}
	pr.Provisioner = newFunction(st, functions.Provisioner, d, p, a.PublicURL, a.SignIn)
	awslambda.NewEventSourceMapping(st, jsii.String("StartQueueSource"), &awslambda.EventSourceMappingProps{
		Target:                  pr.Provisioner.Lambda,
		EventSourceArn:          d.Queue.QueueArn(),
		BatchSize:               jsii.Number(functions.ProvisionerBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	})
	pr.Reconciler = newFunction(st, functions.Reconciler, d, p, a.PublicURL, a.SignIn)
	pr.Schedule = awsevents.NewRule(st, jsii.String("ReconcileSchedule"), &awsevents.RuleProps{
		Description: jsii.String("the ACS reconciler's pass"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(functions.ReconcileEvery.Minutes()))),
		// A missed pass is made up by the next one.
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(pr.Reconciler.Lambda, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0)})},
	})
	return pr
}
