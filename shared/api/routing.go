package api

import (
	"net/http"
	"path"
	"strings"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/acs"
)

// probeMethods are the methods a path is tried with to say which it allows.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// noRoute answers a request no route of mux serves under its method: 405
// with Allow when routes serve its path under other methods, 404 otherwise.
// catchAll is the pattern that sent the request here.
func noRoute(mux *http.ServeMux, catchAll string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range probeMethods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := mux.Handler(probe); p != "" && p != catchAll {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			writeNoRoute(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		httpjson.WriteDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	}
}

// canonicalWrites refuses a request that would change something at a path
// that is not in canonical form (a "." or ".." segment, a repeated slash).
// net/http's mux would redirect it to the cleaned path, which a client
// follows with the same method and body: a write meant for one resource
// would reach another. Reads are still redirected.
func canonicalWrites(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodConnect:
		default:
			if p := r.URL.EscapedPath(); p != cleanPath(p) {
				writeErr(w, acs.Errorf(acs.ENOTFOUND,
					"Not Found: the path is not in canonical form (it has a '.' or '..' segment or a repeated slash)"))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// cleanPath is the canonical form of p that net/http's mux redirects to.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}
