package agentserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/eventlog"
)

// The rest of the conversation API: delete, update, interrupt, secrets,
// confirmation, security analyzer, ask_agent, condense, final response, fork
// and batch event get.

func ok(w http.ResponseWriter) {
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// withBody decodes the request body strictly into T, runs op on the
// conversation and answers {"success": true} (or the mapped error).
func withBody[T any](op func(c *agent.Conversation, ctx context.Context, body T) error) func(http.ResponseWriter, *http.Request, *agent.Conversation) {
	return func(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
		var body T
		if !httpjson.DecodeBody(w, r, &body, false) {
			return
		}
		if err := op(c, r.Context(), body); err != nil {
			conversationError(w, err)
			return
		}
		ok(w)
	}
}

// noBody runs op on the conversation (any request body is ignored, as
// clients send nothing or {}) and answers {"success": true}.
func noBody(op func(c *agent.Conversation, ctx context.Context) error) func(http.ResponseWriter, *http.Request, *agent.Conversation) {
	return func(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
		if err := op(c, r.Context()); err != nil {
			conversationError(w, err)
			return
		}
		ok(w)
	}
}

func (s *Server) deleteConversation(w http.ResponseWriter, _ *http.Request, c *agent.Conversation) {
	s.mu.Lock()
	delete(s.convs, c.ID())
	s.mu.Unlock()
	s.push.Unwatch(c.ID())
	info := c.Info()
	info.ExecutionStatus = agentwire.StatusDeleting
	s.push.NotifyInfo(c.ID(), func() *agentwire.ConversationInfo { return &info })
	if err := c.Close(); err != nil {
		slog.Warn("delete conversation: close", "conversation", c.ID(), "error", err)
	}
	if err := os.RemoveAll(c.Dir()); err != nil {
		slog.Error("delete conversation: remove", "conversation", c.ID(), "error", err)
		httpjson.WriteDetail(w, http.StatusInternalServerError, "Could not remove the conversation's files")
		return
	}
	ok(w)
}

func (s *Server) askAgent(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.AskAgentRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	answer, err := c.AskAgent(r.Context(), req.Question)
	if err != nil {
		slog.Warn("ask_agent", "conversation", c.ID(), "error", err)
		httpjson.WriteDetail(w, http.StatusBadGateway, "The LLM could not answer: "+err.Error())
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.FinalResponse{Response: answer})
}

func (s *Server) finalResponse(w http.ResponseWriter, _ *http.Request, c *agent.Conversation) {
	httpjson.WriteJSON(w, http.StatusOK, agentwire.FinalResponse{Response: c.FinalResponse()})
}

// fork creates a conversation from the source's history (up to and including
// from_event_id when given) with the same agent and workspace. A title
// holding a secret's value is a 422.
func (s *Server) fork(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.ForkRequest
	if !httpjson.DecodeBody(w, r, &req, true) {
		return
	}
	if req.Title != nil {
		// The fork has the source's secrets.
		if err := c.CheckTitle(*req.Title); err != nil {
			conversationError(w, err)
			return
		}
	}
	from := ""
	if req.FromEventID != nil {
		from = *req.FromEventID
	}
	history, err := c.EventsUpTo(from)
	if errors.Is(err, eventlog.ErrNotFound) {
		httpjson.WriteDetail(w, http.StatusNotFound, "Event not found: "+from)
		return
	}
	if err != nil {
		conversationError(w, err)
		return
	}
	id := uuid.New()
	if req.ID != nil {
		id, _ = agentwire.ParseID(*req.ID)
	}
	start := c.Request()
	dashed := id.String()
	start.ConversationID, start.InitialMessage = &dashed, nil
	if req.Tags != nil {
		start.Tags = req.Tags
	}
	s.mu.Lock()
	if _, exists := s.convs[id]; exists {
		s.mu.Unlock()
		httpjson.WriteDetail(w, http.StatusConflict, "Conversation id already in use: "+id.String())
		return
	}
	fork, err := agent.Create(r.Context(), id, start, s.convOptions(filepath.Join(s.cfg.ConversationsDir, agentwire.Hex(id))))
	if err != nil {
		s.mu.Unlock()
		conversationError(w, err)
		return
	}
	s.convs[id] = fork
	s.mu.Unlock()
	if err := fork.MarkForked(c.ID().String(), from, req.Title); err != nil {
		conversationError(w, err)
		return
	}
	if err := fork.Import(r.Context(), history, !req.ResetMetrics); err != nil {
		conversationError(w, err)
		return
	}
	s.watch(fork)
	httpjson.WriteJSON(w, http.StatusCreated, fork.Info())
}

// batchGetEvents returns events by id in request order, null for unknown
// ones. Ids come as repeated event_ids query parameters or, as the reference
// sends them, a JSON list in the body; neither is a 422 "missing" at
// query.event_ids.
func (s *Server) batchGetEvents(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	q := httpjson.NewQuery(r)
	if !q.Has("event_ids") && r.ContentLength == 0 {
		q.Require("event_ids")
		q.OK(w)
		return
	}
	ids := q.Strings("event_ids")
	if len(ids) == 0 && r.ContentLength != 0 {
		var body []string
		if !httpjson.DecodeBody(w, r, &body, true) {
			return
		}
		ids = body
	}
	if len(ids) > 100 {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "event_ids"}, Msg: "at most 100 ids per request", Type: "too_long"}})
		return
	}
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		ev, err := c.Log().Get(id)
		if err != nil {
			b = append(b, "null"...)
			continue
		}
		b = append(b, ev...)
	}
	httpjson.WriteRaw(w, http.StatusOK, append(b, ']'))
}
