package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// ownSandbox loads a sandbox of the caller; another user's is ErrNotFound.
func (a *API) ownSandbox(r *http.Request, id string) (acs.Sandbox, error) {
	return a.life.Get(r.Context(), userOf(r).ID, id)
}

// pauseSandbox: POST /api/v1/sandboxes/{sandbox_id}/pause — releases the
// sandbox's compute for every conversation on it; the workspace is kept.
func (a *API) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.ownSandbox(r, r.PathValue("sandbox_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if _, err := a.life.Pause(r.Context(), sb); err != nil {
		writeErr(w, sandboxGone(sb, err))
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// resumeSandbox: POST /api/v1/sandboxes/{sandbox_id}/resume — starts a
// paused sandbox, or an ERROR one whose workspace still exists, again with a
// new session key (429 at the running cap; 410 for a MISSING sandbox, 503
// for an ERROR one that cannot be started again).
func (a *API) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.ownSandbox(r, r.PathValue("sandbox_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	sb, err = a.life.Resume(r.Context(), sb)
	if err != nil {
		writeErr(w, sandboxGone(sb, err))
		return
	}
	// Best effort, briefly: once it answers, messages queued and
	// conversations deleted while it was paused are dealt with.
	a.life.Ready(r.Context(), sb, 5*time.Second)
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// deleteSandbox: DELETE /api/v1/sandboxes/{sandbox_id} (or ?sandbox_id=, the
// reference's form). The workspace is archived internally and deleted; the
// sandbox reads MISSING and its conversations become read-only (their
// transcripts stay).
func (a *API) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("sandbox_id")
	q := httpjson.NewQuery(r)
	if s := q.String("sandbox_id"); s != nil && *s != "" {
		if id != "" && id != *s {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "sandbox_id"}, Msg: "sandbox_id differs from the path", Type: "value_error"})
		}
		id = *s
	}
	if id == "" {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "sandbox_id"}, Msg: "Field required", Type: "missing"})
	}
	if !q.OK(w) {
		return
	}
	sb, err := a.ownSandbox(r, id)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := a.life.DeleteByUser(r.Context(), sb); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}

// sandboxGone words a MISSING sandbox's refusal for the sandbox routes.
func sandboxGone(sb acs.Sandbox, err error) error {
	if errors.Is(err, acs.ErrGone) {
		return acs.Errorf(acs.EGONE, "Sandbox %s no longer exists; its conversations are read-only", sb.ID)
	}
	return err
}

// getSandboxSpecs: GET /api/v1/sandbox-specs?id=... in request order, null
// for unknown ids.
func (a *API) getSandboxSpecs(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	q.Require("id")
	ids := q.Strings("id")
	if len(ids) > maxBatch {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "id"}, Msg: "at most 100 ids per request", Type: "too_long"})
	}
	if !q.OK(w) {
		return
	}
	out := make([]*v1wire.Spec, len(ids))
	for i, id := range ids {
		if s, ok := a.life.Config.Spec(id); ok && id != "" {
			sj := specJSON(s)
			out[i] = &sj
		}
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

func specJSON(s acs.SandboxSpec) v1wire.Spec {
	env := s.InitialEnv
	if env == nil {
		env = map[string]string{}
	}
	return v1wire.Spec{ID: s.ID, Command: s.Command, CreatedAt: events.At(s.CreatedAt), InitialEnv: env, WorkingDir: s.WorkingDir}
}
