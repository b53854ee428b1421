package dynamostore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/fileblob"
	"github.com/acs-project/acs/shared/storetest"
)

var ctx = context.Background()

func endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv("ACS_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		t.Skip("ACS_TEST_DYNAMODB_ENDPOINT is not set: run the tests through make test / scripts/test.sh")
	}
	return ep
}

// noScan is an HTTP transport that records the DynamoDB operations it
// carries and fails the test on a Scan.
type noScan struct {
	t    testing.TB
	base http.RoundTripper
	mu   sync.Mutex
	ops  map[string]int
}

func (n *noScan) RoundTrip(r *http.Request) (*http.Response, error) {
	target := r.Header.Get("X-Amz-Target")
	op := strings.TrimPrefix(target, "DynamoDB_20120810.")
	n.mu.Lock()
	n.ops[op]++
	n.mu.Unlock()
	if target == "DynamoDB_20120810.Scan" {
		n.t.Errorf("the store sent a Scan")
	}
	return n.base.RoundTrip(r)
}

func (n *noScan) count(op string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ops[op]
}

// client returns a DynamoDB client for ep (static test credentials) whose
// transport refuses Scans, with a retryer of maxAttempts and short backoff.
func client(t testing.TB, ep string, maxAttempts int) (*dynamodb.Client, *noScan) {
	tr := &noScan{t: t, base: http.DefaultTransport, ops: map[string]int{}}
	c := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ep),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Transport: tr, Timeout: 30 * time.Second},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
				return time.Duration(attempt) * 5 * time.Millisecond, nil
			})
		}),
	})
	return c, tr
}

func tableName() string {
	var b [6]byte
	rand.Read(b[:])
	return "acs-test-" + hex.EncodeToString(b[:])
}

// newTable creates a fresh table on c, deleted when the test ends.
func newTable(t testing.TB, c *dynamodb.Client, o dynamostore.Options) *dynamostore.Store {
	t.Helper()
	o.Client = c
	if o.Table == "" {
		o.Table = tableName()
	}
	s := dynamostore.New(o)
	if err := s.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &o.Table}); err != nil {
			t.Errorf("delete table %s: %v", o.Table, err)
		}
	})
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	ep := endpoint(t)
	c, tr := client(t, ep, 5)
	storetest.Run(t, func(t *testing.T) acs.Store { return newTable(t, c, dynamostore.Options{}) })
	if n := tr.count("Scan"); n != 0 {
		t.Fatalf("%d Scans", n)
	}
	for _, op := range []string{"Query", "GetItem", "PutItem", "TransactWriteItems", "BatchGetItem", "BatchWriteItem", "DeleteItem"} {
		if tr.count(op) == 0 {
			t.Errorf("the suite sent no %s: is the transport in the path?", op)
		}
	}
}

func TestCreateTableIsIdempotent(t *testing.T) {
	c, _ := client(t, endpoint(t), 3)
	s := newTable(t, c, dynamostore.Options{})
	must(t, s.CreateTable(ctx))
	name := aws.ToString(dynamostore.TableDefinition("x").TableName)
	if name != "x" {
		t.Fatalf("definition names %q", name)
	}
}

func TestLargeEventsGoToBlobs(t *testing.T) {
	c, _ := client(t, endpoint(t), 3)
	dir := t.TempDir()
	blobs, err := fileblob.New(dir)
	must(t, err)
	table := tableName()
	s := newTable(t, c, dynamostore.Options{Table: table, Blobs: blobs})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	big := func(id string, n int) []byte {
		return []byte(fmt.Sprintf(`{"kind":"ObservationEvent","id":%q,"content":"%s <&>"}`, id, strings.Repeat("x", n)))
	}
	evs := []acs.StoredEvent{
		{ID: "small-1", Kind: "MessageEvent", Source: "user", Timestamp: base, Text: "hello", JSON: []byte(`{"id":"small-1"}`)},
		{ID: "big-1", Kind: "ObservationEvent", Source: "environment", Timestamp: base.Add(time.Second), JSON: big("big-1", 400<<10)},
		// Text counts: a message whose JSON and text together pass the limit.
		{ID: "big-2", Kind: "MessageEvent", Source: "agent", Timestamp: base.Add(2 * time.Second),
			Text: "needle " + strings.Repeat("t", 200<<10), JSON: big("big-2", 200<<10)},
		{ID: "small-2", Kind: "MessageEvent", Source: "agent", Timestamp: base.Add(3 * time.Second), Text: "bye", JSON: []byte(`{"id":"small-2"}`)},
	}
	n, err := s.PutEvents(ctx, "conv-1", evs)
	must(t, err)
	if n != 4 {
		t.Fatalf("added %d", n)
	}
	// Redelivery is a no-op and leaves the blobs alone.
	n, err = s.PutEvents(ctx, "conv-1", evs)
	must(t, err)
	if n != 0 {
		t.Fatalf("re-put added %d", n)
	}
	keys, err := blobs.List(ctx, "events/")
	must(t, err)
	if fmt.Sprint(keys) != "[events/conv-1/big-1.json events/conv-1/big-2.json]" {
		t.Fatalf("blobs %v", keys)
	}
	page, err := s.SearchEvents(ctx, "conv-1", acs.EventQuery{})
	must(t, err)
	if len(page.Items) != 4 {
		t.Fatalf("%d events", len(page.Items))
	}
	for i, ev := range evs {
		if !bytes.Equal(page.Items[i], ev.JSON) {
			t.Fatalf("event %s came back as %d bytes (want %d)", ev.ID, len(page.Items[i]), len(ev.JSON))
		}
	}
	got, err := s.GetEvents(ctx, "conv-1", []string{"big-2", "nope", "small-1", "big-1"})
	must(t, err)
	if !bytes.Equal(got[0], evs[2].JSON) || got[1] != nil || !bytes.Equal(got[2], evs[0].JSON) || !bytes.Equal(got[3], evs[1].JSON) {
		t.Fatal("GetEvents did not return the stored JSON")
	}
	// Filters still see a large event's fields and text.
	page, err = s.SearchEvents(ctx, "conv-1", acs.EventQuery{EventFilter: acs.EventFilter{Body: "NEEDLE"}})
	must(t, err)
	if len(page.Items) != 1 || !bytes.Equal(page.Items[0], evs[2].JSON) {
		t.Fatalf("body search found %d", len(page.Items))
	}
	if n, _ := s.CountEvents(ctx, "conv-1", acs.EventFilter{Kind: "ObservationEvent"}); n != 1 {
		t.Fatalf("count %d", n)
	}
	// A batch over a transaction's 4 MB: many events of 300 KB each.
	var many []acs.StoredEvent
	for i := range 20 {
		id := fmt.Sprintf("m%02d", i)
		many = append(many, acs.StoredEvent{ID: id, Kind: "ObservationEvent", Source: "environment",
			Timestamp: base.Add(time.Duration(10+i) * time.Second), JSON: big(id, 300<<10)})
	}
	n, err = s.PutEvents(ctx, "conv-2", many)
	must(t, err)
	if n != 20 {
		t.Fatalf("added %d of 20 inline events", n)
	}
	if c, _ := s.CountEvents(ctx, "conv-2", acs.EventFilter{}); c != 20 {
		t.Fatalf("count %d", c)
	}
	must(t, s.DeleteEvents(ctx, "conv-1"))
	if keys, _ := blobs.List(ctx, "events/"); len(keys) != 0 {
		t.Fatalf("blobs left after delete: %v", keys)
	}
	if n, _ := s.CountEvents(ctx, "conv-1", acs.EventFilter{}); n != 0 {
		t.Fatalf("%d events after delete", n)
	}

	// Without a blob store, large events are refused and nothing is stored.
	plain := dynamostore.New(dynamostore.Options{Client: c, Table: table})
	_, err = plain.PutEvents(ctx, "conv-3", evs)
	if !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("large event without blobs: %v", err)
	}
	if n, _ := plain.CountEvents(ctx, "conv-3", acs.EventFilter{}); n != 0 {
		t.Fatalf("%d events stored by a refused put", n)
	}
}

// lost makes the throttler carry a request out and answer 500 (once).
const lost = -1

// throttler is a proxy in front of DynamoDB Local that answers chosen
// operations with an error.
type throttler struct {
	mu     sync.Mutex
	answer map[string]int // operation → HTTP status to answer (400: throttled; 500: internal error)
	hits   map[string]int
	proxy  *httputil.ReverseProxy
}

func (p *throttler) set(op string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status == 0 {
		delete(p.answer, op)
	} else {
		p.answer[op] = status
	}
}

func (p *throttler) hit(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[op]
}

func (p *throttler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	p.mu.Lock()
	status := p.answer[op]
	if status != 0 {
		p.hits[op]++
	}
	p.mu.Unlock()
	switch status {
	case 0:
		p.proxy.ServeHTTP(w, r)
	case lost: // the request is carried out, the answer lost (once)
		p.set(op, 0)
		p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(500)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"lost"}`)
	case 400:
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(400)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"throttled"}`)
	default:
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(500)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`)
	}
}

func TestFailuresAreUnavailableAndNeverLost(t *testing.T) {
	ep := endpoint(t)
	u, err := url.Parse(ep)
	must(t, err)
	th := &throttler{answer: map[string]int{}, hits: map[string]int{}, proxy: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(th)
	defer srv.Close()

	direct, _ := client(t, ep, 3)
	table := tableName()
	ref := newTable(t, direct, dynamostore.Options{Table: table}) // sees the truth
	const attempts = 2
	pc, _ := client(t, srv.URL, attempts)
	s := dynamostore.New(dynamostore.Options{Client: pc, Table: table})

	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	unavailable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, acs.ErrUnavailable) {
			t.Fatalf("%s: got %v, want ErrUnavailable", what, err)
		}
	}

	// A throttled PutItem: reported failed (after the SDK's retries), not stored.
	th.set("PutItem", 400)
	unavailable("throttled CreateUser", s.CreateUser(ctx, acs.User{ID: "u1", CreatedAt: base}))
	if n := th.hit("PutItem"); n != attempts {
		t.Fatalf("the SDK sent %d attempts, want %d", n, attempts)
	}
	if _, err := ref.GetUser(ctx, "u1"); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("a failed create was stored: %v", err)
	}
	th.set("PutItem", 500)
	unavailable("failing CreateUser", s.CreateUser(ctx, acs.User{ID: "u1", CreatedAt: base}))
	th.set("PutItem", 0)
	must(t, s.CreateUser(ctx, acs.User{ID: "u1", CreatedAt: base}))
	if _, err := ref.GetUser(ctx, "u1"); err != nil {
		t.Fatalf("a reported create is missing: %v", err)
	}

	// A throttled transaction (conversation and counters).
	conv := acs.Conversation{ID: "c1", OwnerID: "u1", SandboxID: "s1", CreatedAt: base, UpdatedAt: base}
	th.set("TransactWriteItems", 400)
	unavailable("throttled CreateConversation", s.CreateConversation(ctx, conv))
	if _, err := ref.GetConversation(ctx, "c1"); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("a failed create was stored: %v", err)
	}
	if n, _ := ref.CountConversations(ctx, "u1", acs.ConversationFilter{}); n != 0 {
		t.Fatalf("a failed create counted: %d", n)
	}
	th.set("TransactWriteItems", 0)
	must(t, s.CreateConversation(ctx, conv))
	if n, _ := ref.CountConversations(ctx, "u1", acs.ConversationFilter{}); n != 1 {
		t.Fatalf("count %d after a reported create", n)
	}

	// A slot reservation (conditional put) that fails stores nothing.
	must(t, ref.CreateSandbox(ctx, acs.Sandbox{ID: "s1", OwnerID: "u1", Status: acs.SandboxRunning, CreatedAt: base}))
	th.set("PutItem", 400)
	_, err = s.UpdateSandbox(ctx, "s1", func(sb *acs.Sandbox) error { return sb.Reserve("c1", 20) })
	unavailable("throttled reservation", err)
	if sb, _ := ref.GetSandbox(ctx, "s1"); sb.HasSlot("c1") {
		t.Fatal("a failed reservation was stored")
	}
	th.set("PutItem", 0)
	_, err = s.UpdateSandbox(ctx, "s1", func(sb *acs.Sandbox) error { return sb.Reserve("c1", 20) })
	must(t, err)
	if sb, _ := ref.GetSandbox(ctx, "s1"); !sb.HasSlot("c1") {
		t.Fatal("a reported reservation is missing")
	}

	// Events.
	evs := []acs.StoredEvent{{ID: "e1", Kind: "MessageEvent", Timestamp: base, JSON: []byte(`{"id":"e1"}`)}}
	th.set("TransactWriteItems", 400)
	_, err = s.PutEvents(ctx, "c1", evs)
	unavailable("throttled PutEvents", err)
	if n, _ := ref.CountEvents(ctx, "c1", acs.EventFilter{}); n != 0 {
		t.Fatalf("%d events stored by a failed put", n)
	}
	th.set("TransactWriteItems", 0)
	if n, err := s.PutEvents(ctx, "c1", evs); err != nil || n != 1 {
		t.Fatalf("put events: %d, %v", n, err)
	}
	if n, _ := ref.CountEvents(ctx, "c1", acs.EventFilter{}); n != 1 {
		t.Fatalf("%d events after a reported put", n)
	}

	// Reads.
	th.set("GetItem", 400)
	_, err = s.GetConversation(ctx, "c1")
	unavailable("throttled GetItem", err)
	_, err = s.UpdateStartTask(ctx, "t1", func(*acs.StartTask) error { return nil })
	unavailable("throttled read of an update", err)
	th.set("GetItem", 0)
	th.set("Query", 500)
	_, err = s.SearchConversations(ctx, "u1", acs.ConversationFilter{}, acs.ListOptions{})
	unavailable("failing Query", err)
	_, err = s.CountEvents(ctx, "c1", acs.EventFilter{})
	unavailable("failing count", err)
	th.set("Query", 0)
	th.set("BatchGetItem", 400)
	_, err = s.GetEvents(ctx, "c1", []string{"e1"})
	unavailable("throttled BatchGetItem", err)
	th.set("BatchGetItem", 0)

	// A write carried out whose answer is lost is retried by the SDK: the
	// store recognises its own write (no conflict, fn not applied twice).
	th.set("PutItem", lost)
	must(t, s.CreateUser(ctx, acs.User{ID: "u2", CreatedAt: base}))
	if err := s.CreateUser(ctx, acs.User{ID: "u2", CreatedAt: base}); !errors.Is(err, acs.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	must(t, ref.CreateStartTask(ctx, acs.StartTask{ID: "t1", OwnerID: "u1", Status: acs.TaskWorking, CreatedAt: base, UpdatedAt: base}))
	th.set("PutItem", lost)
	tk, err := s.UpdateStartTask(ctx, "t1", func(tk *acs.StartTask) error { tk.Attempts++; return nil })
	must(t, err)
	if got, _ := ref.GetStartTask(ctx, "t1"); got.Attempts != 1 || tk.Attempts != 1 {
		t.Fatalf("an update retried by the SDK applied %d times (returned %d)", got.Attempts, tk.Attempts)
	}
	th.set("TransactWriteItems", lost)
	must(t, s.CreateConversation(ctx, acs.Conversation{ID: "c2", OwnerID: "u1", CreatedAt: base, UpdatedAt: base}))
	if n, _ := ref.CountConversations(ctx, "u1", acs.ConversationFilter{}); n != 2 {
		t.Fatalf("count %d after a create retried by the SDK", n)
	}

	// Nothing listening: a network failure.
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	dc, _ := client(t, downURL, 2)
	_, err = dynamostore.New(dynamostore.Options{Client: dc, Table: table}).GetUser(ctx, "u1")
	unavailable("unreachable endpoint", err)

	// A deadline.
	dctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-dctx.Done()
	_, err = s.GetUser(dctx, "u1")
	unavailable("expired deadline", err)
}

// clock is a settable Now.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestExpiredRecordsAreIgnored(t *testing.T) {
	c, _ := client(t, endpoint(t), 3)
	var clk clock
	start := time.Now()
	clk.set(start)
	table := tableName()
	s := newTable(t, c, dynamostore.Options{Table: table, Now: clk.now})

	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	must(t, err)
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != dynamostore.TTLAttribute ||
		d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("time to live %+v", ttl.TimeToLiveDescription)
	}

	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	mk := func(id string, i int, status acs.StartTaskStatus) acs.StartTask {
		return acs.StartTask{ID: id, OwnerID: "u1", Status: status, ConversationID: "c-" + id,
			CreatedAt: base.Add(time.Duration(i) * time.Second), UpdatedAt: base.Add(time.Duration(i) * time.Second)}
	}
	must(t, s.CreateStartTask(ctx, mk("working", 1, acs.TaskWorking)))
	must(t, s.CreateStartTask(ctx, mk("ready", 2, acs.TaskReady)))
	must(t, s.CreateStartTask(ctx, mk("failing", 3, acs.TaskWorking)))
	_, err = s.UpdateStartTask(ctx, "failing", func(tk *acs.StartTask) error { tk.Fail("no", base); return nil })
	must(t, err)

	raw, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "TASK#ready"}, "sk": &types.AttributeValueMemberS{Value: "#"}}})
	must(t, err)
	exp, ok := raw.Item[dynamostore.TTLAttribute].(*types.AttributeValueMemberN)
	if want := fmt.Sprint(start.Add(dynamostore.TaskRetention).Unix()); !ok || exp.Value != want {
		t.Fatalf("expires_at %v, want %s", raw.Item[dynamostore.TTLAttribute], want)
	}
	raw, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "TASK#working"}, "sk": &types.AttributeValueMemberS{Value: "#"}}})
	must(t, err)
	if _, ok := raw.Item[dynamostore.TTLAttribute]; ok {
		t.Fatal("a working task expires")
	}

	for _, m := range []string{"m1", "m2"} {
		_, err := s.AddPendingMessage(ctx, acs.PendingMessage{ID: m, Key: "k", Content: []byte(`{}`), CreatedAt: base}, 2)
		must(t, err)
	}
	_, err = s.AddPendingMessage(ctx, acs.PendingMessage{ID: "m3", Key: "k", Content: []byte(`{}`)}, 2)
	if !errors.Is(err, acs.ErrCapacity) {
		t.Fatalf("third message: %v", err)
	}

	list := func() string {
		t.Helper()
		page, err := s.SearchStartTasks(ctx, "u1", acs.StartTaskFilter{}, acs.SortCreatedAt, acs.ListOptions{})
		must(t, err)
		var ids []string
		for _, tk := range page.Items {
			ids = append(ids, tk.ID)
		}
		return fmt.Sprint(ids)
	}
	if got := list(); got != "[working ready failing]" {
		t.Fatalf("before expiry: %s", got)
	}

	clk.advance(dynamostore.TaskRetention + time.Hour) // past both retentions
	if got := list(); got != "[working]" {
		t.Fatalf("after expiry: %s", got)
	}
	if n, _ := s.CountStartTasks(ctx, "u1", acs.StartTaskFilter{}); n != 1 {
		t.Fatalf("count after expiry %d", n)
	}
	for _, id := range []string{"ready", "failing"} {
		if _, err := s.GetStartTask(ctx, id); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("expired %s: %v", id, err)
		}
		if _, err := s.UpdateStartTask(ctx, id, func(*acs.StartTask) error { return nil }); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("update of expired %s: %v", id, err)
		}
		if err := s.DeleteStartTask(ctx, id); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("delete of expired %s: %v", id, err)
		}
	}
	if _, err := s.GetStartTask(ctx, "working"); err != nil {
		t.Fatal(err)
	}
	// An expired id can be used again.
	must(t, s.CreateStartTask(ctx, mk("ready", 9, acs.TaskWorking)))

	msgs, err := s.ListPendingMessages(ctx, "k")
	must(t, err)
	if len(msgs) != 0 {
		t.Fatalf("expired messages listed: %+v", msgs)
	}
	pos, err := s.AddPendingMessage(ctx, acs.PendingMessage{ID: "m3", Key: "k", Content: []byte(`{}`)}, 2)
	must(t, err)
	if pos != 1 {
		t.Fatalf("after expiry the new message is at %d", pos)
	}
	msgs, _ = s.ListPendingMessages(ctx, "k")
	if len(msgs) != 1 || msgs[0].ID != "m3" {
		t.Fatalf("queue %+v", msgs)
	}
}

func TestSandboxesByStatus(t *testing.T) {
	c, _ := client(t, endpoint(t), 3)
	s := newTable(t, c, dynamostore.Options{})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, st := range []acs.SandboxStatus{acs.SandboxRunning, acs.SandboxPaused, acs.SandboxRunning, acs.SandboxError, acs.SandboxRunning} {
		must(t, s.CreateSandbox(ctx, acs.Sandbox{ID: fmt.Sprint("s", i), OwnerID: "u1", Status: st,
			CreatedAt: base.Add(time.Duration(i) * time.Second)}))
	}
	must(t, s.CreateSandbox(ctx, acs.Sandbox{ID: "f0", OwnerID: "u2", Status: acs.SandboxRunning, CreatedAt: base}))
	list := func(st acs.SandboxStatus, limit int) []string {
		var ids []string
		opts := acs.ListOptions{Limit: limit}
		for {
			page, err := s.ListSandboxesByStatus(ctx, "u1", st, opts)
			must(t, err)
			for _, sb := range page.Items {
				ids = append(ids, sb.ID)
			}
			if page.Next == "" {
				return ids
			}
			opts.PageToken = page.Next
		}
	}
	if got := fmt.Sprint(list(acs.SandboxRunning, 1)); got != "[s4 s2 s0]" {
		t.Fatalf("running: %s", got)
	}
	_, err := s.UpdateSandbox(ctx, "s2", func(sb *acs.Sandbox) error { sb.Status = acs.SandboxPaused; return nil })
	must(t, err)
	if got := fmt.Sprint(list(acs.SandboxPaused, 100)); got != "[s2 s1]" {
		t.Fatalf("paused: %s", got)
	}
	if got := fmt.Sprint(list(acs.SandboxMissing, 2)); got != "[]" {
		t.Fatalf("missing: %s", got)
	}
	page, err := s.ListSandboxesByStatus(ctx, "u1", acs.SandboxRunning, acs.ListOptions{Limit: 1})
	must(t, err)
	if _, err := s.ListSandboxesByStatus(ctx, "u1", acs.SandboxPaused, acs.ListOptions{PageToken: page.Next}); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("a token of another status: %v", err)
	}
}

func TestConsumedCapacity(t *testing.T) {
	c, _ := client(t, endpoint(t), 3)
	s := newTable(t, c, dynamostore.Options{})
	if r, w := s.Consumed(); r != 0 || w != 0 {
		t.Fatalf("fresh store consumed %v %v", r, w)
	}
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	must(t, s.CreateUser(ctx, acs.User{ID: "u1", CreatedAt: base}))
	_, w1 := s.Consumed()
	if w1 <= 0 {
		t.Fatalf("a put consumed %v WCU", w1)
	}
	must(t, s.CreateConversation(ctx, acs.Conversation{ID: "c1", OwnerID: "u1", CreatedAt: base, UpdatedAt: base}))
	if _, w2 := s.Consumed(); w2 <= w1 {
		t.Fatalf("a transaction consumed nothing: %v then %v", w1, w2)
	}
	_, err := s.GetUser(ctx, "u1")
	must(t, err)
	_, err = s.SearchConversations(ctx, "u1", acs.ConversationFilter{}, acs.ListOptions{})
	must(t, err)
	if r, _ := s.Consumed(); r <= 0 {
		t.Fatalf("reads consumed %v RCU", r)
	}
	s.ResetConsumed()
	if r, w := s.Consumed(); r != 0 || w != 0 {
		t.Fatalf("after reset %v %v", r, w)
	}
}

// TestCapacityReport logs the capacity units of the hot paths: a
// conversation create, a search page of 100 conversations and an events
// page of 100.
func TestCapacityReport(t *testing.T) {
	c, _ := client(t, endpoint(t), 3)
	s := newTable(t, c, dynamostore.Options{})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	repo, branch, provider, model, trigger := "acme/widgets", "main", "github", "model-x", "gui"
	conv := func(i int) acs.Conversation {
		title := fmt.Sprintf("Fix the parser #%d", i)
		created := base.Add(time.Duration(i) * time.Minute)
		return acs.Conversation{ID: fmt.Sprintf("%032d", i), OwnerID: "u1", SandboxID: fmt.Sprintf("sb-%d", i%5),
			SelectedRepository: &repo, SelectedBranch: &branch, GitProvider: &provider, Title: &title, Trigger: &trigger,
			LLMModel: &model, Tags: map[string]string{"team": "core"}, WorkingDir: "/workspace/project",
			ProjectDir: "/workspace/project/widgets", ExecutionStatus: "idle", ExecutionStatusAt: created,
			Metrics:     []byte(`{"accumulated_cost":0.42,"accumulated_token_usage":{"prompt_tokens":1200,"completion_tokens":300}}`),
			StartTaskID: fmt.Sprintf("task%028d", i), CreatedAt: created, UpdatedAt: created}
	}
	for i := range 150 {
		must(t, s.CreateConversation(ctx, conv(i)))
	}
	var evs []acs.StoredEvent
	for i := range 150 {
		id := fmt.Sprintf("ev-%04d", i)
		js := fmt.Sprintf(`{"id":%q,"kind":"ActionEvent","source":"agent","timestamp":"%s","action":{"kind":"ExecuteBashAction","command":"go test ./... -run TestSomething -count=1"},"thought":[{"type":"text","text":"%s"}]}`,
			id, base.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), strings.Repeat("thinking ", 40))
		evs = append(evs, acs.StoredEvent{ID: id, Kind: "ActionEvent", Source: "agent", Timestamp: base.Add(time.Duration(i) * time.Second), JSON: []byte(js)})
	}

	// DynamoDB Local's figures for TransactWriteItems do not grow with the
	// number of items (it reports one item's, times four); cancelled
	// transactions report nothing (an error carries no consumed capacity).
	measure := func(what string, f func()) {
		s.ResetConsumed()
		f()
		r, w := s.Consumed()
		t.Logf("%-56s RCU %6.1f  WCU %6.1f", what, r, w)
	}
	measure("CreateConversation (record + counters, transaction)", func() { must(t, s.CreateConversation(ctx, conv(1000))) })
	measure("UpdateConversation (read + conditional put)", func() {
		_, err := s.UpdateConversation(ctx, conv(1000).ID, func(c *acs.Conversation) error { c.ExecutionStatus = "running"; return nil })
		must(t, err)
	})
	measure("SearchConversations, a page of 100", func() {
		page, err := s.SearchConversations(ctx, "u1", acs.ConversationFilter{}, acs.ListOptions{Limit: 100})
		must(t, err)
		if len(page.Items) != 100 || page.Next == "" {
			t.Fatalf("page of %d", len(page.Items))
		}
	})
	measure("SearchConversations, title filter, a page of 10", func() {
		_, err := s.SearchConversations(ctx, "u1", acs.ConversationFilter{TitleContains: "#1"}, acs.ListOptions{Limit: 10})
		must(t, err)
	})
	measure("CountConversations, unfiltered (counter item)", func() {
		n, err := s.CountConversations(ctx, "u1", acs.ConversationFilter{})
		must(t, err)
		if n != 151 {
			t.Fatalf("count %d", n)
		}
	})
	measure(fmt.Sprintf("PutEvents, %d events of ~%d bytes", len(evs[:100]), len(evs[0].JSON)), func() {
		n, err := s.PutEvents(ctx, "c1", evs[:100])
		must(t, err)
		if n != 100 {
			t.Fatalf("added %d", n)
		}
	})
	must2 := func(_ int, err error) { must(t, err) }
	must2(s.PutEvents(ctx, "c1", evs[100:]))
	measure("PutEvents, the same 100 again (no-op)", func() { must2(s.PutEvents(ctx, "c1", evs[:100])) })
	measure("SearchEvents, a page of 100", func() {
		page, err := s.SearchEvents(ctx, "c1", acs.EventQuery{Limit: 100})
		must(t, err)
		if len(page.Items) != 100 || page.Next == "" {
			t.Fatalf("page of %d", len(page.Items))
		}
	})
	measure("GetEvents, 10 ids", func() {
		must2(0, func() error {
			_, err := s.GetEvents(ctx, "c1", []string{"ev-0001", "ev-0002", "ev-0003", "ev-0004", "ev-0005", "ev-0006", "ev-0007", "ev-0008", "ev-0009", "ev-0010"})
			return err
		}())
	})
	measure("CountEvents, kind filter", func() { must2(s.CountEvents(ctx, "c1", acs.EventFilter{Kind: "ActionEvent"})) })
}
