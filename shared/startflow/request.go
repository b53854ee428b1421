// Package startflow starts conversations: it validates and stores start
// requests as start tasks (Service.Submit) and advances each task one
// idempotent step per queue delivery (Worker) until READY or ERROR. The same
// code runs in `acs serve` and in the AWS provisioner.
package startflow

import "github.com/acs-project/acs/shared/v1wire"

// The start request is V1 wire format, defined in v1wire.
type (
	Plugin        = v1wire.Plugin
	GitProvider   = v1wire.GitProvider
	Trigger       = v1wire.Trigger
	AgentType     = v1wire.AgentType
	TaskType      = v1wire.TaskType
	SuggestedTask = v1wire.SuggestedTask
	StartRequest  = v1wire.StartRequest
)

// SecretHidden stands for a masked secret value (v1wire's).
const SecretHidden = v1wire.SecretHidden

// Limits on per-conversation secrets (v1wire's).
const (
	MaxSecrets         = v1wire.MaxSecrets
	MaxSecretNameLen   = v1wire.MaxSecretNameLen
	MaxSecretValueSize = v1wire.MaxSecretValueSize
)

// The start request's validation rules (v1wire's).
var (
	RepositoryProblem = v1wire.RepositoryProblem
	BranchProblem     = v1wire.BranchProblem
	ValidProvider     = v1wire.ValidProvider
	SecretNameProblem = v1wire.SecretNameProblem
	TitleSecretErrors = v1wire.TitleSecretErrors
	SecretsIn         = v1wire.SecretsIn
	MaskSecrets       = v1wire.MaskSecrets
)
