// Command reconciler runs on a schedule (EventBridge): it pauses idle
// sandboxes, archives and cleans up long-idle ones, repairs sandbox statuses
// against the runtime, expires start tasks that stopped advancing, ends
// those whose messages reached the dead-letter queue and refills the
// runtime's warm pool.
package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/functions/internal/runtimeenv"
	"github.com/acs-project/acs/functions/internal/s3env"
	"github.com/acs-project/acs/functions/internal/sqsenv"
	"github.com/acs-project/acs/shared/reconciler"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
)

func main() {
	env := awsenv.Load(functions.Reconciler.Need)
	blobs := s3env.Blobs(env)
	store := env.Store(blobs)
	rt := runtimeenv.Runtime(env)
	queue := sqsenv.Queue(env)
	flow := env.Flow()
	svc := services.Build(services.Adapters{Store: store, Queue: queue, Runtime: rt, Blobs: blobs, Sealer: env.Sealer(), Flow: flow})
	pass := reconciler.Pass{
		Lifecycle: svc.Sandboxes,
		Worker:    startflow.NewWorker(store, queue, rt, env.Sealer(), flow),
		Dead:      queue,
		TaskTTL:   env.Config.StartTaskTTL,
		// Kubernetes keeps a warm pool per spec; each pass refills it.
		Pool: runtimeenv.Pool(rt),
	}
	// The scheduled event carries nothing the pass needs.
	lambda.Start(func(ctx context.Context) (reconciler.PassReport, error) {
		rep, err := pass.Run(ctx)
		slog.Info("reconciler: pass", "paused", len(rep.Paused), "cleaned_up", len(rep.CleanedUp), "failed", len(rep.Failed),
			"expired_tasks", len(rep.ExpiredTasks), "dead_lettered_tasks", len(rep.DeadLetteredTasks), "warm_pool", rep.WarmPool, "error", err)
		return rep, err
	})
}
