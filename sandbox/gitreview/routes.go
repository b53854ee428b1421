package gitreview

import (
	"errors"
	"net/http"
	"path/filepath"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/pathguard"
	"github.com/acs-project/acs/sandbox/wire"
)

// Routes mounts the git endpoints on mux, each handler wrapped with wrap
// (the caller's authentication; nil means none):
//
//	GET /api/git/changes?path=&ref=           -> []Change
//	GET /api/git/diff?path=&ref=&commit=      -> Diff
//	GET /api/git/changes/{path...}?ref=       legacy: path without its leading slash
//	GET /api/git/diff/{path...}?ref=&commit=  legacy: path without its leading slash
//
// The path must be given (422 "missing" at query.path, or path.path for the
// legacy forms), must be absolute (422 "value_error" at the same location)
// and, after cleaning and resolving symbolic links of its existing part,
// must lie inside one of roots() (403 {"detail": "Path is outside the
// workspace"}; this covers ".." traversal and symbolic links that lead out).
// An otherwise unusable path (NUL byte, symbolic-link loop) is 400. Both
// ref and commit given is 422 "value_error" at query.commit, a ref or commit
// git could take for an option 422 "value_error" at its own location. Git
// failures, unknown revisions and files over MaxContentBytes are 400
// {"detail": ...}. roots is called on every request.
func Routes(mux *http.ServeMux, roots func() []string, wrap func(http.HandlerFunc) http.Handler) {
	if wrap == nil {
		wrap = func(h http.HandlerFunc) http.Handler { return h }
	}
	h := &handlers{roots: roots}
	mux.Handle("GET /api/git/changes", wrap(h.changes(false)))
	mux.Handle("GET /api/git/changes/{path...}", wrap(h.changes(true)))
	mux.Handle("GET /api/git/diff", wrap(h.diff(false)))
	mux.Handle("GET /api/git/diff/{path...}", wrap(h.diff(true)))
}

type handlers struct {
	roots func() []string
}

// target extracts and checks the path parameter. On failure it writes the
// response and returns ok false.
func (h *handlers) target(w http.ResponseWriter, r *http.Request, legacy bool) (string, bool) {
	loc := []any{"query", "path"}
	var p string
	if legacy {
		seg := r.PathValue("path")
		loc = []any{"path", "path"}
		if seg == "" {
			wire.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Field required", Type: "missing"}})
			return "", false
		}
		p = "/" + seg
	} else {
		v := wire.NewQuery(r).String("path")
		if v == nil {
			wire.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Field required", Type: "missing"}})
			return "", false
		}
		p = *v
	}
	var roots []string
	if h.roots != nil {
		roots = h.roots()
	}
	if _, err := pathguard.Resolve(roots, p); err != nil {
		switch {
		case errors.Is(err, pathguard.ErrNotAbsolute):
			wire.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Value error, Path must be absolute", Type: "value_error"}})
		case errors.Is(err, pathguard.ErrOutsideRoots):
			wire.WriteDetail(w, http.StatusForbidden, err.Error())
		default:
			wire.WriteDetail(w, http.StatusBadRequest, err.Error())
		}
		return "", false
	}
	// Git is given the cleaned path, not the resolved one, so that a
	// tracked symbolic link is diffed as the link git records.
	return filepath.Clean(p), true
}

func (h *handlers) changes(legacy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.target(w, r, legacy)
		if !ok {
			return
		}
		ref := ""
		if v := wire.NewQuery(r).String("ref"); v != nil {
			ref = *v
		}
		list, err := Changes(r.Context(), p, ref)
		if err != nil {
			if errors.Is(err, ErrInvalidRef) {
				invalidParam(w, "ref", ErrInvalidRef.Error())
				return
			}
			wire.WriteDetail(w, http.StatusBadRequest, err.Error())
			return
		}
		wire.WriteJSON(w, http.StatusOK, list)
	}
}

func (h *handlers) diff(legacy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.target(w, r, legacy)
		if !ok {
			return
		}
		q := wire.NewQuery(r)
		var ref, commit string
		if v := q.String("ref"); v != nil {
			ref = *v
		}
		if v := q.String("commit"); v != nil {
			commit = *v
		}
		d, err := FileDiff(r.Context(), p, ref, commit)
		if err != nil {
			switch {
			case errors.Is(err, ErrRefAndCommit):
				invalidParam(w, "commit", ErrRefAndCommit.Error())
			case errors.Is(err, ErrInvalidRef) && commit != "":
				invalidParam(w, "commit", ErrInvalidRef.Error())
			case errors.Is(err, ErrInvalidRef):
				invalidParam(w, "ref", ErrInvalidRef.Error())
			default:
				wire.WriteDetail(w, http.StatusBadRequest, err.Error())
			}
			return
		}
		wire.WriteJSON(w, http.StatusOK, d)
	}
}

// invalidParam writes the 422 body of a query parameter that fails
// validation.
func invalidParam(w http.ResponseWriter, name, msg string) {
	wire.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", name}, Msg: "Value error, " + msg, Type: "value_error"}})
}
