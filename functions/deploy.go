package functions

import (
	"fmt"
	"time"

	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/config"
)

// Role is what a function does in the deployment.
type Role int

// The roles.
const (
	// RoleRoute serves one V1 route behind API Gateway.
	RoleRoute Role = iota
	// RoleAuthorizer is the API Gateway REQUEST authorizer.
	RoleAuthorizer
	// RoleProvisioner consumes the start queue.
	RoleProvisioner
	// RoleReconciler runs on a schedule.
	RoleReconciler
)

// Function is one Lambda function as the stacks (infra/) deploy it: its
// name (its directory here and its zip, dist/lambda/<Name>.zip), what it
// checks at cold start (Need, passed to awsenv.Load: the stacks set the
// variables config.NeedVariables names for it, and grant the matching
// access) and how long one invocation may run.
type Function struct {
	Name    string
	Role    Role
	Route   api.Route // RoleRoute only
	Need    config.Need
	Timeout time.Duration
}

// Timeouts.
const (
	// IntegrationTimeout is API Gateway's limit on a REST integration
	// (29 s): a route function's answer must come sooner.
	IntegrationTimeout = 29 * time.Second
	// RouteTimeout bounds a route function: the integration's limit, so
	// that a request API Gateway gave up on (504) stops too.
	RouteTimeout = IntegrationTimeout
	// StreamStartLimit is how long stream-start streams the task's states
	// before it answers with those it has: within IntegrationTimeout, with
	// room for the answer.
	StreamStartLimit = 25 * time.Second
	// AuthorizerTimeout bounds the authorizer (a key lookup; the first cold
	// start also makes sure the admin user exists).
	AuthorizerTimeout = 10 * time.Second
	// ProvisionerTimeout bounds one provisioner invocation: a delivery runs
	// the steps due at once, each waiting at most about 10 s inline for a
	// command it started, and hands the task back to the queue otherwise.
	ProvisionerTimeout = 2 * time.Minute
	// ReconcilerTimeout bounds one reconciler pass (archiving idle
	// workspaces is its longest part). Passes may overlap: claims keep two
	// from acting on one sandbox.
	ReconcilerTimeout = 5 * time.Minute
)

// The start queue, the provisioner's event source and the reconciler's
// schedule.
const (
	// ProvisionerBatchSize is the most messages one provisioner invocation
	// gets; sqsqueue.BatchHandler runs them concurrently and reports the
	// ones to retry (ReportBatchItemFailures).
	ProvisionerBatchSize = 10
	// StartQueueVisibility is the start queue's visibility timeout. Lambda
	// requires at least the consumer's timeout; the worker's heartbeat keeps
	// a running delivery invisible meanwhile (config.DefaultVisibility
	// at a time), so this only decides when a delivery whose provisioner
	// died is retried.
	StartQueueVisibility = ProvisionerTimeout
	// StartQueueMaxReceiveCount is how many receives without progress move
	// a message to the dead-letter queue: one more than the deliveries a
	// step may fail (config.DefaultMaxAttempts), so a failing step ends
	// its task with its own detail before the reconciler ends it as dead
	// lettered.
	StartQueueMaxReceiveCount = config.DefaultMaxAttempts + 1
	// ReconcileEvery is the reconciler's schedule (EventBridge's finest
	// rate is one minute).
	ReconcileEvery = time.Minute
)

// The functions that are not routes.
var (
	Authorizer  = Function{Name: "authorizer", Role: RoleAuthorizer, Need: 0, Timeout: AuthorizerTimeout}
	Provisioner = Function{Name: "provisioner", Role: RoleProvisioner, Need: config.NeedQueue | config.NeedRuntime, Timeout: ProvisionerTimeout}
	Reconciler  = Function{Name: "reconciler", Role: RoleReconciler,
		Need: config.NeedQueue | config.NeedDeadLetter | config.NeedRuntime | config.NeedBlobs, Timeout: ReconcilerTimeout}
)

// RouteNeed is the configuration a route's function checks at cold start:
// the table and secret key always, and the adapters the route declares (a
// route's needs are config.Need, the same notion as a function's). It
// panics on a need a route function cannot have (the dead-letter queue is
// the reconciler's), so that such a route cannot be deployed.
func RouteNeed(rt api.Route) config.Need {
	if extra := rt.Needs &^ (config.NeedQueue | config.NeedRuntime | config.NeedBlobs | config.NeedSignIn); extra != 0 {
		panic(fmt.Sprintf("functions: route %s declares need %d, which no route function configuration covers", rt.Name, extra))
	}
	return rt.Needs
}

// RouteFunction is the function of a route.
func RouteFunction(rt api.Route) Function {
	return Function{Name: rt.Name, Role: RoleRoute, Route: rt, Need: RouteNeed(rt), Timeout: RouteTimeout}
}

// All returns every function of the deployment for the route table
// routes: one per route, then the authorizer, the provisioner and the
// reconciler.
func All(routes []api.Route) []Function {
	var out []Function
	for _, rt := range routes {
		out = append(out, RouteFunction(rt))
	}
	return append(out, Authorizer, Provisioner, Reconciler)
}
