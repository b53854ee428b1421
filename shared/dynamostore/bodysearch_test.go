package dynamostore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/storetest"
)

// TestBodySearchWithSmallScanBudget: the body-search contract holds when
// pages end early because their scan budget is spent (here 10 items).
func TestBodySearchWithSmallScanBudget(t *testing.T) {
	c, _ := client(t, endpoint(t), 5)
	storetest.RunEventBodySearch(t, func(t *testing.T) acs.Store {
		return newTable(t, c, dynamostore.Options{BodyScanItems: 10})
	})
}

// searchAll follows a search's tokens to the end and returns the event ids
// served and the number of pages.
func searchAll(t *testing.T, s acs.Store, conv string, q acs.EventQuery) ([]string, int) {
	t.Helper()
	var got []string
	for pages := 1; ; pages++ {
		page, err := s.SearchEvents(ctx, conv, q)
		must(t, err)
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if page.Next == "" {
			return got, pages
		}
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		q.PageToken = page.Next
	}
}

// TestBodySearchIsBounded: a body search examines at most
// DefaultBodyScanItems items per page (issue 11, defect 9: it read every
// event of the conversation, up to the match). Behind more messages than
// that, the first page is empty and has a token; the tokens lead to the
// match. Events without text are not examined at all.
func TestBodySearchIsBounded(t *testing.T) {
	c, tr := client(t, endpoint(t), 5)
	s := newTable(t, c, dynamostore.Options{})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var evs []acs.StoredEvent
	add := func(kind, text string) {
		id := fmt.Sprintf("e%05d", len(evs))
		evs = append(evs, acs.StoredEvent{ID: id, Kind: kind, Source: "user", Timestamp: base.Add(time.Duration(len(evs)) * time.Millisecond),
			Text: text, JSON: []byte(fmt.Sprintf(`{"id":%q}`, id))})
	}
	for i := range dynamostore.DefaultBodyScanItems + 100 {
		add("MessageEvent", fmt.Sprintf("message %d about the parser", i))
	}
	add("MessageEvent", "the needle")
	_, err := s.PutEvents(ctx, "conv", evs)
	must(t, err)
	q := acs.EventQuery{EventFilter: acs.EventFilter{Body: "NEEDLE"}}
	page, err := s.SearchEvents(ctx, "conv", q)
	must(t, err)
	if len(page.Items) != 0 || page.Next == "" {
		t.Fatalf("first page: %d events, next %q; want none and a token", len(page.Items), page.Next)
	}
	got, _ := searchAll(t, s, "conv", q)
	if want := []string{string(evs[len(evs)-1].JSON)}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Behind 1500 events without text the match is on the first page, read
	// from the text index in one Query.
	var obs []acs.StoredEvent
	for i := range 1500 {
		id := fmt.Sprintf("o%05d", i)
		obs = append(obs, acs.StoredEvent{ID: id, Kind: "ObservationEvent", Source: "environment", Timestamp: base.Add(time.Duration(i) * time.Millisecond), JSON: []byte(fmt.Sprintf(`{"id":%q}`, id))})
	}
	obs = append(obs, acs.StoredEvent{ID: "m", Kind: "MessageEvent", Source: "user", Timestamp: base.Add(time.Hour), Text: "a needle", JSON: []byte(`{"id":"m"}`)})
	_, err = s.PutEvents(ctx, "obs", obs)
	must(t, err)
	queries := tr.count("Query")
	page, err = s.SearchEvents(ctx, "obs", acs.EventQuery{EventFilter: acs.EventFilter{Body: "needle"}, Desc: true})
	must(t, err)
	if len(page.Items) != 1 || page.Next != "" {
		t.Fatalf("behind observations: %d events, next %q", len(page.Items), page.Next)
	}
	if n := tr.count("Query") - queries; n != 1 {
		t.Fatalf("%d Queries for a body search of 1 message", n)
	}
	if n, err := s.CountEvents(ctx, "obs", acs.EventFilter{Body: "NEEDLE"}); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
}

// TestBodySearchOfEventsStoredWithoutIndex: a conversation whose events
// were stored before the text index existed (event items with their text,
// no index entries, no marker) is still searched correctly, from its event
// items, with the same bounded pages; events added later are found too.
func TestBodySearchOfEventsStoredWithoutIndex(t *testing.T) {
	c, _ := client(t, endpoint(t), 5)
	table := tableName()
	s := newTable(t, c, dynamostore.Options{Table: table, BodyScanItems: 4})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	timeKey := func(t time.Time) string { return fmt.Sprintf("%016x", uint64(t.UnixNano())+1<<63) }
	var want []string
	for i := range 20 {
		id := fmt.Sprintf("old%02d", i)
		at := base.Add(time.Duration(i) * time.Second)
		sk := "T#" + timeKey(at) + "#" + id
		text := fmt.Sprintf("old message %d", i)
		if i%4 == 0 {
			text += " with the needle"
			want = append(want, fmt.Sprintf(`{"id":%q}`, id))
		}
		ev := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "EVENTS#legacy"}, "sk": &types.AttributeValueMemberS{Value: sk},
			"id": &types.AttributeValueMemberS{Value: id}, "kind": &types.AttributeValueMemberS{Value: "MessageEvent"},
			"source": &types.AttributeValueMemberS{Value: "user"}, "text": &types.AttributeValueMemberS{Value: text},
			"d": &types.AttributeValueMemberB{Value: []byte(fmt.Sprintf(`{"id":%q}`, id))}}
		lookup := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "EVENTS#legacy"}, "sk": &types.AttributeValueMemberS{Value: "I#" + id},
			"at": &types.AttributeValueMemberS{Value: sk}}
		for _, it := range []map[string]types.AttributeValue{ev, lookup} {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
			must(t, err)
		}
	}
	// A new event of the old conversation.
	_, err := s.PutEvents(ctx, "legacy", []acs.StoredEvent{{ID: "new", Kind: "MessageEvent", Source: "agent", Timestamp: base.Add(time.Hour), Text: "a new needle", JSON: []byte(`{"id":"new"}`)}})
	must(t, err)
	want = append(want, `{"id":"new"}`)
	for _, desc := range []bool{false, true} {
		got, pages := searchAll(t, s, "legacy", acs.EventQuery{EventFilter: acs.EventFilter{Body: "Needle"}, Desc: desc, Limit: 2})
		exp := slices.Clone(want)
		if desc {
			slices.Reverse(exp)
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("desc=%v: got %v, want %v", desc, got, exp)
		}
		if pages < 21/4 {
			t.Fatalf("desc=%v: %d pages for 21 events at 4 a page", desc, pages)
		}
	}
	if n, err := s.CountEvents(ctx, "legacy", acs.EventFilter{Body: "NEEDLE"}); err != nil || n != len(want) {
		t.Fatalf("count %d, %v; want %d", n, err, len(want))
	}
}
