package api

import (
	"errors"
	"net/http"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/acs"
)

// eventFilter reads the filters of the V1 event routes: the agent server's
// (kind, source, body, timestamp__gte, timestamp__lt) plus the reference's
// kind__eq.
func eventFilter(q *httpjson.Query) acs.EventFilter {
	f := acs.EventFilter{Kind: q.EventKind("kind")}
	if k := q.EventKind("kind__eq"); k != "" {
		f.Kind = k
	}
	f.Source = q.Enum("source", "", events.Source("").EnumValues())
	if b := q.String("body"); b != nil {
		f.Body = *b
	}
	f.TimestampGTE = q.Time("timestamp__gte")
	f.TimestampLT = q.Time("timestamp__lt")
	return f
}

// searchEvents: GET /api/v1/conversation/{id}/events/search, served from the
// control plane's store (it works after the sandbox is gone).
func (a *API) searchEvents(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := httpjson.NewQuery(r)
	query := acs.EventQuery{EventFilter: eventFilter(q)}
	if p := q.String("page_id"); p != nil {
		query.PageToken = *p
	}
	query.Limit = q.Int("limit", 100, 1, 100)
	query.Desc = q.Enum("sort_order", "TIMESTAMP", events.EventSortOrder("").EnumValues()) == string(events.SortTimestampDesc)
	if !q.OK(w) {
		return
	}
	page, err := a.conv.SearchEvents(r.Context(), c.ID, query)
	if errors.Is(err, acs.ErrInvalid) {
		writeBadPageID(w)
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteEventPage(w, page.Items, page.Next)
}

// countEvents: GET /api/v1/conversation/{id}/events/count.
func (a *API) countEvents(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := httpjson.NewQuery(r)
	f := eventFilter(q)
	if !q.OK(w) {
		return
	}
	n, err := a.conv.CountEvents(r.Context(), c.ID, f)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, n)
}

// getEvents: GET /api/v1/conversation/{id}/events?id=... in request order,
// null for missing.
func (a *API) getEvents(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := httpjson.NewQuery(r)
	q.Require("id")
	ids := q.Strings("id")
	if len(ids) > maxBatch {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "id"}, Msg: "at most 100 ids per request", Type: "too_long"})
	}
	if !q.OK(w) {
		return
	}
	items, err := a.conv.GetEvents(r.Context(), c.ID, ids)
	if err != nil {
		writeErr(w, err)
		return
	}
	b := []byte{'['}
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if it == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, it...)
		}
	}
	httpjson.WriteRaw(w, http.StatusOK, append(b, ']'))
}
