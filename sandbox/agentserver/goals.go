package agentserver

import (
	"errors"
	"net/http"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// The goal routes (POST /api/conversations/{id}/goal, .../goal/resume,
// .../goal/stop) and navigation in the conversation tree (POST
// /api/conversations/{id}/navigate). See sandbox/agent's goal.go and tree.go.

func (s *Server) startGoal(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.StartGoalRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	n := 0
	if req.MaxIterations != nil {
		n = *req.MaxIterations
	}
	if err := c.StartGoal(r.Context(), req.Objective, n); err != nil {
		conversationError(w, err)
		return
	}
	ok(w)
}

// navigate moves the conversation's head and answers its info.
func (s *Server) navigate(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.NavigateConversationRequest
	if !httpjson.DecodeBody(w, r, &req, true) {
		return
	}
	if err := c.Navigate(r.Context(), req.EventID); err != nil {
		if errors.Is(err, agent.ErrEventNotFound) {
			httpjson.WriteDetail(w, http.StatusNotFound, "Event not found: "+*req.EventID)
			return
		}
		conversationError(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, c.Info())
}
