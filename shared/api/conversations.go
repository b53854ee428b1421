package api

import (
	"archive/zip"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/conversations"
	"github.com/acs-project/acs/shared/v1wire"
)

// maxBatch bounds ids per batch get.
const maxBatch = 100

// startConversation: POST /api/v1/app-conversations. It returns the start
// task at once (status WORKING); the conversation starts in the background.
func (a *API) startConversation(w http.ResponseWriter, r *http.Request) {
	var req v1wire.StartRequest
	if !httpjson.DecodeBody(w, r, &req, true) {
		return
	}
	t, err := a.start.Start(r.Context(), userOf(r), req)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, taskJSON(t))
}

// batchIDs reads a repeated id parameter (also comma-separated), normalised
// to hex; an absent parameter, malformed ids and too many ids are 422.
func batchIDs(q *httpjson.Query, name string) []string {
	if !q.Require(name) {
		return nil
	}
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

// ownConversation loads a conversation of the caller; another user's is
// ErrNotFound.
func (a *API) ownConversation(r *http.Request, rawID string) (acs.Conversation, error) {
	return a.conv.Get(r.Context(), userOf(r).ID, rawID)
}

// getConversations: GET /api/v1/app-conversations?ids=... in request order,
// null for missing or another user's.
func (a *API) getConversations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	ids := batchIDs(q, "ids")
	if !q.OK(w) {
		return
	}
	out := make([]*v1wire.Conversation, len(ids))
	v := a.view()
	for i, id := range ids {
		c, err := a.ownConversation(r, id)
		if errors.Is(err, acs.ErrNotFound) {
			continue
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		cj := a.conversationJSON(r.Context(), v, c)
		out[i] = &cj
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// conversationFilter reads the search and count filters.
func conversationFilter(q *httpjson.Query) acs.ConversationFilter {
	f := acs.ConversationFilter{CreatedGTE: q.Time("created_at__gte"), CreatedLT: q.Time("created_at__lt"),
		UpdatedGTE: q.Time("updated_at__gte"), UpdatedLT: q.Time("updated_at__lt"),
		IncludeSubConversations: q.Bool("include_sub_conversations", false)}
	if s := q.String("title__contains"); s != nil {
		f.TitleContains = *s
	}
	if s := q.String("sandbox_id__eq"); s != nil {
		f.SandboxID = *s
	}
	return f
}

// searchConversations: GET /api/v1/app-conversations/search, newest first.
func (a *API) searchConversations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	f := conversationFilter(q)
	opts := listOptions(q)
	if !q.OK(w) {
		return
	}
	page, err := a.conv.Search(r.Context(), userOf(r).ID, f, opts)
	if errors.Is(err, acs.ErrInvalid) {
		writeBadPageID(w)
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	v := a.view()
	items := make([]v1wire.Conversation, 0, len(page.Items))
	for _, c := range page.Items {
		items = append(items, a.conversationJSON(r.Context(), v, c))
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items, page.Next))
}

// countConversations: GET /api/v1/app-conversations/count (the search's
// filters; sub-conversations counted only with include_sub_conversations,
// like the search).
func (a *API) countConversations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	f := conversationFilter(q)
	if !q.OK(w) {
		return
	}
	n, err := a.conv.Count(r.Context(), userOf(r).ID, f)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, n)
}

func listOptions(q *httpjson.Query) acs.ListOptions {
	opts := acs.ListOptions{Limit: q.Int("limit", 100, 1, 100)}
	if p := q.String("page_id"); p != nil {
		opts.PageToken = *p
	}
	return opts
}

// updateConversation: PATCH /api/v1/app-conversations/{id}.
func (a *API) updateConversation(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	var req v1wire.UpdateRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	u, invalid := req.Validate()
	c, err = a.conv.Update(r.Context(), c, u, invalid)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, a.conversationJSON(r.Context(), a.view(), c))
}

// deleteConversation: DELETE /api/v1/app-conversations/{id}. Its
// sub-conversations go first; each is deleted on the agent server (or
// marked for deletion there when its sandbox is paused), with its record,
// events, start tasks and queued messages; its slot is released, and a
// sandbox left without conversations is deleted too.
func (a *API) deleteConversation(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := a.conv.Delete(r.Context(), c); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// sendMessage: POST /api/v1/app-conversations/{id}/send-message. A paused
// sandbox is resumed first; the message goes to the agent server.
func (a *API) sendMessage(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	var req v1wire.SendMessageRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if err := a.conv.SendMessage(r.Context(), c, req.Content, req.Run); err != nil {
		writeConvErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.SendMessageResponse{Success: true, SandboxStatus: string(acs.SandboxRunning)})
}

// writeConvErr answers an error of the conversation service: an agent
// server's failure as writeAgentErr does, anything else (content holding
// a secret's value, a full message queue) as writeErr does.
func writeConvErr(w http.ResponseWriter, err error) {
	var ae *conversations.AgentError
	if errors.As(err, &ae) {
		writeAgentErr(w, ae.Err)
		return
	}
	writeErr(w, err)
}

// writeAgentErr answers a failed call to an agent server (agentError).
func writeAgentErr(w http.ResponseWriter, err error) {
	var he *client.HTTPError
	if !errors.As(err, &he) {
		slog.Warn("api: agent server unreachable", "error", err)
	}
	v1wire.WriteError(w, agentError(err))
}

// agentError is the domain error of a failed call to an agent server: its
// 422 is EREFUSED (its detail passed on), its 507 (the sandbox's disk is
// full: nothing was changed there, and the caller may retry once space is
// freed) ESTORAGEFULL, any other answer, or none, EUPSTREAM.
func agentError(err error) *acs.Error {
	var he *client.HTTPError
	if !errors.As(err, &he) {
		return acs.Errorf(acs.EUPSTREAM, "Failed to reach agent server.")
	}
	switch he.Status {
	case http.StatusUnprocessableEntity:
		return &acs.Error{Code: acs.EREFUSED, Message: he.Detail}
	case http.StatusInsufficientStorage:
		return &acs.Error{Code: acs.ESTORAGEFULL,
			Message: "Insufficient storage: the sandbox's disk is full, so nothing was changed; free space in the workspace or retry later"}
	}
	return acs.Errorf(acs.EUPSTREAM, "Agent server error: %d: %s", he.Status, he.Detail)
}

// downloadConversation: GET /api/v1/app-conversations/{id}/download: a zip
// of every stored event (event_{i:06d}_{id}.json, in order) and meta.json
// (the conversation, without its session key). It works for read-only
// conversations.
func (a *API) downloadConversation(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	ctx := r.Context()
	var zw *zip.Writer
	i := 0
	started, err := a.conv.Transcript(ctx, c.ID, func() {
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="conversation_%s.zip"`, c.ID))
		zw = zip.NewWriter(w)
	}, func(ev []byte) error {
		v, err := strictjson.Parse(ev)
		id := ""
		if err == nil {
			if idv, ok := v.Get("id"); ok {
				id = idv.Str
			}
		}
		f, err := zw.Create(fmt.Sprintf("event_%06d_%s.json", i, id))
		if err != nil {
			return err
		}
		f.Write(ev)
		i++
		return nil
	})
	if !started {
		writeErr(w, err)
		return
	}
	if err != nil {
		slog.Error("api: download events", "conversation", c.ID, "error", err)
		return // the zip is left unterminated: the client sees a broken download
	}
	// A download is a transcript to keep or share: it never carries the
	// sandbox's live session key (which runs commands in the sandbox).
	cj := a.conversationJSON(ctx, a.view(), c)
	cj.SessionAPIKey = nil
	meta, _ := strictjson.Marshal(cj)
	if f, err := zw.Create("meta.json"); err == nil {
		f.Write(meta)
	}
	zw.Close()
}
