package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// getStartTasks: GET /api/v1/app-conversations/start-tasks?ids=... returns
// the tasks in request order, null for missing or another user's.
func (a *API) getStartTasks(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	ids := batchIDs(q, "ids")
	if !q.OK(w) {
		return
	}
	user := userOf(r)
	out := make([]*v1wire.StartTask, len(ids))
	for i, id := range ids {
		t, err := a.start.OwnTask(r.Context(), user.ID, id)
		if errors.Is(err, acs.ErrNotFound) {
			continue
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		tj := taskJSON(t)
		out[i] = &tj
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// taskFilter reads conversation_id__eq and created_at__gte.
func taskFilter(q *httpjson.Query) acs.StartTaskFilter {
	f := acs.StartTaskFilter{CreatedGTE: q.Time("created_at__gte")}
	if s := q.String("conversation_id__eq"); s != nil {
		id, err := acs.NormalizeID(*s)
		if err != nil {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "conversation_id__eq"}, Msg: "Input should be a valid UUID", Type: "uuid_parsing"})
		}
		f.ConversationID = id
	}
	return f
}

// searchStartTasks: GET /api/v1/app-conversations/start-tasks/search.
func (a *API) searchStartTasks(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	f := taskFilter(q)
	order := acs.StartTaskSort(q.Enum("sort_order", string(acs.SortCreatedAtDesc), acs.StartTaskSort("").EnumValues()))
	opts := listOptions(q)
	if !q.OK(w) {
		return
	}
	page, err := a.start.SearchTasks(r.Context(), userOf(r).ID, f, order, opts)
	if errors.Is(err, acs.ErrInvalid) {
		writeBadPageID(w)
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	items := make([]v1wire.StartTask, 0, len(page.Items))
	for _, t := range page.Items {
		items = append(items, taskJSON(t))
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items, page.Next))
}

// countStartTasks: GET /api/v1/app-conversations/start-tasks/count.
func (a *API) countStartTasks(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	f := taskFilter(q)
	if !q.OK(w) {
		return
	}
	n, err := a.start.CountTasks(r.Context(), userOf(r).ID, f)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, n)
}

// streamStart: POST /api/v1/app-conversations/stream-start. It answers a
// JSON array written as the start progresses: the task as created, then the
// task at each status change, until READY or ERROR (or the client leaves).
func (a *API) streamStart(w http.ResponseWriter, r *http.Request) {
	var req v1wire.StartRequest
	if !httpjson.DecodeBody(w, r, &req, true) {
		return
	}
	t, err := a.start.Submit(r.Context(), userOf(r), req)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	// write buffers an item; the items of one read go out in one flush.
	write := func(prefix string, t acs.StartTask) {
		b, _ := strictjson.Marshal(taskJSON(t))
		w.Write([]byte(prefix))
		w.Write(b)
	}
	// sent counts the task's steps streamed so far: a read streams the
	// status of every step recorded since (the worker may run several
	// steps between reads), so each status appears once, in order. A
	// start placed as it was submitted is created past WORKING: its first
	// step goes now, the others with the first read.
	first := t
	if len(t.Steps) > 1 {
		first = taskAt(t, 0)
	}
	write("[", first)
	flush()
	last, sent := first.Status, len(first.Steps)
	// A store that tells this process of the task's writes wakes the
	// stream as each is stored (locally, where the worker runs in this
	// process); the poll is the pace without it, and a safety net with it.
	poll := min(max(a.life.Config.PollInterval/4, 20*time.Millisecond), 500*time.Millisecond)
	var limit <-chan time.Time
	if a.d.StreamLimit > 0 {
		limit = time.After(a.d.StreamLimit)
	}
	for !last.Done() {
		// Watch, then read: a write in between still wakes the wait.
		changed, stop := a.start.WatchTask(t.ID)
		cur, err := a.start.Task(r.Context(), t.ID)
		if errors.Is(err, acs.ErrNotFound) {
			stop()
			break
		}
		if err == nil {
			for _, item := range reachedSince(cur, sent, last) {
				write(",\n", item)
			}
			flush()
			last, sent = cur.Status, max(sent, len(cur.Steps))
			if last.Done() {
				stop()
				break
			}
		}
		select {
		case <-r.Context().Done():
			stop()
			return
		case <-limit:
			stop()
			// A buffering proxy (API Gateway) answers only once the body
			// is complete: end a well-formed array before its timeout;
			// the client polls the start task from here.
			w.Write([]byte("]"))
			flush()
			return
		case <-changed:
		case <-time.After(poll):
		}
		stop()
	}
	w.Write([]byte("]"))
	flush()
}

// reachedSince is the task as it looked at each status it reached after its
// first sent steps and after status last, oldest first: cur itself for its
// current status, an earlier status as the task was when it entered that
// status (see taskAt).
func reachedSince(cur acs.StartTask, sent int, last acs.StartTaskStatus) []acs.StartTask {
	var out []acs.StartTask
	for i := sent; i < len(cur.Steps)-1; i++ {
		if s := cur.Steps[i].Status; s != last && s != cur.Status {
			out = append(out, taskAt(cur, i))
			last = s
		}
	}
	if cur.Status != last {
		out = append(out, cur)
	}
	return out
}

// taskAt is task t as GET start-tasks showed it while at its step i (not its
// last): that status, the steps up to it (its own detail is recorded only
// when it ends), updated when it began, and only the fields the start flow
// had set by then: sandbox_id and placement from WAITING_FOR_SANDBOX,
// agent_server_url from PREPARING_REPOSITORY (when the sandbox answered),
// detail and app_conversation_id only at ERROR and READY, which are last.
func taskAt(t acs.StartTask, i int) acs.StartTask {
	step := t.Steps[i]
	at := t
	at.Status, at.UpdatedAt = step.Status, step.StartedAt
	at.Steps = append([]acs.StepTiming(nil), t.Steps[:i+1]...)
	at.Steps[i].Detail = ""
	at.Detail, at.AppConversationID = nil, nil
	switch step.Status {
	case acs.TaskWorking:
		at.SandboxID, at.Placement, at.AgentServerURL = nil, "", nil
	case acs.TaskWaitingForSandbox:
		at.AgentServerURL = nil
	}
	return at
}
