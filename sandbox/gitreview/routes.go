package gitreview

import (
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/pathguard"
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
// legacy forms), must be absolute (422 "value_error" at the same location),
// must be a path a file can have (422 "Value error, Invalid path: <reason>"
// for a NUL byte, over pathguard.PathMax bytes, a name over
// pathguard.NameMax bytes, looping symbolic links) and, after cleaning and
// resolving symbolic links of its existing part, must lie inside one of
// roots() (403 {"detail": "Path is outside the workspace"}; this covers ".."
// traversal and symbolic links that lead out). Both ref and commit given is
// 422 "value_error" at query.commit, a ref or commit git could take for an
// option 422 "value_error" at its own location, an unknown revision 400.
// For diff, a directory is 400 "Path is a directory: <path>", another
// non-regular file (a FIFO, a socket, a device) 400 "Not a regular file:
// <path>", and a file over MaxContentBytes 413. Any other failure (git
// missing or failing, a corrupt repository, a timeout) is the server's:
// 500. No detail names a path other than relative to the roots
// (pathguard.Rel, pathguard.Scrub). roots is called on every request.
func Routes(mux Mux, roots func() []string, wrap func(http.HandlerFunc) http.Handler) {
	if wrap == nil {
		wrap = func(h http.HandlerFunc) http.Handler { return h }
	}
	h := &handlers{roots: roots}
	mux.Handle("GET /api/git/changes", wrap(h.changes(false)))
	mux.Handle("GET /api/git/changes/{path...}", wrap(h.changes(true)))
	mux.Handle("GET /api/git/diff", wrap(h.diff(false)))
	mux.Handle("GET /api/git/diff/{path...}", wrap(h.diff(true)))
}

// Mux is where Routes registers its handlers (an *http.ServeMux, or a
// wrapper that records the patterns).
type Mux interface {
	Handle(pattern string, h http.Handler)
}

type handlers struct {
	roots func() []string
}

// target extracts and checks the path parameter. It returns the cleaned
// path and the roots it was checked against. On failure it writes the
// response and returns ok false.
func (h *handlers) target(w http.ResponseWriter, r *http.Request, legacy bool) (string, []string, bool) {
	loc := []any{"query", "path"}
	var p string
	if legacy {
		seg := r.PathValue("path")
		loc = []any{"path", "path"}
		if seg == "" {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Field required", Type: "missing"}})
			return "", nil, false
		}
		p = "/" + seg
	} else {
		v := httpjson.NewQuery(r).String("path")
		if v == nil {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Field required", Type: "missing"}})
			return "", nil, false
		}
		p = *v
	}
	var roots []string
	if h.roots != nil {
		roots = h.roots()
	}
	if _, err := pathguard.Resolve(roots, p); err != nil {
		switch {
		case errors.Is(err, pathguard.ErrNotAbsolute) || errors.Is(err, pathguard.ErrInvalidPath):
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Value error, " + err.Error(), Type: "value_error"}})
		case errors.Is(err, pathguard.ErrOutsideRoots):
			httpjson.WriteDetail(w, http.StatusForbidden, err.Error())
		default:
			httpjson.WriteDetail(w, http.StatusBadRequest, err.Error())
		}
		return "", nil, false
	}
	// Git is given the cleaned path, not the resolved one, so that a
	// tracked symbolic link is diffed as the link git records.
	return filepath.Clean(p), roots, true
}

func (h *handlers) changes(legacy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, roots, ok := h.target(w, r, legacy)
		if !ok {
			return
		}
		ref := ""
		if v := httpjson.NewQuery(r).String("ref"); v != nil {
			ref = *v
		}
		list, err := Changes(r.Context(), p, ref)
		if err != nil {
			if errors.Is(err, ErrInvalidRef) {
				invalidParam(w, "ref", ErrInvalidRef.Error())
				return
			}
			failure(w, r, roots, p, err)
			return
		}
		httpjson.WriteJSON(w, http.StatusOK, list)
	}
}

func (h *handlers) diff(legacy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, roots, ok := h.target(w, r, legacy)
		if !ok {
			return
		}
		q := httpjson.NewQuery(r)
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
				failure(w, r, roots, p, err)
			}
			return
		}
		httpjson.WriteJSON(w, http.StatusOK, d)
	}
}

// failure answers a failed Changes or FileDiff of p: the client's mistakes
// as 4xx naming p relative to the roots, anything else as 500 with the
// roots scrubbed from the message.
func failure(w http.ResponseWriter, r *http.Request, roots []string, p string, err error) {
	name := pathguard.Rel(roots, p)
	switch {
	case errors.Is(err, ErrUnknownRevision):
		httpjson.WriteDetail(w, http.StatusBadRequest, pathguard.Scrub(roots, err.Error()))
	case errors.Is(err, ErrIsDirectory):
		httpjson.WriteDetail(w, http.StatusBadRequest, "Path is a directory: "+name)
	case errors.Is(err, ErrNotRegular):
		httpjson.WriteDetail(w, http.StatusBadRequest, "Not a regular file: "+name)
	case errors.Is(err, ErrTooLarge):
		httpjson.WriteDetail(w, http.StatusRequestEntityTooLarge, name+": "+ErrTooLarge.Error())
	default:
		slog.WarnContext(r.Context(), "gitreview: git failed", "path", p, "error", err)
		httpjson.WriteDetail(w, http.StatusInternalServerError, "Git failed: "+pathguard.Scrub(roots, err.Error()))
	}
}

// invalidParam writes the 422 body of a query parameter that fails
// validation.
func invalidParam(w http.ResponseWriter, name, msg string) {
	httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", name}, Msg: "Value error, " + msg, Type: "value_error"}})
}
