package main

import (
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Stacks are ACS's stacks, in deployment order.
type Stacks struct {
	Data         *Data
	API          *API
	Provisioning *Provisioning
	Sandboxes    *Sandboxes // nil without an EKS cluster
	Operations   *Operations
	Web          *Web // in the API stack
}

// The stacks' names.
const (
	DataStack         = "AcsData"
	APIStack          = "AcsApi"
	ProvisioningStack = "AcsProvisioning"
	SandboxesStack    = "AcsSandboxes"
	OperationsStack   = "AcsOperations"
)

// NewStacks adds every stack to scope.
func NewStacks(scope constructs.Construct, p Props) *Stacks {
	sp := &awscdk.StackProps{Env: env()}
	s := &Stacks{}
	s.Data = NewData(scope, DataStack, p, sp)
	s.API = NewAPI(scope, APIStack, s.Data, p, sp)
	s.Provisioning = NewProvisioning(scope, ProvisioningStack, s.Data, s.API, p, sp)
	if p.EKSCluster != "" {
		fns := append(append([]*Function{}, s.API.Routes...), s.Provisioning.Provisioner, s.Provisioning.Reconciler)
		s.Sandboxes = NewSandboxes(scope, SandboxesStack, p, fns, sp)
	}
	s.Operations = NewOperations(scope, OperationsStack, s.Data, s.API, s.Provisioning, p, sp)
	s.Web = s.API.Web
	if p.Runtime() == "" {
		awscdk.Annotations_Of(s.API.Stack).AddWarningV2(jsii.String("acs:no-runtime"), jsii.String(
			"no sandbox runtime: set -c eksCluster=… (with eksEndpoint, eksCaData, kubeBaseHost, sandboxImage) or -c runtimeApiUrl=…; "+
				"functions that reach sandboxes will fail their cold start"), nil)
	}
	return s
}

// env is the account and region the CLI chose (none when synthesizing
// without credentials: the stacks are then environment-agnostic).
func env() *awscdk.Environment {
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account == "" || region == "" {
		return nil
	}
	return &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
}
