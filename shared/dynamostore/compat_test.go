package dynamostore_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/storetest"
)

// Stored-data compatibility. testdata/fixture-items.json holds the items of
// storetest's fixture as this package stored them when the file was
// written (DynamoDB's JSON form of attribute values, in key order); every
// later version must read them as the fixture's domain values, and store
// the fixture as the same items (but for the random write tokens w). A
// change of format is thus deliberate: such a change must keep reading
// the items of this file, and adds a new file for its own format
// (ACS_UPDATE_STORE_FIXTURES=1 writes it; never rewrite an older one).

const fixtureItems = "testdata/fixture-items.json"

func fixtureClock() time.Time { return storetest.FixtureTime }

// avToJSON is an attribute value in DynamoDB's JSON form ({"S": "..."}).
func avToJSON(v types.AttributeValue) any {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": x.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": x.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(x.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": x.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": x.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": x.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": x.Value}
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range x.Value {
			l = append(l, avToJSON(e))
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, e := range x.Value {
			m[k] = avToJSON(e)
		}
		return map[string]any{"M": m}
	}
	panic(fmt.Sprintf("attribute value %T", v))
}

// avFromJSON is the inverse of avToJSON.
func avFromJSON(t *testing.T, raw json.RawMessage) types.AttributeValue {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil || len(v) != 1 {
		t.Fatalf("attribute value %s: %v", raw, err)
	}
	decode := func(val json.RawMessage, into any) {
		if err := json.Unmarshal(val, into); err != nil {
			t.Fatalf("attribute value %s: %v", raw, err)
		}
	}
	for typ, val := range v {
		switch typ {
		case "S", "N", "B":
			var s string
			decode(val, &s)
			switch typ {
			case "S":
				return &types.AttributeValueMemberS{Value: s}
			case "N":
				return &types.AttributeValueMemberN{Value: s}
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("attribute value %s: %v", raw, err)
			}
			return &types.AttributeValueMemberB{Value: b}
		case "BOOL":
			var b bool
			decode(val, &b)
			return &types.AttributeValueMemberBOOL{Value: b}
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}
		case "SS", "NS":
			var ss []string
			decode(val, &ss)
			if typ == "SS" {
				return &types.AttributeValueMemberSS{Value: ss}
			}
			return &types.AttributeValueMemberNS{Value: ss}
		case "L":
			var l []json.RawMessage
			decode(val, &l)
			out := &types.AttributeValueMemberL{}
			for _, e := range l {
				out.Value = append(out.Value, avFromJSON(t, e))
			}
			return out
		case "M":
			var m map[string]json.RawMessage
			decode(val, &m)
			out := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
			for k, e := range m {
				out.Value[k] = avFromJSON(t, e)
			}
			return out
		}
	}
	t.Fatalf("attribute value %s: unknown type", raw)
	return nil
}

// scanItems reads every item of a table in key order (a test may Scan; the
// store never does, so the client is not the test's Scan-refusing one).
func scanItems(t *testing.T, ep, table string) []map[string]types.AttributeValue {
	t.Helper()
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Timeout: 30 * time.Second}})
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, out.Items...)
	}
	key := func(it map[string]types.AttributeValue) string {
		return it["pk"].(*types.AttributeValueMemberS).Value + "\x00" + it["sk"].(*types.AttributeValueMemberS).Value
	}
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	return items
}

// itemLines renders items one a line, in DynamoDB's JSON form with sorted
// attributes, leaving out the random write token w.
func itemLines(t *testing.T, items []map[string]types.AttributeValue) []string {
	t.Helper()
	var out []string
	for _, it := range items {
		m := map[string]any{}
		for k, v := range it {
			if k != "w" {
				m[k] = avToJSON(v)
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func writeFixtureItems(t *testing.T, items []map[string]types.AttributeValue) {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, it := range items {
		m := map[string]any{}
		for k, v := range it {
			m[k] = avToJSON(v)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		if i < len(items)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	if err := os.MkdirAll(filepath.Dir(fixtureItems), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureItems, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", fixtureItems)
}

func readFixtureItems(t *testing.T) []map[string]types.AttributeValue {
	t.Helper()
	raw, err := os.ReadFile(fixtureItems)
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var items []map[string]types.AttributeValue
	for _, m := range list {
		it := map[string]types.AttributeValue{}
		for k, v := range m {
			it[k] = avFromJSON(t, v)
		}
		items = append(items, it)
	}
	return items
}

// TestStoredItemsStillRead: the items of the fixture file, put as they are
// into a table, read as the fixture's values (the store's clock at the
// fixture's, so that nothing in it has expired).
func TestStoredItemsStillRead(t *testing.T) {
	ep := endpoint(t)
	c, _ := client(t, ep, 3)
	if os.Getenv("ACS_UPDATE_STORE_FIXTURES") != "" {
		table := tableName()
		storetest.WriteFixture(t, newTable(t, c, dynamostore.Options{Table: table, Now: fixtureClock}))
		writeFixtureItems(t, scanItems(t, ep, table))
	}
	items := readFixtureItems(t)
	table := tableName()
	s := newTable(t, c, dynamostore.Options{Table: table, Now: fixtureClock})
	for _, it := range items {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	storetest.CheckFixture(t, s)
}

// TestStoredItemsUnchanged: the fixture stored now is the fixture file's
// items, attribute for attribute (but for the write tokens).
func TestStoredItemsUnchanged(t *testing.T) {
	ep := endpoint(t)
	c, _ := client(t, ep, 3)
	table := tableName()
	storetest.WriteFixture(t, newTable(t, c, dynamostore.Options{Table: table, Now: fixtureClock}))
	got, want := itemLines(t, scanItems(t, ep, table)), itemLines(t, readFixtureItems(t))
	storetest.DiffLines(t, "the fixture stored now", got, want)
}
