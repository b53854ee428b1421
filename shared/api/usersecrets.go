package api

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// A user's stored secrets reach every conversation they start (a start
// request's own secrets win on a name clash). Values are sealed at rest and
// never returned.

func secretJSON(s acs.Secret) v1wire.Secret {
	out := v1wire.Secret{Name: s.Name, CreatedAt: events.At(s.CreatedAt), UpdatedAt: events.At(s.UpdatedAt)}
	if s.Description != "" {
		d := s.Description
		out.Description = &d
	}
	return out
}

// listSecrets: GET /api/v1/secrets.
func (a *API) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := a.accounts.Secrets(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := v1wire.SecretList{Secrets: []v1wire.Secret{}}
	for _, s := range list {
		out.Secrets = append(out.Secrets, secretJSON(s))
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// createSecret: POST /api/v1/secrets (201; 409 when the name exists).
func (a *API) createSecret(w http.ResponseWriter, r *http.Request) {
	var req v1wire.CreateSecretRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	s, err := a.accounts.CreateSecret(r.Context(), userOf(r).ID, req.Name, req.Value, req.Description)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, secretJSON(s))
}

func (a *API) ownSecret(r *http.Request) (acs.Secret, error) {
	return a.accounts.Secret(r.Context(), userOf(r).ID, r.PathValue("name"))
}

// getSecret: GET /api/v1/secrets/{name} (never the value).
func (a *API) getSecret(w http.ResponseWriter, r *http.Request) {
	s, err := a.ownSecret(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, secretJSON(s))
}

// updateSecret: PUT /api/v1/secrets/{name} (value and/or description).
func (a *API) updateSecret(w http.ResponseWriter, r *http.Request) {
	s, err := a.ownSecret(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var req v1wire.UpdateSecretRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if s, err = a.accounts.UpdateSecret(r.Context(), s, req.Value, req.Description); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, secretJSON(s))
}

// deleteSecret: DELETE /api/v1/secrets/{name}.
func (a *API) deleteSecret(w http.ResponseWriter, r *http.Request) {
	s, err := a.ownSecret(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := a.accounts.DeleteSecret(r.Context(), s); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// offsetPage reads page_id (a decimal offset this API issued) and limit
// (1..100, default def) and returns the window of n items and the next
// page_id ("" on the last page); ok false when it answered 422.
func offsetPage(w http.ResponseWriter, q *httpjson.Query, n, def int) (lo, hi int, next string, ok bool) {
	limit := q.Int("limit", def, 1, 100)
	if p := q.String("page_id"); p != nil {
		v, err := strconv.Atoi(*p)
		if err != nil || v < 0 {
			writeBadPageID(w)
			return 0, 0, "", false
		}
		lo = v
	}
	if !q.OK(w) {
		return 0, 0, "", false
	}
	lo = min(lo, n)
	hi = min(lo+limit, n)
	if hi < n {
		next = strconv.Itoa(hi)
	}
	return lo, hi, next, true
}

// searchSecrets: GET /api/v1/secrets/search ({items: [{name,
// description}], next_page_id}, by name; name__contains filters,
// case-insensitively). Values are never returned.
func (a *API) searchSecrets(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	var contains string
	if c := q.String("name__contains"); c != nil {
		contains = strings.ToLower(*c)
	}
	list, err := a.accounts.Secrets(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	items := []v1wire.SecretInfo{}
	for _, s := range list {
		if contains == "" || strings.Contains(strings.ToLower(s.Name), contains) {
			sj := secretJSON(s)
			items = append(items, v1wire.SecretInfo{Name: s.Name, Description: sj.Description})
		}
	}
	lo, hi, next, ok := offsetPage(w, q, len(items), 100)
	if !ok {
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items[lo:hi], next))
}

// searchSkills: GET /api/v1/skills/search ({items: [{name, type, source,
// triggers}], next_page_id}, by name).
func (a *API) searchSkills(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	items := []v1wire.SkillInfo{}
	if a.d.Skills != nil {
		list, err := a.d.Skills(r.Context())
		if err != nil {
			writeErr(w, err)
			return
		}
		items = append(items, list...)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	lo, hi, next, ok := offsetPage(w, q, len(items), 100)
	if !ok {
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items[lo:hi], next))
}
