package api

import (
	"net/http"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
)

// PendingMessageRequest is the body of POST .../pending-messages.
type PendingMessageRequest struct {
	Role    events.Role      `json:"role" acs:"default=user"`
	Content []events.Content `json:"content"`
}

// ValidateStrict requires a user message with content.
func (m *PendingMessageRequest) ValidateStrict() []strictjson.Error {
	w := wire.SendMessageRequest{Role: m.Role, Content: m.Content}
	return w.ValidateStrict()
}

// PendingMessageResponse says whether the message was queued, and where.
type PendingMessageResponse struct {
	ID       string `json:"id"`
	Queued   bool   `json:"queued"`
	Position int    `json:"position"`
}

// addPendingMessage: POST /api/v1/conversations/{conversation_id}/pending-messages.
// The id is a conversation id or "task-<start task id>" while the
// conversation starts. A message for a conversation that is ready is
// delivered at once (queued false, position 0); otherwise it is queued
// (at most 10 per conversation, 429 beyond) and delivered in order when the
// start task reaches READY.
func (a *API) addPendingMessage(w http.ResponseWriter, r *http.Request) {
	var req PendingMessageRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	p, err := a.conv.AddPending(r.Context(), userOf(r), r.PathValue("conversation_id"), req.Content)
	if err != nil {
		writeConvErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, PendingMessageResponse{ID: p.ID, Queued: p.Queued, Position: p.Position})
}
