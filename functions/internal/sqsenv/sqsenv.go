// Package sqsenv gives the functions that use the start-task queue their
// SQS adapter.
package sqsenv

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/shared/sqsqueue"
)

// Queue is the start-task queue (and its dead-letter queue when
// configured).
func Queue(e *awsenv.Env) *sqsqueue.Queue {
	c := sqs.NewFromConfig(e.AWS, func(o *sqs.Options) {
		if e.Config.AWS.SQSEndpoint != "" {
			o.BaseEndpoint = aws.String(e.Config.AWS.SQSEndpoint)
		}
	})
	return sqsqueue.New(sqsqueue.Options{Client: c, QueueURL: e.Config.AWS.QueueURL, DeadLetterURL: e.Config.AWS.DeadLetterURL})
}
