// Command provisioner consumes the start-task queue (an SQS event source
// mapping with ReportBatchItemFailures) and runs the start-flow worker: each
// record advances its task by the steps due now; a later step is queued as
// a delayed message, so no invocation waits while a sandbox boots.
package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/functions/internal/runtimeenv"
	"github.com/acs-project/acs/functions/internal/sqsenv"
	"github.com/acs-project/acs/internal/failpoint"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sqsqueue"
	"github.com/acs-project/acs/shared/startflow"
)

func main() {
	env := awsenv.Load(functions.Provisioner.Need)
	worker := startflow.NewWorker(env.Store(nil), sqsenv.Queue(env), runtimeenv.Runtime(env), env.Sealer(), env.Flow())
	// Fault tests crash here (ACS_FAILPOINTS); inert otherwise.
	worker.AfterStep = func(_ context.Context, ran acs.StartTaskStatus, _ acs.Delivery) {
		failpoint.Crash("provisioner.after." + string(ran))
	}
	lambda.Start(sqsqueue.BatchHandler(func(ctx context.Context, d acs.Delivery) bool {
		failpoint.Crash("provisioner.receive")
		out, err := worker.Process(ctx, d)
		if err != nil {
			slog.Warn("provisioner: start task step", "task", d.TaskID, "outcome", out, "error", err)
		}
		return out == startflow.Retrying || err != nil
	}))
}
