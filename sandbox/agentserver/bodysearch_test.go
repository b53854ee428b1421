package agentserver_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/eventlog"
)

// TestEventSearchBodyPagesAreBounded: on a conversation whose log holds more
// messages than a body search examines per page, GET …/events/search?body=
// answers a short (here empty) page with a next_page_id rather than
// scanning the whole log, and following next_page_id reaches every match
// once, in both orders; the count is exact (issue 11, defect 9).
func TestEventSearchBodyPagesAreBounded(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	// Grow the conversation's log while the server is down, as a long
	// conversation would have: many messages, then two that match.
	e.stop()
	l, err := eventlog.Open(filepath.Join(e.cfg.ConversationsDir, strings.ReplaceAll(id, "-", "")))
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	for i := range eventlog.BodyScanEvents + 100 {
		evs = append(evs, &events.MessageEvent{Base: events.Base{Source: "user"},
			LLMMessage: events.Message{Role: "user", Content: []events.Content{events.TextItem(fmt.Sprintf("message %d about the parser", i))}}})
	}
	matches := []*events.MessageEvent{
		{Base: events.Base{Source: "agent"}, LLMMessage: events.Message{Role: "assistant", Content: []events.Content{events.TextItem("found the NEEDLE")}}},
		{Base: events.Base{Source: "user"}, LLMMessage: events.Message{Role: "user", Content: []events.Content{events.TextItem("needle? great")}}},
	}
	if err := l.Append(context.Background(), append(evs, matches[0], matches[1])...); err != nil {
		t.Fatal(err)
	}
	l.Close()
	e.start()

	search := func(query string) (ids []string, next *string) {
		t.Helper()
		r := e.call("GET", "/api/conversations/"+id+"/events/search?"+query, nil)
		if r.status != 200 {
			t.Fatalf("search %s: %d %s", query, r.status, r.body)
		}
		var p struct {
			Items      []map[string]any `json:"items"`
			NextPageID *string          `json:"next_page_id"`
		}
		r.json(t, &p)
		if p.Items == nil {
			t.Fatalf("search %s: items is not an array: %s", query, r.body)
		}
		for _, it := range p.Items {
			ids = append(ids, it["id"].(string))
		}
		return ids, p.NextPageID
	}
	first, next := search("body=Needle&limit=10")
	if len(first) != 0 || next == nil {
		t.Fatalf("first page: %v, next %v; want an empty page with a next_page_id", first, next)
	}
	for _, order := range []string{"TIMESTAMP", "TIMESTAMP_DESC"} {
		want := []string{matches[0].ID, matches[1].ID}
		if order == "TIMESTAMP_DESC" {
			want = []string{matches[1].ID, matches[0].ID}
		}
		var got []string
		q := url.Values{"body": {"NEEDLE"}, "limit": {"1"}, "sort_order": {order}}
		for pages := 0; ; pages++ {
			ids, next := search(q.Encode())
			got = append(got, ids...)
			if next == nil {
				break
			}
			if pages > 100 {
				t.Fatal("paging does not end")
			}
			q.Set("page_id", *next)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: got %v, want %v", order, got, want)
		}
	}
	r := e.call("GET", "/api/conversations/"+id+"/events/count?body=needle", nil)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != "2" {
		t.Fatalf("count: %d %s, want 2", r.status, r.body)
	}
}
