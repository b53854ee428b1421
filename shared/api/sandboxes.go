package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// createSandbox: POST /api/v1/sandboxes[?sandbox_spec_id=...]. It returns the
// new sandbox (usually STARTING).
func (a *API) createSandbox(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	specID := ""
	if s := q.String("sandbox_spec_id"); s != nil {
		specID = *s
	}
	spec, ok := a.life.Config.Spec(specID)
	if !ok {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "sandbox_spec_id"}, Msg: "Unknown sandbox spec: " + specID, Type: "value_error"})
	}
	if !q.OK(w) {
		return
	}
	sb, err := a.life.Create(r.Context(), acs.Sandbox{ID: acs.NewID(), OwnerID: userOf(r).ID, SpecID: spec.ID})
	if err != nil {
		writeErr(w, err)
		return
	}
	sb, key := a.liveSandbox(r.Context(), sb)
	httpjson.WriteJSON(w, http.StatusOK, sandboxJSON(sb, key))
}

// searchSandboxes: GET /api/v1/sandboxes/search, newest first.
func (a *API) searchSandboxes(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	opts := acs.ListOptions{Limit: q.Int("limit", 100, 1, 100)}
	if p := q.String("page_id"); p != nil {
		opts.PageToken = *p
	}
	if !q.OK(w) {
		return
	}
	page, err := a.life.List(r.Context(), userOf(r).ID, opts)
	if errors.Is(err, acs.ErrInvalid) {
		writeBadPageID(w)
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	items := make([]v1wire.Sandbox, 0, len(page.Items))
	for _, sb := range page.Items {
		sb, key := a.liveSandbox(r.Context(), sb)
		items = append(items, sandboxJSON(sb, key))
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items, page.Next))
}

// getSandboxes: GET /api/v1/sandboxes?id=... in request order, null for
// missing or another user's.
func (a *API) getSandboxes(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	q.Require("id")
	ids := q.Strings("id")
	if len(ids) > maxBatch {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "id"}, Msg: "at most 100 ids per request", Type: "too_long"})
	}
	if !q.OK(w) {
		return
	}
	out := make([]*v1wire.Sandbox, len(ids))
	for i, id := range ids {
		sb, err := a.life.Get(r.Context(), userOf(r).ID, id)
		if errors.Is(err, acs.ErrNotFound) {
			continue
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		sb, key := a.liveSandbox(r.Context(), sb)
		sj := sandboxJSON(sb, key)
		out[i] = &sj
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// searchSandboxSpecs: GET /api/v1/sandbox-specs/search (offset paging over
// the configured specs; the first is the default).
func (a *API) searchSandboxSpecs(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	limit := q.Int("limit", 100, 1, 100)
	offset := 0
	if p := q.String("page_id"); p != nil {
		n, err := strconv.Atoi(*p)
		if err != nil || n < 0 || n > len(a.life.Config.Specs) {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "page_id"}, Msg: "Unknown page_id", Type: "value_error"})
		}
		offset = n
	}
	if !q.OK(w) {
		return
	}
	specs := a.life.Config.Specs
	items := []v1wire.Spec{}
	next := ""
	for i := offset; i < len(specs) && i < offset+limit; i++ {
		items = append(items, specJSON(specs[i]))
	}
	if offset+limit < len(specs) {
		next = strconv.Itoa(offset + limit)
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items, next))
}
