package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// Options configure a Store.
type Options struct {
	// Client is configured by the caller (endpoint, credentials, retryer).
	Client *dynamodb.Client
	// Table is the one table of the single-table design.
	Table string
	// Blobs keeps events too large for an item (nil: such events are
	// refused with acs.ErrInvalid).
	Blobs acs.Blobs
	// Now is the clock of TTL computation and expiry checks (default
	// time.Now).
	Now func() time.Time
	// BodyScanItems is how many items a search with a body filter examines
	// per page (default DefaultBodyScanItems); a page that reaches it ends
	// early, with a token.
	BodyScanItems int
}

// Store is an acs.Store on one DynamoDB table (see the package
// documentation for the design).
type Store struct {
	c     *dynamodb.Client
	table string
	blobs acs.Blobs
	now   func() time.Time

	bodyScan int
	indexed  sync.Map // events partition → whether its text index is complete (bool)
	indexedN atomic.Int64

	mu           sync.Mutex
	rcu, wcu     float64
	maxAttempts  int
	backoffBase  time.Duration
	backoffLimit time.Duration
}

var _ acs.Store = (*Store)(nil)

// New returns a Store on o.Table. The table must exist (CreateTable, or the
// infrastructure with TableDefinition).
func New(o Options) *Store {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	bodyScan := o.BodyScanItems
	if bodyScan <= 0 {
		bodyScan = DefaultBodyScanItems
	}
	return &Store{c: o.Client, table: o.Table, blobs: o.Blobs, now: now, bodyScan: bodyScan,
		maxAttempts: 100, backoffBase: 2 * time.Millisecond, backoffLimit: 100 * time.Millisecond}
}

// Consumed returns the read and write capacity units consumed so far, as
// DynamoDB reported them (indexes and transactions included).
func (s *Store) Consumed() (read, write float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rcu, s.wcu
}

// ResetConsumed sets the consumed capacity counters back to zero.
func (s *Store) ResetConsumed() {
	s.mu.Lock()
	s.rcu, s.wcu = 0, 0
	s.mu.Unlock()
}

func (s *Store) account(write bool, ccs ...types.ConsumedCapacity) {
	var n float64
	for _, cc := range ccs {
		switch {
		case cc.CapacityUnits != nil:
			n += *cc.CapacityUnits
		case write && cc.WriteCapacityUnits != nil:
			n += *cc.WriteCapacityUnits
		case !write && cc.ReadCapacityUnits != nil:
			n += *cc.ReadCapacityUnits
		}
	}
	s.mu.Lock()
	if write {
		s.wcu += n
	} else {
		s.rcu += n
	}
	s.mu.Unlock()
}

func one(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}

// ---- attribute names

const (
	aPK      = "pk"
	aSK      = "sk"
	aGSI1PK  = "gsi1pk"
	aGSI1SK  = "gsi1sk"
	aGSI2PK  = "gsi2pk"
	aGSI2SK  = "gsi2sk"
	aGSI3PK  = "gsi3pk"
	aGSI3SK  = "gsi3sk"
	aGSI4PK  = "gsi4pk"
	aGSI4SK  = "gsi4sk"
	aData    = "d" // the record's JSON (binary)
	aVersion = "v" // optimistic-concurrency version
	aWrite   = "w" // random token of the write that stored the item
	aExpires = "expires_at"

	idxGSI1 = "gsi1"
	idxGSI2 = "gsi2"
	idxGSI3 = "gsi3"
	idxGSI4 = "gsi4"
)

// TTLAttribute is the table's time-to-live attribute (epoch seconds).
const TTLAttribute = aExpires

type item = map[string]types.AttributeValue

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func bv(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }
func nv(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func key(pk, sk string) item { return item{aPK: sv(pk), aSK: sv(sk)} }

// storable reports whether DynamoDB accepts a key: valid UTF-8 strings of at
// most 2048 (partition) and 1024 (sort) bytes. Reads of other keys find
// nothing; writes are acs.ErrInvalid.
func storable(pk, sk string) bool {
	return pk != "" && sk != "" && len(pk) <= 2048 && len(sk) <= 1024 && utf8.ValidString(pk) && utf8.ValidString(sk)
}

func str(it item, a string) string {
	if v, ok := it[a].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(it item, a string) int64 {
	if v, ok := it[a].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func bin(it item, a string) []byte {
	if v, ok := it[a].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

// setS sets a string attribute, leaving empty strings out (key attributes
// cannot be empty, and absent attributes match no filter).
func setS(it item, a, v string) {
	if v != "" {
		it[a] = sv(v)
	}
}

// decode decodes the record in the data attribute of it into v, a pointer to
// a domain record (see storerecord).
func decode(it item, v any, what, id string) error {
	if err := storerecord.Unmarshal(bin(it, aData), v); err != nil {
		return fmt.Errorf("decode %s %s: %w", what, id, err)
	}
	return nil
}

func writeToken() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// ---- time keys

var (
	maxNanoTime = time.Unix(0, math.MaxInt64)
	minNanoTime = time.Unix(0, math.MinInt64)
)

// timeKey is a fixed-width, lexicographically ordered encoding of an instant
// (nanoseconds, clamped to the years 1678..2262): 16 hex digits.
func timeKey(t time.Time) string {
	var u uint64
	switch {
	case t.After(maxNanoTime):
		u = math.MaxUint64
	case t.Before(minNanoTime):
		u = 0
	default:
		u = uint64(t.UnixNano()) + 1<<63
	}
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[u&0xf]
		u >>= 4
	}
	return string(b[:])
}

// timeIDKey orders by time, then id.
func timeIDKey(t time.Time, id string) string { return timeKey(t) + "#" + id }

func validTimeIDKey(k string) bool {
	if len(k) < 18 || k[16] != '#' {
		return false
	}
	for i := 0; i < 16; i++ {
		if c := k[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ---- errors

// transientCodes are the API errors worth retrying later (after the SDK's
// own retries): throttling, server faults, transaction contention.
var transientCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"InternalFailure":                        true,
	"ServiceUnavailable":                     true,
	"ServiceUnavailableException":            true,
	"TransactionConflictException":           true,
	"TransactionInProgressException":         true,
	"ReplicatedWriteConflictException":       true,
	"LimitExceededException":                 true,
	"RequestTimeout":                         true,
	"RequestTimeoutException":                true,
}

var transientReasons = map[string]bool{
	"TransactionConflict":           true,
	"ThrottlingError":               true,
	"ProvisionedThroughputExceeded": true,
}

// fail wraps an SDK error for op: throttling, server faults, transaction
// contention, network failures and timeouts wrap acs.ErrUnavailable; an item
// over the size limit wraps acs.ErrInvalid. The SDK error stays in the chain
// (errors.As finds the DynamoDB exception).
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range cancelReasons(err) {
			if transientReasons[r] {
				return fmt.Errorf("dynamodb %s: %w: %w", op, err, acs.ErrUnavailable)
			}
		}
		for _, r := range cancelReasons(err) {
			if r == "ItemCollectionSizeLimitExceeded" {
				return fmt.Errorf("dynamodb %s: %w: %w", op, err, acs.ErrCapacity)
			}
		}
		return fmt.Errorf("dynamodb %s: %w", op, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		var re *awshttp.ResponseError
		switch {
		case transientCodes[code] || ae.ErrorFault() == smithy.FaultServer ||
			errors.As(err, &re) && re.HTTPStatusCode() >= 500:
			return fmt.Errorf("dynamodb %s: %w: %w", op, err, acs.ErrUnavailable)
		case code == "ItemCollectionSizeLimitExceededException":
			return fmt.Errorf("dynamodb %s: %w: %w", op, err, acs.ErrCapacity)
		case code == "ValidationException" && strings.Contains(strings.ToLower(ae.ErrorMessage()), "size"):
			return fmt.Errorf("dynamodb %s: %w: %w", op, err, acs.ErrInvalid)
		}
		return fmt.Errorf("dynamodb %s: %w", op, err)
	}
	// Not an answer from DynamoDB: a network failure, a timeout, a
	// cancelled context, an exhausted retry quota, an unreadable response.
	return fmt.Errorf("dynamodb %s: %w: %w", op, err, acs.ErrUnavailable)
}

// cancelReasons returns a cancelled transaction's reason codes, one per
// item ("None" for the items that did not cause it); nil when unknown.
func cancelReasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	if len(tce.CancellationReasons) > 0 {
		out := make([]string, len(tce.CancellationReasons))
		for i, r := range tce.CancellationReasons {
			out[i] = aws.ToString(r.Code)
			if out[i] == "" {
				out[i] = "None"
			}
		}
		return out
	}
	// "Transaction cancelled, please refer cancellation reasons for
	// specific reasons [None, ConditionalCheckFailed]"
	msg := tce.ErrorMessage()
	i, j := strings.LastIndexByte(msg, '['), strings.LastIndexByte(msg, ']')
	if i < 0 || j < i {
		return nil
	}
	var out []string
	for _, r := range strings.Split(msg[i+1:j], ",") {
		out = append(out, strings.TrimSpace(r))
	}
	return out
}

func isCondFailed(err error) bool {
	var e *types.ConditionalCheckFailedException
	return errors.As(err, &e)
}

// contended reports a write that lost to a concurrent transaction: worth
// retrying at once (with backoff).
func contended(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "TransactionConflictException" {
		return true
	}
	for _, r := range cancelReasons(err) {
		if r == "TransactionConflict" {
			return true
		}
	}
	return false
}

// lostRace reports a transaction cancelled by a concurrent change: a
// failed condition or a conflict (read again and retry).
func lostRace(err error) bool {
	if contended(err) {
		return true
	}
	for _, r := range cancelReasons(err) {
		if r == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}

// errRetry asks retry for another attempt.
var errRetry = errors.New("retry")

// retry runs attempt until it returns something other than errRetry, with
// jittered exponential backoff, at most s.maxAttempts times (then the store
// is too contended: acs.ErrUnavailable).
func (s *Store) retry(ctx context.Context, what string, attempt func() error) error {
	for i := 0; ; i++ {
		err := attempt()
		if !errors.Is(err, errRetry) {
			return err
		}
		if i+1 >= s.maxAttempts {
			return fmt.Errorf("%s: still contended after %d attempts: %w", what, i+1, acs.ErrUnavailable)
		}
		if err := s.sleep(ctx, i); err != nil {
			return fmt.Errorf("%s: %w: %w", what, err, acs.ErrUnavailable)
		}
	}
}

func (s *Store) sleep(ctx context.Context, attempt int) error {
	d := s.backoffBase << min(attempt, 20)
	if d > s.backoffLimit || d <= 0 {
		d = s.backoffLimit
	}
	d = d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func notFound(what, id string) error { return fmt.Errorf("%s %s: %w", what, id, acs.ErrNotFound) }

// ---- calls (each asks for the consumed capacity and accounts it)

const total = types.ReturnConsumedCapacityTotal

// getItem reads one item with a strongly consistent read; nil when absent.
func (s *Store) getItem(ctx context.Context, k item) (item, error) {
	if !storable(str(k, aPK), str(k, aSK)) {
		return nil, nil
	}
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: k,
		ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: total})
	if err != nil {
		return nil, fail("GetItem", err)
	}
	s.account(false, one(out.ConsumedCapacity)...)
	return out.Item, nil
}

func (s *Store) putItem(ctx context.Context, in *dynamodb.PutItemInput) error {
	in.TableName, in.ReturnConsumedCapacity = &s.table, total
	out, err := s.c.PutItem(ctx, in)
	if err != nil {
		return fail("PutItem", err)
	}
	s.account(true, one(out.ConsumedCapacity)...)
	return nil
}

func (s *Store) deleteItem(ctx context.Context, in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
	in.TableName, in.ReturnConsumedCapacity = &s.table, total
	out, err := s.c.DeleteItem(ctx, in)
	if err != nil {
		return nil, fail("DeleteItem", err)
	}
	s.account(true, one(out.ConsumedCapacity)...)
	return out, nil
}

func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) error {
	for i := range items {
		switch {
		case items[i].Put != nil:
			items[i].Put.TableName = &s.table
		case items[i].Update != nil:
			items[i].Update.TableName = &s.table
		case items[i].Delete != nil:
			items[i].Delete.TableName = &s.table
		case items[i].ConditionCheck != nil:
			items[i].ConditionCheck.TableName = &s.table
		}
	}
	out, err := s.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items, ReturnConsumedCapacity: total})
	if err != nil {
		return fail("TransactWriteItems", err)
	}
	s.account(true, out.ConsumedCapacity...)
	return nil
}

func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	in.TableName, in.ReturnConsumedCapacity = &s.table, total
	out, err := s.c.Query(ctx, in)
	if err != nil {
		return nil, fail("Query", err)
	}
	s.account(false, one(out.ConsumedCapacity)...)
	return out, nil
}

// batchGet reads items by key (strongly consistent), 100 keys a request,
// retrying unprocessed keys. The result maps pk+"\x00"+sk to the item;
// absent items are missing from it.
func (s *Store) batchGet(ctx context.Context, keys []item, projection ...string) (map[string]item, error) {
	out := map[string]item{}
	seen := map[string]bool{}
	var pending []item
	for _, k := range keys {
		id := str(k, aPK) + "\x00" + str(k, aSK)
		if !seen[id] && storable(str(k, aPK), str(k, aSK)) {
			seen[id] = true
			pending = append(pending, item{aPK: k[aPK], aSK: k[aSK]})
		}
	}
	var names map[string]string
	var proj *string
	if len(projection) > 0 {
		names = map[string]string{}
		var ps []string
		for _, p := range append([]string{aPK, aSK}, projection...) {
			names["#"+p] = p
			ps = append(ps, "#"+p)
		}
		proj = aws.String(strings.Join(ps, ", "))
	}
	for attempt := 0; len(pending) > 0; {
		n := min(len(pending), 100)
		req := map[string]types.KeysAndAttributes{s.table: {Keys: pending[:n], ConsistentRead: aws.Bool(true),
			ProjectionExpression: proj, ExpressionAttributeNames: names}}
		pending = pending[n:]
		res, err := s.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req, ReturnConsumedCapacity: total})
		if err != nil {
			return nil, fail("BatchGetItem", err)
		}
		s.account(false, res.ConsumedCapacity...)
		for _, it := range res.Responses[s.table] {
			out[str(it, aPK)+"\x00"+str(it, aSK)] = it
		}
		if un := res.UnprocessedKeys[s.table].Keys; len(un) > 0 {
			if attempt++; attempt >= 10 {
				return nil, fmt.Errorf("dynamodb BatchGetItem: %d keys left unprocessed: %w", len(un)+len(pending), acs.ErrUnavailable)
			}
			if err := s.sleep(ctx, attempt+3); err != nil {
				return nil, fail("BatchGetItem", err)
			}
			pending = append(un, pending...)
		}
	}
	return out, nil
}

// batchDelete deletes items by key, 25 a request, retrying unprocessed ones.
func (s *Store) batchDelete(ctx context.Context, keys []item) error {
	pending := keys
	for attempt := 0; len(pending) > 0; {
		n := min(len(pending), 25)
		reqs := make([]types.WriteRequest, n)
		for i, k := range pending[:n] {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item{aPK: k[aPK], aSK: k[aSK]}}}
		}
		pending = pending[n:]
		res, err := s.c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{s.table: reqs}, ReturnConsumedCapacity: total})
		if err != nil {
			return fail("BatchWriteItem", err)
		}
		s.account(true, res.ConsumedCapacity...)
		if un := res.UnprocessedItems[s.table]; len(un) > 0 {
			if attempt++; attempt >= 10 {
				return fmt.Errorf("dynamodb BatchWriteItem: %d deletes left unprocessed: %w", len(un)+len(pending), acs.ErrUnavailable)
			}
			if err := s.sleep(ctx, attempt+3); err != nil {
				return fail("BatchWriteItem", err)
			}
			for _, w := range un {
				pending = append(pending, w.DeleteRequest.Key)
			}
		}
	}
	return nil
}

// ---- expressions

// expr builds expression attribute names and values. Every attribute name
// goes through a placeholder (#name), so reserved words never matter.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of attribute a (names are [a-z0-9_]).
func (e *expr) n(a string) string {
	e.names["#"+a] = a
	return "#" + a
}

// v returns a placeholder for value x.
func (e *expr) v(x types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = x
	return p
}

func (e *expr) nameMap() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valueMap() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

func (e *expr) notExpired(now time.Time) string {
	return fmt.Sprintf("(attribute_not_exists(%s) OR %s > %s)", e.n(aExpires), e.n(aExpires), e.v(nv(now.Unix())))
}

func (s *Store) expired(it item) bool {
	exp := num(it, aExpires)
	return exp != 0 && exp <= s.now().Unix()
}

// ---- range queries

// rangeQuery is a Query of one partition of the table or of an index, over
// an inclusive range of its sort key ("" bounds: unbounded), with an
// optional filter built on e.
type rangeQuery struct {
	index      string
	pkAttr     string
	skAttr     string
	pk         string
	lo, hi     string
	desc       bool
	e          *expr
	filter     []string // ANDed
	consistent bool
	projection []string
}

func (q *rangeQuery) input() (*dynamodb.QueryInput, bool) {
	e := q.e
	if e == nil {
		e = newExpr()
	}
	if q.lo != "" && q.hi != "" && q.lo > q.hi || !storable(q.pk, "x") {
		return nil, false
	}
	kc := e.n(q.pkAttr) + " = " + e.v(sv(q.pk))
	switch {
	case q.lo != "" && q.hi != "":
		kc += fmt.Sprintf(" AND %s BETWEEN %s AND %s", e.n(q.skAttr), e.v(sv(q.lo)), e.v(sv(q.hi)))
	case q.lo != "":
		kc += fmt.Sprintf(" AND %s >= %s", e.n(q.skAttr), e.v(sv(q.lo)))
	case q.hi != "":
		kc += fmt.Sprintf(" AND %s <= %s", e.n(q.skAttr), e.v(sv(q.hi)))
	}
	in := &dynamodb.QueryInput{KeyConditionExpression: &kc, ScanIndexForward: aws.Bool(!q.desc)}
	if q.index != "" {
		in.IndexName = aws.String(q.index)
	}
	if len(q.filter) > 0 {
		in.FilterExpression = aws.String(strings.Join(q.filter, " AND "))
	}
	if q.consistent {
		in.ConsistentRead = aws.Bool(true)
	}
	if len(q.projection) > 0 {
		var ps []string
		for _, p := range q.projection {
			ps = append(ps, e.n(p))
		}
		in.ProjectionExpression = aws.String(strings.Join(ps, ", "))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	return in, true
}

// collect returns up to limit+1 items of q in order (limit < 0: all),
// leaving out the one whose sort key is skip (a page token's last item).
func (s *Store) collect(ctx context.Context, q *rangeQuery, limit int, skip string) ([]item, error) {
	in, ok := q.input()
	if !ok {
		return nil, nil
	}
	var out []item
	batch := 0
	for {
		if limit >= 0 {
			need := limit + 1 - len(out)
			if skip != "" {
				need++
			}
			if len(q.filter) > 0 {
				// A filter drops items after they are read: read twice as
				// many each round, up to 1000.
				batch = min(max(need, 2*batch), 1000)
			} else {
				batch = need
			}
			in.Limit = aws.Int32(int32(batch))
		}
		res, err := s.query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, it := range res.Items {
			if skip != "" && str(it, q.skAttr) == skip {
				continue
			}
			out = append(out, it)
			if limit >= 0 && len(out) > limit {
				return out, nil
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// count counts the items of q (Select COUNT, every page).
func (s *Store) count(ctx context.Context, q *rangeQuery) (int, error) {
	in, ok := q.input()
	if !ok {
		return 0, nil
	}
	in.Select = types.SelectCount
	n := 0
	for {
		res, err := s.query(ctx, in)
		if err != nil {
			return 0, err
		}
		n += int(res.Count)
		if len(res.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// ---- page tokens

// Page tokens are base64url of a tag naming the listing (and its order),
// the partition listed, a NUL and the sort key of the last item returned: a
// token only works for the listing and partition that issued it, and stays
// valid when that item is deleted.
const (
	tagConversations = 'c'
	tagSandboxes     = 's'
	tagAllSandboxes  = 'S'
	tagSandboxStatus = 'r'
	tagEvents        = 'e'
	tagEventsDesc    = 'E'
	tagTasksCreated  = 'a'
	tagTasksCreatedD = 'A'
	tagTasksUpdated  = 'u'
	tagTasksUpdatedD = 'U'
)

var base64URL = base64.RawURLEncoding

func encodeToken(tag byte, partition, last string) string {
	b := make([]byte, 0, 2+len(partition)+len(last))
	b = append(b, tag)
	b = append(b, partition...)
	b = append(b, 0)
	b = append(b, last...)
	return base64URL.EncodeToString(b)
}

// decodeToken returns the last sort key a token names ("" for no token);
// ErrInvalid unless it was issued for tag and partition and valid accepts
// the key.
func decodeToken(tok string, tag byte, partition string, valid func(string) bool) (string, error) {
	if tok == "" {
		return "", nil
	}
	raw, err := base64URL.DecodeString(tok)
	bad := fmt.Errorf("page token: %w", acs.ErrInvalid)
	if err != nil || len(raw) < 3 || raw[0] != tag {
		return "", bad
	}
	rest := raw[1:]
	if len(rest) <= len(partition) || string(rest[:len(partition)]) != partition || rest[len(partition)] != 0 {
		return "", bad
	}
	last := string(rest[len(partition)+1:])
	if last == "" || valid != nil && !valid(last) {
		return "", bad
	}
	return last, nil
}

func clamp(limit int) int {
	if limit <= 0 || limit > 100 {
		return 100
	}
	return limit
}

// after narrows [lo, hi] to what follows a token's last key in the listing's
// direction (the last key itself is skipped by collect).
func after(lo, hi, last string, desc bool) (string, string) {
	if last == "" {
		return lo, hi
	}
	if desc {
		if hi == "" || last < hi {
			hi = last
		}
	} else if last > lo {
		lo = last
	}
	return lo, hi
}
