package api

import (
	"net/http"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/v1wire"
)

// addPendingMessage: POST /api/v1/conversations/{conversation_id}/pending-messages.
// The id is a conversation id or "task-<start task id>" while the
// conversation starts. A message for a conversation that is ready is
// delivered at once (queued false, position 0); otherwise it is queued
// (at most 10 per conversation, 429 beyond) and delivered in order when the
// start task reaches READY.
func (a *API) addPendingMessage(w http.ResponseWriter, r *http.Request) {
	var req v1wire.PendingMessageRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	p, err := a.conv.AddPending(r.Context(), userOf(r), r.PathValue("conversation_id"), req.Content)
	if err != nil {
		writeConvErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, v1wire.PendingMessageResponse{ID: p.ID, Queued: p.Queued, Position: p.Position})
}
