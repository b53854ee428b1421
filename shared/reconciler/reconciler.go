// Package reconciler is the control plane's periodic pass: the idle rules
// over every sandbox (pause when idle, archive and clean up later, repair
// statuses from the runtime), start tasks that stopped advancing, the
// dead-letter queue of start steps, and the warm pool. `acs serve` runs it
// on a timer; on AWS it is the reconciler function's schedule.
package reconciler

import (
	"context"
	"errors"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/startflow"
)

// Pass is one pass of the reconciler: the idle rules over every sandbox
// (Lifecycle.Reconcile), stale start tasks (Worker.ExpireStale) and, when
// Dead is set, the dead-letter queue (Worker.DrainDeadLetters).
type Pass struct {
	Lifecycle *sandboxes.Lifecycle
	Worker    *startflow.Worker
	Dead      startflow.DeadLetters
	// TaskTTL bounds how long a start task may go without advancing.
	TaskTTL time.Duration
	// Pool, when the runtime keeps warm sandboxes, is refilled for the
	// configured specs.
	Pool acs.WarmPool
}

// PassReport says what a pass did.
type PassReport struct {
	sandboxes.ReconcileReport
	ExpiredTasks      []string        `json:"expired_tasks"`
	DeadLetteredTasks []string        `json:"dead_lettered_tasks"`
	WarmPool          *acs.PoolReport `json:"warm_pool,omitempty"`
}

// Run runs every part of the pass, even when one fails, and returns the
// report with the parts' errors joined.
func (p Pass) Run(ctx context.Context) (PassReport, error) {
	var rep PassReport
	var errs []error
	r, err := p.Lifecycle.Reconcile(ctx)
	rep.ReconcileReport = r
	errs = append(errs, err)
	if p.TaskTTL > 0 {
		rep.ExpiredTasks, err = p.Worker.ExpireStale(ctx, p.TaskTTL)
		errs = append(errs, err)
	}
	if p.Dead != nil {
		rep.DeadLetteredTasks, err = p.Worker.DrainDeadLetters(ctx, p.Dead)
		errs = append(errs, err)
	}
	if p.Pool != nil {
		pr, err := p.Pool.Fill(ctx, p.Lifecycle.Config.Specs)
		rep.WarmPool = &pr
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}
