package sqsqueue

// The IAM actions each use of the queues needs: the AWS stacks grant
// exactly these, on the start queue or its dead-letter queue. Setup's
// calls are for tests and installers.
var (
	// SendIAMActions: Send (start routes, the provisioner's next steps,
	// the reconciler's restarts), on the start queue.
	SendIAMActions = []string{"sqs:SendMessage"}
	// ConsumeIAMActions: a Lambda event source on the start queue
	// (Receive, Delete, Delay; the mapping reads the queue's attributes).
	ConsumeIAMActions = []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}
	// DeadLetterIAMActions: ReceiveDead and DeleteDead, on the dead-letter
	// queue.
	DeadLetterIAMActions = []string{"sqs:DeleteMessage", "sqs:ReceiveMessage"}
)
