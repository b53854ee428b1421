package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

// The pending-message bodies (v1wire's).
type (
	PendingMessageRequest  = v1wire.PendingMessageRequest
	PendingMessageResponse = v1wire.PendingMessageResponse
)

// addPendingMessage: POST /api/v1/conversations/{conversation_id}/pending-messages.
// The id is a conversation id or "task-<start task id>" while the
// conversation starts. A message for a conversation that is ready is
// delivered at once (queued false, position 0); otherwise it is queued
// (at most 10 per conversation, 429 beyond) and delivered in order when the
// start task reaches READY.
func (a *API) addPendingMessage(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("conversation_id")
	user := userOf(r)
	ctx := r.Context()
	var req PendingMessageRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	key, convID := "", ""
	if tid, ok := strings.CutPrefix(raw, "task-"); ok {
		id, err := acs.NormalizeID(tid)
		var t acs.StartTask
		if err == nil {
			t, err = a.d.Store.GetStartTask(ctx, id)
		}
		if err != nil || t.OwnerID != user.ID {
			httpjson.WriteDetail(w, http.StatusNotFound, "Start task not found: "+tid)
			return
		}
		if errs := a.secretsInMessage(ctx, acs.Conversation{OwnerID: t.OwnerID, StartTaskID: t.ID}, req.Content); len(errs) > 0 {
			httpjson.WriteValidation(w, errs)
			return
		}
		switch t.Status {
		case acs.TaskError:
			detail := ""
			if t.Detail != nil {
				detail = *t.Detail
			}
			httpjson.WriteDetail(w, http.StatusConflict, "The conversation failed to start: "+detail)
			return
		case acs.TaskReady:
			convID = t.ConversationID
		default:
			key = "task-" + t.ID
		}
	} else {
		c, err := a.ownConversation(r, raw)
		if err != nil {
			writeErr(w, err)
			return
		}
		convID = c.ID
	}
	if convID != "" {
		c, err := a.d.Store.GetConversation(ctx, convID)
		if err != nil {
			writeErr(w, err)
			return
		}
		if errs := a.secretsInMessage(ctx, c, req.Content); len(errs) > 0 {
			httpjson.WriteValidation(w, errs)
			return
		}
		sb, client, err := a.liveConversation(ctx, c)
		if err == nil {
			if err := startflow.DeliverMessage(ctx, a.d.Store, client, acs.Dashed(c.ID), &wire.SendMessageRequest{Role: events.RoleUser, Content: req.Content, Run: true}); err != nil {
				writeAgentErr(w, err)
				return
			}
			a.life.Touch(ctx, sb, true)
			httpjson.WriteJSON(w, http.StatusCreated, PendingMessageResponse{ID: acs.NewID(), Queued: false, Position: 0})
			return
		}
		if !errors.Is(err, acs.ErrConflict) {
			// Read-only (410/503), the running cap (429) or a failure: the
			// same answers as send-message.
			writeErr(w, err)
			return
		}
		// Not ready in time: queue it; it is delivered the next time the
		// sandbox is ready.
		key = c.ID
		if _, err := a.d.Store.UpdateSandbox(ctx, c.SandboxID, func(s *acs.Sandbox) error { s.PendingFlush = true; return nil }); err != nil {
			writeErr(w, err)
			return
		}
	}
	content, err := strictjson.Marshal(req.Content)
	if err != nil {
		writeErr(w, err)
		return
	}
	m := acs.PendingMessage{ID: acs.NewID(), OwnerID: user.ID, Key: key, Content: content, CreatedAt: a.now()}
	pos, err := a.d.Store.AddPendingMessage(ctx, m, acs.MaxPendingMessages)
	if errors.Is(err, acs.ErrCapacity) {
		w.Header().Set("Retry-After", "10")
		httpjson.WriteDetail(w, http.StatusTooManyRequests, fmt.Sprintf("%d messages are already queued for this conversation; wait until it has started", acs.MaxPendingMessages))
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, PendingMessageResponse{ID: m.ID, Queued: true, Position: pos})
}
