package startflow

import (
	"log/slog"

	"github.com/acs-project/acs/shared/acs"
)

// TaskFailedLog is the message of the log line written (at level WARN,
// with the task's id and the status it failed at) whenever a start task
// ends ERROR: the AWS stacks count these lines into a metric and alarm on
// it. The task's detail is not logged (it may quote a setup script's
// output).
const TaskFailedLog = "startflow: start task ended ERROR"

func logTaskFailed(id string, at acs.StartTaskStatus) {
	slog.Warn(TaskFailedLog, "task", id, "status", at)
}
