package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/v1wire"
)

// EventPage is one page of an event search.
type EventPage struct {
	Items      []events.Event
	NextPageID *string
}

// eventPage decodes {items, next_page_id} of events.
func (t *transport) eventPage(ctx context.Context, path string, f Filter) (EventPage, error) {
	var raw struct {
		Items      []json.RawMessage `json:"items"`
		NextPageID *string           `json:"next_page_id"`
	}
	if err := t.call(ctx, request{method: http.MethodGet, path: path, query: f, idempotent: true}, &raw); err != nil {
		return EventPage{}, err
	}
	p := EventPage{Items: make([]events.Event, 0, len(raw.Items)), NextPageID: raw.NextPageID}
	for i, b := range raw.Items {
		ev, err := events.Decode(b)
		if err != nil {
			return EventPage{}, fmt.Errorf("GET %s: decode event %d: %w", path, i, err)
		}
		p.Items = append(p.Items, ev)
	}
	return p, nil
}

// eventList decodes a batch get of events (nil for a missing one).
func (t *transport) eventList(ctx context.Context, path string, eventIDs []string) ([]events.Event, error) {
	var raw []json.RawMessage
	if err := t.call(ctx, request{method: http.MethodGet, path: path, query: url.Values{"id": eventIDs}, idempotent: true}, &raw); err != nil {
		return nil, err
	}
	out := make([]events.Event, len(raw))
	for i, b := range raw {
		if string(b) == "null" {
			continue
		}
		ev, err := events.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("GET %s: decode event %d: %w", path, i, err)
		}
		out[i] = ev
	}
	return out, nil
}

// eventPages yields every event of the search, page after page (pages).
func eventPages(f Filter, get func(Filter) (EventPage, error)) iter.Seq2[events.Event, error] {
	return pages(f, func(q url.Values) (v1wire.Page[events.Event], error) {
		p, err := get(q)
		return v1wire.Page[events.Event]{Items: p.Items, NextPageID: p.NextPageID}, err
	})
}

// SearchEvents returns one page of a conversation's events from the
// control plane's store (filters "kind__eq", "source__eq", "body",
// "timestamp__gte", "timestamp__lt", "sort_order", "limit", "page_id").
func (c *Client) SearchEvents(ctx context.Context, convID string, f Filter) (EventPage, error) {
	return c.t.eventPage(ctx, v1+"/conversation/"+escape(convID)+"/events/search", f)
}

// Events yields every event of a conversation that matches f, following
// next_page_id; "limit" in f is the page size. It stops at the first error,
// which it yields.
func (c *Client) Events(ctx context.Context, convID string, f Filter) iter.Seq2[events.Event, error] {
	return eventPages(f, func(q Filter) (EventPage, error) { return c.SearchEvents(ctx, convID, q) })
}

// CountEvents counts a conversation's events that match f.
func (c *Client) CountEvents(ctx context.Context, convID string, f Filter) (int, error) {
	var n int
	err := c.get(ctx, "/conversation/"+escape(convID)+"/events/count", f, &n)
	return n, err
}

// GetEvents returns the events of ids in their order (nil: missing).
func (c *Client) GetEvents(ctx context.Context, convID string, eventIDs ...string) ([]events.Event, error) {
	return c.t.eventList(ctx, v1+"/conversation/"+escape(convID)+"/events", eventIDs)
}
