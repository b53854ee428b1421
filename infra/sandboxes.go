package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseks"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/shared/config"
)

// KubeGroup is the Kubernetes group the functions' roles are mapped to:
// deploy/kubernetes/rbac.yaml binds the sandbox namespace's Role to it (a
// test checks the two agree).
const KubeGroup = "acs:provisioner"

// Sandboxes gives the functions that reach sandboxes access to an existing
// EKS cluster: one access entry per function role, in the group that
// deploy/kubernetes's RoleBinding grants the sandbox namespace's Role to,
// and no cluster-wide access policy. Apply deploy/kubernetes to the
// cluster (kubectl apply -k deploy/kubernetes) first.
type Sandboxes struct {
	Stack   awscdk.Stack
	Entries []awseks.CfnAccessEntry
}

// NewSandboxes makes the sandboxes stack (EKS only).
func NewSandboxes(scope constructs.Construct, id string, p Props, fns []*Function, sp *awscdk.StackProps) *Sandboxes {
	st := awscdk.NewStack(scope, jsii.String(id), sp)
	s := &Sandboxes{Stack: st}
	for _, f := range fns {
		if f.Spec.Need&config.NeedRuntime == 0 {
			continue
		}
		s.Entries = append(s.Entries, awseks.NewCfnAccessEntry(st, jsii.String(logicalName(f.Spec.Name)+"Access"), &awseks.CfnAccessEntryProps{
			ClusterName:      jsii.String(p.EKSCluster),
			PrincipalArn:     f.Role.RoleArn(),
			Type:             jsii.String("STANDARD"),
			KubernetesGroups: jsii.Strings(KubeGroup),
		}))
	}
	return s
}
