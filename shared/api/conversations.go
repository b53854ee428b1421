package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/startflow"
)

// maxBatch bounds ids per batch get.
const maxBatch = 100

// startConversation: POST /api/v1/app-conversations. It returns the start
// task at once (status WORKING); the conversation starts in the background.
func (a *API) startConversation(w http.ResponseWriter, r *http.Request) {
	var req startflow.StartRequest
	if !wire.DecodeBody(w, r, &req, true) {
		return
	}
	t, err := a.start.Submit(r.Context(), userOf(r), req)
	if err != nil {
		writeErr(w, err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, taskJSON(t))
}

// batchIDs reads a repeated id parameter (also comma-separated), normalised
// to hex; malformed ids and too many ids are 422.
func batchIDs(q *wire.Query, name string) []string {
	raw := q.Strings(name)
	if len(raw) > maxBatch {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", name}, Msg: fmt.Sprintf("at most %d ids per request", maxBatch), Type: "too_long"})
		return nil
	}
	out := make([]string, len(raw))
	for i, s := range raw {
		id, err := acs.NormalizeID(s)
		if err != nil {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", name, i}, Msg: "Input should be a valid UUID", Type: "uuid_parsing"})
			continue
		}
		out[i] = id
	}
	return out
}

// getStartTasks: GET /api/v1/app-conversations/start-tasks?ids=... returns
// the tasks in request order, null for missing or another user's.
func (a *API) getStartTasks(w http.ResponseWriter, r *http.Request) {
	q := wire.NewQuery(r)
	ids := batchIDs(q, "ids")
	if !q.OK(w) {
		return
	}
	user := userOf(r)
	out := make([]*StartTaskJSON, len(ids))
	for i, id := range ids {
		t, err := a.d.Store.GetStartTask(r.Context(), id)
		if errors.Is(err, acs.ErrNotFound) || (err == nil && t.OwnerID != user.ID) {
			continue
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		tj := taskJSON(t)
		out[i] = &tj
	}
	wire.WriteJSON(w, http.StatusOK, out)
}

// ownConversation loads a conversation of the caller; another user's is
// ErrNotFound.
func (a *API) ownConversation(r *http.Request, rawID string) (acs.Conversation, error) {
	id, err := acs.NormalizeID(rawID)
	if err != nil {
		return acs.Conversation{}, fmt.Errorf("Conversation not found: %s: %w", rawID, acs.ErrNotFound)
	}
	c, err := a.d.Store.GetConversation(r.Context(), id)
	if errors.Is(err, acs.ErrNotFound) || (err == nil && c.OwnerID != userOf(r).ID) {
		return acs.Conversation{}, fmt.Errorf("Conversation not found: %s: %w", id, acs.ErrNotFound)
	}
	return c, err
}

// getConversations: GET /api/v1/app-conversations?ids=... in request order,
// null for missing or another user's.
func (a *API) getConversations(w http.ResponseWriter, r *http.Request) {
	q := wire.NewQuery(r)
	ids := batchIDs(q, "ids")
	if !q.OK(w) {
		return
	}
	out := make([]*ConversationJSON, len(ids))
	for i, id := range ids {
		c, err := a.ownConversation(r, id)
		if errors.Is(err, acs.ErrNotFound) {
			continue
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		cj := a.conversationJSON(r.Context(), c)
		out[i] = &cj
	}
	wire.WriteJSON(w, http.StatusOK, out)
}
