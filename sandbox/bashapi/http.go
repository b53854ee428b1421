package bashapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// Routes mounts the bash HTTP API on mux, each handler wrapped with wrap (the
// caller's auth; nil mounts them bare):
//
//	POST   /api/bash/start_bash_command      ExecuteBashRequest -> 200 BashCommand
//	POST   /api/bash/execute_bash_command    ExecuteBashRequest -> 200 final BashOutput
//	GET    /api/bash/bash_events/search      -> 200 {"items":[...],"next_page_id":...}
//	GET    /api/bash/bash_events/{event_id}  -> 200 event | 404 {"detail":...}
//	GET    /api/bash/bash_events/            ["id", ...] body -> 200 [event | null, ...]
//	DELETE /api/bash/bash_events             -> 200 {"cleared_count":n}
//
// Request bodies are decoded strictly (422 with pydantic-style errors). A cwd
// that is not a directory is an invalid field: 422 with the detail at
// body.cwd (the BashError event, code InvalidCwd, is still stored and
// searchable). After Close, starting a command answers 503.
func (s *Service) Routes(mux Mux, wrap func(http.HandlerFunc) http.Handler) {
	if wrap == nil {
		wrap = func(h http.HandlerFunc) http.Handler { return h }
	}
	mux.Handle("POST /api/bash/start_bash_command", wrap(s.handleStart))
	mux.Handle("POST /api/bash/execute_bash_command", wrap(s.handleExecute))
	mux.Handle("GET /api/bash/bash_events/search", wrap(s.handleSearch))
	mux.Handle("GET /api/bash/bash_events/{event_id}", wrap(s.handleGet))
	mux.Handle("GET /api/bash/bash_events/{$}", wrap(s.handleBatchGet))
	mux.Handle("DELETE /api/bash/bash_events", wrap(s.handleClear))
}

func (s *Service) handleStart(w http.ResponseWriter, r *http.Request) {
	var req agentwire.ExecuteBashRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	cmd, err := s.Start(r.Context(), req)
	if err != nil {
		writeStartError(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, cmd)
}

func (s *Service) handleExecute(w http.ResponseWriter, r *http.Request) {
	var req agentwire.ExecuteBashRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	out, err := s.Execute(r.Context(), req)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client has gone
		}
		writeStartError(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

func writeStartError(w http.ResponseWriter, err error) {
	var be *agentwire.BashError
	switch {
	case errors.As(err, &be) && be.Code == agentwire.CodeInvalidCwd:
		// An unusable cwd is an invalid field.
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "cwd"}, Msg: "Value error, " + be.Detail, Type: "value_error"}})
	case errors.As(err, &be):
		httpjson.WriteJSON(w, http.StatusBadRequest, be)
	case errors.Is(err, ErrClosed):
		httpjson.WriteDetail(w, http.StatusServiceUnavailable, "The bash service is closed")
	case diskfull.Is(err):
		httpjson.WriteInsufficientStorage(w, "Insufficient storage: the sandbox's disk is full, so the command could not be recorded; free space and retry")
	default:
		httpjson.WriteDetail(w, http.StatusInternalServerError, err.Error())
	}
}

// handleSearch serves GET /api/bash/bash_events/search. Parameters:
// kind__eq, command_id__eq (UUID), timestamp__gte and timestamp__lt (RFC
// 3339), order__gt (int; BashOutput events must have a greater order, other
// kinds pass), sort_order (TIMESTAMP | TIMESTAMP_DESC), page_id (a
// next_page_id) and limit (1..100, default 100). Every invalid parameter is
// reported in one 422 body located at ["query", name].
func (s *Service) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	var sq SearchQuery
	sq.Kind = q.Enum("kind__eq", "", agentwire.BashKinds)
	if v := q.String("command_id__eq"); v != nil {
		id, ok := normalizeID(*v)
		if ok {
			sq.CommandID = id
		} else {
			q.Errs = append(q.Errs, strictjson.Error{
				Loc:  []any{"query", "command_id__eq"},
				Msg:  "Input should be a valid UUID, e.g. 0123456789abcdef0123456789abcdef",
				Type: "uuid_parsing",
			})
		}
	}
	sq.TimeGTE = q.Time("timestamp__gte")
	sq.TimeLT = q.Time("timestamp__lt")
	if q.Has("order__gt") {
		n := q.Int("order__gt", 0, math.MinInt, math.MaxInt)
		sq.OrderGT = &n
	}
	sq.Desc = q.Enum("sort_order", SortTimestamp, []string{SortTimestamp, SortTimestampDesc}) == SortTimestampDesc
	if v := q.String("page_id"); v != nil && *v != "" {
		sq.PageID = *v
		if !s.hasEvent(sq.PageID) {
			q.Errs = append(q.Errs, pageIDError())
		}
	}
	sq.Limit = q.Int("limit", 100, 1, 100)
	if !q.OK(w) {
		return
	}
	items, next, err := s.Search(sq)
	if err != nil {
		if errors.Is(err, ErrUnknownPage) {
			httpjson.WriteValidation(w, strictjson.Errors{pageIDError()})
			return
		}
		httpjson.WriteDetail(w, http.StatusInternalServerError, err.Error())
		return
	}
	httpjson.WriteEventPage(w, items, next)
}

func pageIDError() strictjson.Error {
	return strictjson.Error{
		Loc:  []any{"query", "page_id"},
		Msg:  "Unknown page_id: use a next_page_id returned by this search",
		Type: "value_error",
	}
}

// hasEvent reports whether a stored event has the given file name.
func (s *Service) hasEvent(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[name] != nil
}

func (s *Service) handleGet(w http.ResponseWriter, r *http.Request) {
	b, ok := s.Get(r.PathValue("event_id"))
	if !ok {
		httpjson.WriteDetail(w, http.StatusNotFound, "Bash event not found")
		return
	}
	httpjson.WriteRaw(w, http.StatusOK, b)
}

// MaxBatchIDs bounds the ids of one batch get.
const MaxBatchIDs = 100

// handleBatchGet serves GET /api/bash/bash_events/: the ids come, as
// OpenHands' clients send them, as a JSON list of strings in the body (or
// as repeated event_ids query parameters). It answers the events in request
// order, null for an id that names no event (malformed ids included). No
// ids at all is 422 missing at body; more than MaxBatchIDs is 422.
func (s *Service) handleBatchGet(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	ids := q.Strings("event_ids")
	if len(ids) == 0 {
		var body []string
		if !httpjson.DecodeBody(w, r, &body, false) {
			return
		}
		ids = body
	}
	if len(ids) > MaxBatchIDs {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body"}, Msg: fmt.Sprintf("List should have at most %d items after validation, not %d", MaxBatchIDs, len(ids)), Type: "too_long"}})
		return
	}
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		if ev, ok := s.Get(id); ok {
			b = append(b, ev...)
		} else {
			b = append(b, "null"...)
		}
	}
	httpjson.WriteRaw(w, http.StatusOK, append(b, ']'))
}

func (s *Service) handleClear(w http.ResponseWriter, r *http.Request) {
	n := s.Clear()
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ClearBashResponse{ClearedCount: n})
}

// Mux is where Routes registers its handlers (an *http.ServeMux, or a
// wrapper that records the patterns).
type Mux interface {
	Handle(pattern string, h http.Handler)
}
