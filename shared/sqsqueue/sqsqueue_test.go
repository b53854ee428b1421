package sqsqueue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/queuetest"
	"github.com/acs-project/acs/shared/sqsqueue"
)

// newClient returns a client for endpoint with the test credentials.
func newClient(endpoint string, maxAttempts int) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(endpoint),
		RetryMaxAttempts: maxAttempts,
	})
}

// server returns a client for the SQS server of ACS_TEST_SQS_ENDPOINT
// (fauxqs, started by scripts/test.sh), skipping the test without one.
func server(t *testing.T) *sqs.Client {
	t.Helper()
	ep := os.Getenv("ACS_TEST_SQS_ENDPOINT")
	if ep == "" {
		t.Skip("ACS_TEST_SQS_ENDPOINT is not set: run scripts/test.sh (it starts fauxqs) or point it at an SQS endpoint")
	}
	return newClient(ep, 0)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// setup creates a queue and its dead-letter queue with unique names,
// deleted when the test ends.
func setup(t *testing.T, client *sqs.Client, maxReceiveCount int) (*sqsqueue.Queue, string, string) {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	name = "acs-" + hex.EncodeToString(b[:]) + "-" + strings.Trim(name, "-")
	ctx := context.Background()
	url, dlq, err := sqsqueue.Setup(ctx, client, name, maxReceiveCount)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, u := range []string{url, dlq} {
			if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
				t.Logf("delete queue %s: %v", u, err)
			}
		}
	})
	return sqsqueue.New(sqsqueue.Options{Client: client, QueueURL: url, DeadLetterURL: dlq}), url, dlq
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	client := server(t)
	queuetest.Run(t, func(t *testing.T) acs.Queue {
		q, _, _ := setup(t, client, 10)
		return q
	})
}

func TestSetupIdempotent(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	_, url, dlq := setup(t, client, 3)
	name := url[strings.LastIndexByte(url, '/')+1:]
	url2, dlq2, err := sqsqueue.Setup(ctx, client, name, 3)
	must(t, err)
	if url2 != url || dlq2 != dlq {
		t.Fatalf("second setup: %s %s, first %s %s", url2, dlq2, url, dlq)
	}
	// A different maxReceiveCount converges the redrive policy.
	_, _, err = sqsqueue.Setup(ctx, client, name, 7)
	must(t, err)
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	must(t, err)
	var policy struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	must(t, json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &policy))
	if policy.MaxReceiveCount != "7" {
		t.Fatalf("redrive policy %s", attrs.Attributes["RedrivePolicy"])
	}

	for _, bad := range []string{"", "has space", "dot.name", strings.Repeat("x", 77)} {
		if _, _, err := sqsqueue.Setup(ctx, client, bad, 3); !errors.Is(err, acs.ErrInvalid) {
			t.Errorf("setup %q: %v, want ErrInvalid", bad, err)
		}
	}
	for _, n := range []int{0, 1001} {
		if _, _, err := sqsqueue.Setup(ctx, client, "acs-ok", n); !errors.Is(err, acs.ErrInvalid) {
			t.Errorf("setup maxReceiveCount %d: %v, want ErrInvalid", n, err)
		}
	}
}

// A message received maxReceiveCount times without being deleted moves to
// the dead-letter queue, where ReceiveDead and DeleteDead see it.
func TestRedriveToDeadLetter(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	q, _, _ := setup(t, client, 2)
	must(t, q.Send(ctx, acs.Message{TaskID: "doomed"}, 0))
	for i := 1; i <= 2; i++ {
		d, err := q.Receive(ctx, 1, 5*time.Second, time.Second)
		must(t, err)
		if len(d) != 1 || d[0].ReceiveCount != i {
			t.Fatalf("receive %d: %+v", i, d)
		}
	}
	// The third receive finds the message over its limit: SQS moves it.
	d, err := q.Receive(ctx, 1, 3*time.Second, time.Second)
	must(t, err)
	if len(d) != 0 {
		t.Fatalf("message past maxReceiveCount delivered: %+v", d)
	}
	dead, err := q.ReceiveDead(ctx, 10, 5*time.Second)
	must(t, err)
	if len(dead) != 1 || dead[0].TaskID != "doomed" || dead[0].Receipt == "" || dead[0].ReceiveCount < 2 {
		t.Fatalf("dead letters %+v", dead)
	}
	must(t, q.DeleteDead(ctx, dead[0].Receipt))
	must(t, q.DeleteDead(ctx, dead[0].Receipt)) // twice is fine
	if again, err := q.ReceiveDead(ctx, 10, time.Second); err != nil || len(again) != 0 {
		t.Fatalf("after DeleteDead: %+v, %v", again, err)
	}
}

// A body that is not a message never reaches Receive's caller; it goes to
// the dead-letter queue, where ReceiveDead returns it with no task id.
func TestPoisonMessage(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	q, url, _ := setup(t, client, 1)
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("not a message")})
	must(t, err)
	must(t, q.Send(ctx, acs.Message{TaskID: "good"}, 0))
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && len(got) == 0 {
		d, err := q.Receive(ctx, 10, time.Second, time.Second)
		must(t, err)
		for _, x := range d {
			got = append(got, x.TaskID)
			must(t, q.Delete(ctx, x.Receipt))
		}
	}
	if len(got) != 1 || got[0] != "good" {
		t.Fatalf("received %q", got)
	}
	var dead []acs.Delivery
	for time.Now().Before(deadline.Add(5*time.Second)) && len(dead) == 0 {
		// Receives move the poison message on once it is visible again.
		_, err := q.Receive(ctx, 10, time.Second, time.Second)
		must(t, err)
		dead, err = q.ReceiveDead(ctx, 10, 0)
		must(t, err)
	}
	if len(dead) != 1 || dead[0].TaskID != "" || dead[0].Receipt == "" {
		t.Fatalf("dead letters %+v", dead)
	}
	must(t, q.DeleteDead(ctx, dead[0].Receipt))
}

func TestNoDeadLetterQueue(t *testing.T) {
	q := sqsqueue.New(sqsqueue.Options{Client: newClient("http://127.0.0.1:1", 1), QueueURL: "http://127.0.0.1:1/000000000000/q"})
	if _, err := q.ReceiveDead(context.Background(), 1, 0); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("ReceiveDead: %v, want ErrInvalid", err)
	}
	if err := q.DeleteDead(context.Background(), "r"); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("DeleteDead: %v, want ErrInvalid", err)
	}
	if err := sqsqueue.New(sqsqueue.Options{}).Send(context.Background(), acs.Message{TaskID: "t"}, 0); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("send without client: %v, want ErrInvalid", err)
	}
	if err := q.Send(context.Background(), acs.Message{}, 0); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("send without task id: %v, want ErrInvalid", err)
	}
}

// A long poll returns as soon as a message arrives, well before its wait.
func TestLongPollWakesEarly(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	q, _, _ := setup(t, client, 5)
	go func() {
		time.Sleep(500 * time.Millisecond) // legitimate: send while the long poll below waits
		q.Send(ctx, acs.Message{TaskID: "wake"}, 0)
	}()
	start := time.Now()
	d, err := q.Receive(ctx, 1, 15*time.Second, 30*time.Second)
	must(t, err)
	if len(d) != 1 || d[0].TaskID != "wake" {
		t.Fatalf("deliveries %+v", d)
	}
	if el := time.Since(start); el > 5*time.Second || el < 400*time.Millisecond {
		t.Fatalf("long poll returned after %v", el)
	}
	// An empty long poll waits its whole wait (in whole seconds).
	start = time.Now()
	d, err = q.Receive(ctx, 1, 1500*time.Millisecond, time.Second)
	must(t, err)
	if el := time.Since(start); len(d) != 0 || el < 900*time.Millisecond || el > 4*time.Second {
		t.Fatalf("empty poll: %+v after %v", d, el)
	}
}

func TestDelays(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	q, _, _ := setup(t, client, 10)

	t.Run("SubSecondSendRoundsUp", func(t *testing.T) {
		start := time.Now()
		must(t, q.Send(ctx, acs.Message{TaskID: "soon"}, 200*time.Millisecond))
		if d, err := q.Receive(ctx, 1, 0, time.Second); err != nil || len(d) != 0 {
			t.Fatalf("delivered before its delay: %+v %v", d, err)
		}
		d, err := q.Receive(ctx, 1, 5*time.Second, 30*time.Second)
		must(t, err)
		if len(d) != 1 || time.Since(start) < 900*time.Millisecond {
			t.Fatalf("%+v after %v", d, time.Since(start))
		}
		must(t, q.Delete(ctx, d[0].Receipt))
	})

	t.Run("LongDelaysClamp", func(t *testing.T) {
		// SQS refuses DelaySeconds over 900 and visibility over 12 h:
		// both are clamped, so the calls succeed.
		must(t, q.Send(ctx, acs.Message{TaskID: "much-later"}, 2*time.Hour))
		must(t, q.Send(ctx, acs.Message{TaskID: "now"}, 0))
		d, err := q.Receive(ctx, 10, 2*time.Second, 30*time.Second)
		must(t, err)
		if len(d) != 1 || d[0].TaskID != "now" {
			t.Fatalf("deliveries %+v", d)
		}
		must(t, q.Delay(ctx, d[0].Receipt, 48*time.Hour))
		if d, err := q.Receive(ctx, 10, time.Second, 30*time.Second); err != nil || len(d) != 0 {
			t.Fatalf("delayed messages delivered: %+v %v", d, err)
		}
	})

	t.Run("HeartbeatKeepsInvisible", func(t *testing.T) {
		q, _, _ := setup(t, client, 10)
		must(t, q.Send(ctx, acs.Message{TaskID: "busy"}, 0))
		d, err := q.Receive(ctx, 1, 2*time.Second, time.Second)
		must(t, err)
		if len(d) != 1 {
			t.Fatal("no delivery")
		}
		// Extend the visibility twice before it runs out, as the worker's
		// heartbeat does.
		for range 2 {
			time.Sleep(600 * time.Millisecond) // legitimate: together past the first visibility timeout
			must(t, q.Delay(ctx, d[0].Receipt, 2*time.Second))
		}
		if again, err := q.Receive(ctx, 1, 0, time.Second); err != nil || len(again) != 0 {
			t.Fatalf("visible while its step runs: %+v %v", again, err)
		}
		must(t, q.Delete(ctx, d[0].Receipt))
		if err := q.Delay(ctx, d[0].Receipt, time.Second); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("delay after delete: %v, want ErrNotFound", err)
		}
	})

	t.Run("StaleReceipts", func(t *testing.T) {
		must(t, q.Delete(ctx, "AQEBnot-a-receipt-we-issued"))
		if err := q.Delay(ctx, "AQEBnot-a-receipt-we-issued", time.Second); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("delay with a stale receipt: %v, want ErrNotFound", err)
		}
	})
}

// Record converts the records of an SQS event, as Lambda delivers them.
func TestRecord(t *testing.T) {
	raw, err := os.ReadFile("testdata/sqs-event.json")
	must(t, err)
	var ev events.SQSEvent
	must(t, json.Unmarshal(raw, &ev))
	if len(ev.Records) != 3 {
		t.Fatalf("%d records", len(ev.Records))
	}
	want := []acs.Delivery{
		{Message: acs.Message{TaskID: "3f0c6b5a8e2d4c1f9a7b6e5d4c3b2a19"}, Receipt: ev.Records[0].ReceiptHandle, ReceiveCount: 3},
		{Message: acs.Message{TaskID: "7d2e9a41c05b4f6e8a3b1c2d3e4f5a6b"}, Receipt: ev.Records[1].ReceiptHandle, ReceiveCount: 1},
	}
	for i, w := range want {
		got, err := sqsqueue.Record(ev.Records[i])
		must(t, err)
		if got != w {
			t.Errorf("record %d: %+v, want %+v", i, got, w)
		}
	}
	if _, err := sqsqueue.Record(ev.Records[2]); !errors.Is(err, acs.ErrInvalid) {
		t.Errorf("record with a bad body: %v, want ErrInvalid", err)
	}
	for name, edit := range map[string]func(*events.SQSMessage){
		"NoReceiveCount":  func(m *events.SQSMessage) { delete(m.Attributes, "ApproximateReceiveCount") },
		"BadReceiveCount": func(m *events.SQSMessage) { m.Attributes["ApproximateReceiveCount"] = "many" },
		"NoReceipt":       func(m *events.SQSMessage) { m.ReceiptHandle = "" },
		"NoTaskID":        func(m *events.SQSMessage) { m.Body = `{"task_id":""}` },
		"NotSQS":          func(m *events.SQSMessage) { m.EventSource = "aws:kinesis" },
	} {
		var m events.SQSMessage
		must(t, json.Unmarshal(raw, &ev))
		m = ev.Records[0]
		edit(&m)
		if _, err := sqsqueue.Record(m); !errors.Is(err, acs.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// A delivery made from a message the way Lambda receives it acknowledges
// and delays like one from Receive.
func TestRecordReceiptWorksWithQueue(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	q, url, _ := setup(t, client, 10)
	must(t, q.Send(ctx, acs.Message{TaskID: "from-lambda"}, 0))
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		WaitTimeSeconds:             2,
		VisibilityTimeout:           30,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	must(t, err)
	if len(out.Messages) != 1 {
		t.Fatalf("%d messages", len(out.Messages))
	}
	m := out.Messages[0]
	d, err := sqsqueue.Record(events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Attributes: m.Attributes, EventSource: "aws:sqs", AWSRegion: "us-east-1",
	})
	must(t, err)
	if d.TaskID != "from-lambda" || d.ReceiveCount != 1 {
		t.Fatalf("delivery %+v", d)
	}
	must(t, q.Delay(ctx, d.Receipt, time.Second))
	again, err := q.Receive(ctx, 1, 5*time.Second, 30*time.Second)
	must(t, err)
	if len(again) != 1 || again[0].ReceiveCount != 2 {
		t.Fatalf("after delay %+v", again)
	}
	must(t, q.Delete(ctx, again[0].Receipt))
}

func TestQueueMissing(t *testing.T) {
	client := server(t)
	ctx := context.Background()
	_, url, _ := setup(t, client, 3)
	q := sqsqueue.New(sqsqueue.Options{Client: client, QueueURL: url[:strings.LastIndexByte(url, '/')+1] + "acs-no-such-queue"})
	if err := q.Send(ctx, acs.Message{TaskID: "t"}, 0); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("send to a missing queue: %v, want ErrNotFound", err)
	}
}

// Throttling, 5xx answers and network failures wrap ErrUnavailable; client
// errors do not.
func TestErrorClassification(t *testing.T) {
	ctx := context.Background()
	var answer atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answer.Load().([2]string)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		code := map[string]int{"500": 500, "503": 503, "400": 400}[a[0]]
		w.WriteHeader(code)
		w.Write([]byte(a[1]))
	}))
	defer srv.Close()
	q := sqsqueue.New(sqsqueue.Options{Client: newClient(srv.URL, 1), QueueURL: srv.URL + "/000000000000/q"})
	for _, tc := range []struct {
		status, body string
		want         error
	}{
		{"500", `{"__type":"com.amazonaws.sqs#InternalError","message":"boom"}`, acs.ErrUnavailable},
		{"503", `{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"later"}`, acs.ErrUnavailable},
		{"400", `{"__type":"com.amazonaws.sqs#RequestThrottled","message":"slow down"}`, acs.ErrUnavailable},
		{"400", `{"__type":"com.amazonaws.sqs#ThrottlingException","message":"slow down"}`, acs.ErrUnavailable},
		{"400", `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"no queue"}`, acs.ErrNotFound},
		{"400", `{"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"bad"}`, acs.ErrInvalid},
	} {
		answer.Store([2]string{tc.status, tc.body})
		err := q.Send(ctx, acs.Message{TaskID: "t"}, 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.status, tc.body, err, tc.want)
		}
		if tc.want != acs.ErrUnavailable && errors.Is(err, acs.ErrUnavailable) {
			t.Errorf("%s %s: %v is not a retryable error", tc.status, tc.body, err)
		}
	}
	// Stale receipts are success for Delete.
	answer.Store([2]string{"400", `{"__type":"com.amazonaws.sqs#ReceiptHandleIsInvalid","message":"The input receipt handle is invalid."}`})
	must(t, q.Delete(ctx, "r"))
	answer.Store([2]string{"400", `{"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"Value r for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."}`})
	must(t, q.Delete(ctx, "r"))
	if err := q.Delay(ctx, "r", time.Second); !errors.Is(err, acs.ErrNotFound) {
		t.Errorf("delay with an expired receipt: %v, want ErrNotFound", err)
	}

	// Nothing listens: a network failure.
	srv.Close()
	if err := q.Send(ctx, acs.Message{TaskID: "t"}, 0); !errors.Is(err, acs.ErrUnavailable) {
		t.Errorf("send with the server down: %v, want ErrUnavailable", err)
	}
	// A canceled context is the caller's doing, not unavailability.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := q.Send(cctx, acs.Message{TaskID: "t"}, 0); !errors.Is(err, context.Canceled) || errors.Is(err, acs.ErrUnavailable) {
		t.Errorf("send with a canceled context: %v", err)
	}
}

func TestBatchHandlerReportsOnlyKeptRecords(t *testing.T) {
	raw, err := os.ReadFile("testdata/sqs-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	keepFirst := ""
	h := sqsqueue.BatchHandler(func(_ context.Context, d acs.Delivery) bool {
		mu.Lock()
		defer mu.Unlock()
		seen[d.TaskID] = true
		return d.TaskID == keepFirst
	})
	var valid []events.SQSMessage
	for _, r := range ev.Records {
		if _, err := sqsqueue.Record(r); err == nil {
			valid = append(valid, r)
		}
	}
	if len(valid) < 2 || len(valid) == len(ev.Records) {
		t.Fatalf("the sample event needs valid records and a bad one: %d of %d valid", len(valid), len(ev.Records))
	}
	d0, _ := sqsqueue.Record(valid[0])
	keepFirst = d0.TaskID
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	want := []string{valid[0].MessageId}
	for _, r := range ev.Records {
		if _, err := sqsqueue.Record(r); err != nil {
			want = append(want, r.MessageId)
		}
	}
	sort.Strings(failed)
	sort.Strings(want)
	if fmt.Sprint(failed) != fmt.Sprint(want) {
		t.Fatalf("batch item failures %v, want %v", failed, want)
	}
	if len(seen) != len(valid) {
		t.Fatalf("processed %d records, want %d", len(seen), len(valid))
	}
	// The response is what Lambda reads: an empty list, not null, when
	// everything succeeded.
	keepFirst = "none"
	resp, _ = h(context.Background(), events.SQSEvent{Records: valid})
	if b, _ := json.Marshal(resp); !strings.Contains(string(b), `"batchItemFailures":[]`) {
		t.Fatalf("all-success response %s", b)
	}
}

// TestRecordReadsBodiesWrittenEarlier: a body as the earlier versions sent
// it, with a step, still reads (the queue's format is its own, apart from
// acs.Message's tags).
func TestRecordReadsBodiesWrittenEarlier(t *testing.T) {
	m := events.SQSMessage{MessageId: "m1", ReceiptHandle: "rh", EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": "2"},
		Body:       `{"task_id":"written-earlier","step":"WAITING_FOR_SANDBOX"}`}
	got, err := sqsqueue.Record(m)
	must(t, err)
	want := acs.Delivery{Message: acs.Message{TaskID: "written-earlier", Step: acs.TaskWaitingForSandbox}, Receipt: "rh", ReceiveCount: 2}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
