package sqsqueue

import (
	"context"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/acs-project/acs/shared/acs"
)

// BatchHandler is the handler of a Lambda function consuming the queue
// through an event source mapping with ReportBatchItemFailures. It runs
// process for every record of the batch concurrently; a record for which
// process answers keep (its message must stay: a retry after the backoff it
// set) is reported as a batch item failure, so the mapping deletes only the
// others. A record that is not a start-task message is reported too: it is
// retried until the redrive policy moves it to the dead-letter queue, where
// the reconciler deletes it. The handler itself never fails the whole
// batch.
func BatchHandler(process func(ctx context.Context, d acs.Delivery) (keep bool)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			resp = events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		)
		for _, rec := range ev.Records {
			d, err := Record(rec)
			if err != nil {
				slog.Error("sqsqueue: not a start-task message; left for the dead-letter queue", "message", rec.MessageId, "error", err)
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
				mu.Unlock()
				continue
			}
			wg.Add(1)
			go func(id string, d acs.Delivery) {
				defer wg.Done()
				if process(ctx, d) {
					mu.Lock()
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
					mu.Unlock()
				}
			}(rec.MessageId, d)
		}
		wg.Wait()
		return resp, nil
	}
}
