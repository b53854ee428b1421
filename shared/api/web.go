package api

import (
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/acs-project/acs/internal/httpjson"
)

// Frontend is a web frontend that Site serves at /.
type Frontend struct {
	// Files are its files: index.html at the root and what it loads.
	Files fs.FS
	// CSP is the Content-Security-Policy its documents need, without
	// object-src, base-uri and frame-ancestors, which Site adds ("" for a
	// frontend whose needs are unknown).
	CSP string
}

// frontendCSP is what Site adds to every frontend's policy: no plugins,
// no <base> elsewhere, and no framing by any page.
const frontendCSP = "object-src 'none'; base-uri 'self'; frame-ancestors 'none'"

// Site is acs serve's whole HTTP handler: the routes of the table (the V1
// API under /api/v1, the sign-in pages, /openapi.json and /docs) and, for
// every other path, the web frontend:
//
//   - with web.Files, its files, with single-page-app fallback: a path that
//     is no file (and has no file extension) is index.html. A page visit
//     (a GET or HEAD whose Accept names text/html) without a valid session
//     goes to /login?next=<the path> instead; other files (scripts,
//     styles, images) are served to anyone, as a frontend build is public.
//     Each answer carries web.CSP with frontendCSP added.
//   - with web.Files nil, "/" is a small page saying who is signed in,
//     with a sign-out button (signed out: a redirect to /login).
//
// acs serve passes ACS's own UI (package web) or, with ACS_WEB_DIR, that
// directory.
//
// Every answer, the API's included, carries X-Content-Type-Options:
// nosniff and X-Frame-Options: DENY: no page of another origin may frame
// ACS, as every port of a host is the same site and gets its cookie.
//
// Paths under /api/ and /sockets/ never fall back to the frontend.
func (a *API) Site(web Frontend) http.Handler {
	routes := a.Handler()
	mux := http.NewServeMux()
	for _, p := range []string{"/api/", "/sockets/", "/login", "/login/", "/logout", "/openapi.json", "/docs"} {
		mux.Handle(p, routes)
	}
	if web.Files == nil {
		mux.HandleFunc("GET /{$}", a.Home)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			httpjson.WriteDetail(w, http.StatusNotFound, "Not Found")
		})
		return secured(canonicalWrites(mux))
	}
	mux.Handle("/", a.webFiles(web))
	return secured(canonicalWrites(mux))
}

// secured sets the headers every answer carries: no MIME sniffing and no
// framing.
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

// webFiles serves the frontend's files with single-page-app fallback.
func (a *API) webFiles(web Frontend) http.Handler {
	csp := frontendCSP
	if web.CSP != "" {
		csp = strings.TrimRight(strings.TrimSpace(web.CSP), ";") + "; " + frontendCSP
	}
	fsys := web.Files
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpjson.WriteDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		isFile := false
		if name != "" {
			if fi, err := fs.Stat(fsys, name); err == nil && !fi.IsDir() {
				isFile = true
			}
		}
		if !isFile && path.Ext(name) != "" {
			httpjson.WriteDetail(w, http.StatusNotFound, "Not Found")
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/html") {
			if _, ok := a.SessionUser(r); !ok {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
		}
		if !isFile || name == "index.html" {
			name = "index.html"
			w.Header().Set("Cache-Control", "no-cache")
		}
		http.ServeFileFS(w, r, fsys, name)
	})
}
