package startflow

import (
	"log/slog"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Defaults the deployment depends on: the AWS stacks (infra/) derive the
// start queue's settings from them.
const (
	// DefaultVisibility is Config.Visibility's default: how long a
	// delivery is kept invisible at a time while its steps run (the
	// heartbeat renews it every half of it).
	DefaultVisibility = 60 * time.Second
	// DefaultMaxAttempts is Config.MaxAttempts's default: the deliveries
	// of one step that fail before its task ends ERROR.
	DefaultMaxAttempts = 5
)

// ArchivePrefix is the blob key prefix of workspace archives
// (archives/<sandbox>/<time>.tar.gz).
const ArchivePrefix = "archives/"

// TaskFailedLog is the message of the log line written (at level WARN,
// with the task's id and the status it failed at) whenever a start task
// ends ERROR: the AWS stacks count these lines into a metric and alarm on
// it. The task's detail is not logged (it may quote a setup script's
// output).
const TaskFailedLog = "startflow: start task ended ERROR"

func logTaskFailed(id string, at acs.StartTaskStatus) {
	slog.Warn(TaskFailedLog, "task", id, "status", at)
}
