// Package sqsqueue is the acs.Queue on Amazon SQS (a standard queue), with
// its dead-letter queue.
//
// A message body is the JSON of messageBody ({"task_id": ...}). Delivery is at
// least once, as the contract says, and SQS's limits shape the durations the
// contract takes:
//
//   - Send: the delay is rounded up to whole seconds and clamped to SQS's
//     maximum DelaySeconds, 900 s (15 minutes): a longer delay makes the
//     message visible after 15 minutes, earlier than asked. Callers needing
//     longer pauses receive the message and Delay it (up to 12 h).
//   - Receive: the wait is spent in long polls (WaitTimeSeconds) of whole
//     seconds, at most 20 s each; its sub-second remainder is not waited
//     for. A wait under one second is a single short poll, which on SQS
//     samples only some of its servers and may miss messages that are there:
//     wait one second or more for a dependable poll. The visibility is rounded up to whole
//     seconds and clamped to 12 h; a visibility of zero leaves the queue's
//     default visibility timeout. At most 10 messages come back, whatever max
//     asks for.
//   - Delay: a ChangeMessageVisibility, rounded up to whole seconds and
//     clamped to 12 h. SQS also refuses to keep a message invisible for more
//     than 12 h after the receive that returned it.
//
// The SDK leaves zero-valued durations out of its requests, so SQS then
// applies the queue's own defaults: keep the queue's DelaySeconds and
// ReceiveMessageWaitTimeSeconds at 0 (SQS's defaults, and Setup's), or a
// Send without delay would be delayed and a short poll would wait.
//
// Receipts are SQS receipt handles. Delete treats a receipt SQS no longer
// accepts (already deleted, expired) as success. Delay returns an error
// wrapping acs.ErrNotFound for a delivery that is no longer in flight.
//
// Messages received more than the queue's maxReceiveCount times without
// being deleted move to the dead-letter queue (SQS's redrive, see Setup),
// where ReceiveDead and DeleteDead read them, so the reconciler can end their
// start tasks with an error.
//
// Errors wrap acs.ErrUnavailable for throttling, 5xx answers and network
// failures (safe to retry; the SDK has already retried them),
// acs.ErrNotFound when the queue does not exist, and acs.ErrInvalid for
// arguments SQS rejects or this package refuses. A canceled or expired
// context gives an error wrapping ctx.Err().
package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/acs-project/acs/internal/awserr"
	"github.com/acs-project/acs/shared/acs"
)

// SQS limits.
const (
	// MaxDelay is the longest Send delay SQS supports (DelaySeconds).
	MaxDelay = 15 * time.Minute
	// MaxVisibility is the longest visibility timeout SQS supports.
	MaxVisibility = 12 * time.Hour
	// MaxWaitPerPoll is the longest long poll of one ReceiveMessage.
	MaxWaitPerPoll = 20 * time.Second
	// MaxMessagesPerReceive is the most messages one ReceiveMessage returns.
	MaxMessagesPerReceive = 10
)

// DeadLetterRetention is how long the dead-letter queue keeps a message
// (SQS's longest retention), so that the reconciler finds it even after
// a long outage.
const DeadLetterRetention = 14 * 24 * time.Hour

// DeadVisibility is how long a message received by ReceiveDead stays
// invisible in the dead-letter queue before it is delivered again.
const DeadVisibility = 2 * time.Minute

// Options configure a Queue.
type Options struct {
	// Client is the SQS client (required). For a local endpoint set its
	// BaseEndpoint; the SDK sends every request there, whatever host the
	// queue URLs name.
	Client *sqs.Client
	// QueueURL is the queue's URL (required).
	QueueURL string
	// DeadLetterURL is the URL of the queue's dead-letter queue, read by
	// ReceiveDead and DeleteDead (optional: without it they fail with
	// acs.ErrInvalid).
	DeadLetterURL string
}

// Queue is an acs.Queue on an SQS standard queue. It is safe for concurrent
// use.
type Queue struct {
	client *sqs.Client
	url    string
	dlq    string
}

var _ acs.Queue = (*Queue)(nil)

// New returns the queue o describes. It makes no request: a missing client
// or URL shows as acs.ErrInvalid from each method.
func New(o Options) *Queue {
	return &Queue{client: o.Client, url: o.QueueURL, dlq: o.DeadLetterURL}
}

func (q *Queue) check(url, what string) error {
	if q.client == nil {
		return fmt.Errorf("sqsqueue: no SQS client: %w", acs.ErrInvalid)
	}
	if url == "" {
		return fmt.Errorf("sqsqueue: no %s URL: %w", what, acs.ErrInvalid)
	}
	return nil
}

// Send enqueues m, first visible after delay (rounded up to whole seconds,
// at most 15 minutes: see the package comment). ErrInvalid for an empty
// task id.
func (q *Queue) Send(ctx context.Context, m acs.Message, delay time.Duration) error {
	if err := q.check(q.url, "queue"); err != nil {
		return err
	}
	if m.TaskID == "" {
		return fmt.Errorf("sqsqueue: send: empty task id: %w", acs.ErrInvalid)
	}
	body, err := json.Marshal(messageBody(m))
	if err != nil {
		return fmt.Errorf("sqsqueue: send: %w", err)
	}
	_, err = q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(q.url),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: seconds(delay, MaxDelay),
	})
	if err != nil {
		return wrap(ctx, "send task "+m.TaskID, err)
	}
	return nil
}

// Receive returns up to max (at most 10) visible messages, waiting up to
// wait for the first; each stays invisible for visibility. It returns as
// soon as a poll returns messages, and an empty slice when wait passes
// without any. SQS rounds the durations (see the package comment): a wait
// under one second is a single short poll, and a visibility of zero means the
// queue's default visibility timeout.
//
// A message whose body is not an acs.Message is not returned: it stays
// invisible for visibility and, received again and again, moves to the
// dead-letter queue (or, without a redrive policy, keeps coming back).
func (q *Queue) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]acs.Delivery, error) {
	if err := q.check(q.url, "queue"); err != nil {
		return nil, err
	}
	return q.receive(ctx, q.url, max, wait, visibility, false)
}

// ReceiveDead returns up to max (at most 10) messages from the dead-letter
// queue, waiting up to wait for the first; each stays invisible there for
// DeadVisibility. ReceiveCount is SQS's count, which includes the deliveries
// on the source queue. A message whose body is not an acs.Message comes back
// with an empty TaskID, so the caller can delete it. ErrInvalid when the
// queue has no DeadLetterURL.
func (q *Queue) ReceiveDead(ctx context.Context, max int, wait time.Duration) ([]acs.Delivery, error) {
	if err := q.check(q.dlq, "dead-letter queue"); err != nil {
		return nil, err
	}
	return q.receive(ctx, q.dlq, max, wait, DeadVisibility, true)
}

func (q *Queue) receive(ctx context.Context, url string, n int, wait, visibility time.Duration, keepBad bool) ([]acs.Delivery, error) {
	n = min(max(n, 1), MaxMessagesPerReceive)
	deadline := time.Now().Add(wait)
	for polled := false; ; polled = true {
		remaining := wait // the first poll gets the whole wait
		if polled {
			remaining = time.Until(deadline)
		}
		var waitSeconds int32
		switch {
		case remaining >= time.Second:
			waitSeconds = int32(min(remaining, MaxWaitPerPoll) / time.Second)
		case polled:
			return []acs.Delivery{}, nil
		}
		out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             waitSeconds,
			VisibilityTimeout:           seconds(visibility, MaxVisibility),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			return nil, wrap(ctx, "receive", err)
		}
		ds := make([]acs.Delivery, 0, len(out.Messages))
		for _, m := range out.Messages {
			d, err := delivery(aws.ToString(m.ReceiptHandle), aws.ToString(m.Body), m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
			if err != nil {
				if !keepBad {
					continue
				}
				d.TaskID = ""
			}
			ds = append(ds, d)
		}
		if len(ds) > 0 {
			return ds, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sqsqueue: receive: %w", err)
		}
	}
}

// Delete acknowledges a delivery. Deleting twice, or with a receipt SQS no
// longer accepts (invalid or expired), is not an error.
func (q *Queue) Delete(ctx context.Context, receipt string) error {
	if err := q.check(q.url, "queue"); err != nil {
		return err
	}
	return q.delete(ctx, q.url, receipt)
}

// DeleteDead removes a message received by ReceiveDead, like Delete.
// ErrInvalid when the queue has no DeadLetterURL.
func (q *Queue) DeleteDead(ctx context.Context, receipt string) error {
	if err := q.check(q.dlq, "dead-letter queue"); err != nil {
		return err
	}
	return q.delete(ctx, q.dlq, receipt)
}

func (q *Queue) delete(ctx context.Context, url, receipt string) error {
	if receipt == "" {
		return fmt.Errorf("sqsqueue: delete: empty receipt: %w", acs.ErrInvalid)
	}
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{
		QueueUrl:      aws.String(url),
		ReceiptHandle: aws.String(receipt),
	})
	if err != nil && !staleReceipt(err) {
		return wrap(ctx, "delete", err)
	}
	return nil
}

// Delay makes a delivered message visible again after d (rounded up to
// whole seconds, at most 12 h), by changing its visibility timeout: this
// both schedules the next step and, called periodically, keeps a message
// invisible while its step runs. ErrNotFound when the delivery is no longer
// in flight (deleted, or its visibility timeout passed) or its receipt is
// not one SQS accepts.
func (q *Queue) Delay(ctx context.Context, receipt string, d time.Duration) error {
	if err := q.check(q.url, "queue"); err != nil {
		return err
	}
	if receipt == "" {
		return fmt.Errorf("sqsqueue: delay: empty receipt: %w", acs.ErrInvalid)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receipt),
		VisibilityTimeout: seconds(d, MaxVisibility),
	})
	if err != nil {
		var notInflight *types.MessageNotInflight
		if errors.As(err, &notInflight) || staleReceipt(err) {
			return fmt.Errorf("sqsqueue: delay: the delivery is no longer in flight: %w: %w", acs.ErrNotFound, err)
		}
		return wrap(ctx, "delay", err)
	}
	return nil
}

// Record converts a message of an SQS event, as Lambda delivers it, into a
// delivery: Receipt is its receipt handle, ReceiveCount its
// ApproximateReceiveCount attribute, and the message its decoded body.
// Delete and Delay of a Queue on the same queue URL accept the receipt.
// (Lambda's event source mapping also deletes the messages of a batch the
// function returns success for, and makes failed ones visible again.)
//
// ErrInvalid when the body is not an acs.Message with a task id, the
// receipt handle or receive count is missing or malformed, or the record
// names an event source other than "aws:sqs".
func Record(m events.SQSMessage) (acs.Delivery, error) {
	if m.EventSource != "" && m.EventSource != "aws:sqs" {
		return acs.Delivery{}, fmt.Errorf("sqsqueue: record %s: event source %q is not SQS: %w", m.MessageId, m.EventSource, acs.ErrInvalid)
	}
	count, ok := m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]
	if !ok {
		return acs.Delivery{}, fmt.Errorf("sqsqueue: record %s: no ApproximateReceiveCount attribute: %w", m.MessageId, acs.ErrInvalid)
	}
	d, err := delivery(m.ReceiptHandle, m.Body, count)
	if err != nil {
		return acs.Delivery{}, fmt.Errorf("sqsqueue: record %s: %w", m.MessageId, err)
	}
	return d, nil
}

// messageBody is the JSON of a message's body: the queue's format, apart
// from acs.Message's tags (a field added to acs.Message fails to compile
// until it is added here).
type messageBody struct {
	TaskID string              `json:"task_id"`
	Step   acs.StartTaskStatus `json:"step,omitempty"`
}

// delivery decodes a received message. On error it still returns what it
// could decode (the receipt always).
func delivery(receipt, body, count string) (acs.Delivery, error) {
	d := acs.Delivery{Receipt: receipt}
	if receipt == "" {
		return d, fmt.Errorf("no receipt handle: %w", acs.ErrInvalid)
	}
	if n, err := strconv.Atoi(count); err == nil && n > 0 {
		d.ReceiveCount = n
	} else {
		return d, fmt.Errorf("receive count %q: %w", count, acs.ErrInvalid)
	}
	var b messageBody
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return d, fmt.Errorf("body is not a message: %w: %w", acs.ErrInvalid, err)
	}
	d.Message = acs.Message(b)
	if d.TaskID == "" {
		return d, fmt.Errorf("body has no task_id: %w", acs.ErrInvalid)
	}
	return d, nil
}

// Setup creates the queue name and its dead-letter queue name+"-dlq"
// (DeadLetterRetention) unless they exist, sets the queue's redrive policy to
// move a message to the dead-letter queue once it has been received
// maxReceiveCount (1 to 1000) times without being deleted, and returns both
// URLs. It is idempotent, and converges existing queues to that redrive
// policy. It is for tests and installers: production creates the queues
// from its infrastructure definitions.
//
// ErrInvalid for a name SQS refuses (1 to 76 characters of letters, digits,
// hyphens and underscores, so the dead-letter name fits SQS's 80) or a
// maxReceiveCount out of range.
func Setup(ctx context.Context, client *sqs.Client, name string, maxReceiveCount int) (queueURL, dlqURL string, err error) {
	if client == nil {
		return "", "", fmt.Errorf("sqsqueue: setup: no SQS client: %w", acs.ErrInvalid)
	}
	if !validName(name) {
		return "", "", fmt.Errorf("sqsqueue: setup: queue name %q: 1 to 76 letters, digits, hyphens or underscores: %w", name, acs.ErrInvalid)
	}
	if maxReceiveCount < 1 || maxReceiveCount > 1000 {
		return "", "", fmt.Errorf("sqsqueue: setup: maxReceiveCount %d: not in 1..1000: %w", maxReceiveCount, acs.ErrInvalid)
	}
	dlqURL, err = ensureQueue(ctx, client, name+"-dlq", map[string]string{
		string(types.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(int(DeadLetterRetention / time.Second)),
	})
	if err != nil {
		return "", "", err
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", wrap(ctx, "setup: dead-letter queue ARN", err)
	}
	arn := attrs.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", "", fmt.Errorf("sqsqueue: setup: SQS returned no ARN for %s", dlqURL)
	}
	policy, err := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": maxReceiveCount})
	if err != nil {
		return "", "", fmt.Errorf("sqsqueue: setup: %w", err)
	}
	redrive := map[string]string{string(types.QueueAttributeNameRedrivePolicy): string(policy)}
	queueURL, err = ensureQueue(ctx, client, name, redrive)
	if err != nil {
		return "", "", err
	}
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(queueURL), Attributes: redrive}); err != nil {
		return "", "", wrap(ctx, "setup: redrive policy of "+name, err)
	}
	return queueURL, dlqURL, nil
}

// ensureQueue returns the URL of queue name, creating it with attrs when it
// does not exist.
func ensureQueue(ctx context.Context, client *sqs.Client, name string, attrs map[string]string) (string, error) {
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err == nil {
		return aws.ToString(got.QueueUrl), nil
	}
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		return "", wrap(ctx, "setup: queue "+name, err)
	}
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		var exists *types.QueueNameExists
		if errors.As(err, &exists) { // created meanwhile, with other attributes
			if got, gerr := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); gerr == nil {
				return aws.ToString(got.QueueUrl), nil
			}
		}
		return "", wrap(ctx, "setup: create queue "+name, err)
	}
	return aws.ToString(created.QueueUrl), nil
}

func validName(name string) bool {
	if name == "" || len(name) > 76 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// seconds rounds d up to whole seconds in [0, limit].
func seconds(d, limit time.Duration) int32 {
	d = min(max(d, 0), limit)
	return int32((d + time.Second - 1) / time.Second)
}

// staleReceipt reports whether SQS refused a receipt handle as invalid or
// expired.
func staleReceipt(err error) bool {
	var invalid *types.ReceiptHandleIsInvalid
	if errors.As(err, &invalid) {
		return true
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	code := errorCode(err)
	if code == "ReceiptHandleIsInvalid" {
		return true
	}
	// SQS reports an expired handle as InvalidParameterValue: "Value ... for
	// parameter ReceiptHandle is invalid. Reason: The receipt handle has
	// expired."
	msg := strings.ToLower(ae.ErrorMessage())
	return code == "InvalidParameterValue" && strings.Contains(msg, "receipt") && (strings.Contains(msg, "expired") || strings.Contains(msg, "invalid"))
}

// wrap gives err context and classifies it.
func wrap(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("sqsqueue: %s: %w", op, err)
	}
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return fmt.Errorf("sqsqueue: %s: %w: %w", op, acs.ErrNotFound, err)
	}
	if unavailable(err) {
		return fmt.Errorf("sqsqueue: %s: %w: %w", op, acs.ErrUnavailable, err)
	}
	switch errorCode(err) {
	case "InvalidParameterValue", "MissingParameter", "InvalidAddress", "InvalidMessageContents", "InvalidIdFormat", "InvalidAttributeName", "InvalidAttributeValue", "UnsupportedOperation":
		return fmt.Errorf("sqsqueue: %s: %w: %w", op, acs.ErrInvalid, err)
	}
	return fmt.Errorf("sqsqueue: %s: %w", op, err)
}

// unavailable reports the errors worth retrying later, SQS's own
// throttling errors included.
func unavailable(err error) bool {
	if awserr.Transient(err, errorCode(err), "ServiceUnavailable", "InternalError", "InternalFailure", "KmsThrottled") {
		return true
	}
	var throttled *types.RequestThrottled
	var kmsThrottled *types.KmsThrottled
	return !awserr.Ended(err) && (errors.As(err, &throttled) || errors.As(err, &kmsThrottled))
}

// errorCode returns the API error code of err ("" for none), without the
// "AWS.SimpleQueueService." prefix of SQS's query-compatible codes.
func errorCode(err error) string {
	return strings.TrimPrefix(awserr.Code(err), "AWS.SimpleQueueService.")
}
