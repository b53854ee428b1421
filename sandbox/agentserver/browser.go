package agentserver

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/pathguard"
)

// Browsers. The OpenHands web frontend, served from the control plane's
// origin, calls the agent server directly (its base URL is the
// conversation_url without /api/conversations/...): Stop, the Changes tab,
// Diff, event counts and the event socket, with X-Session-API-Key. The
// control plane lets its public origin in with OH_ALLOW_CORS_ORIGINS_0;
// the frontend names the workspace /workspace/project, OpenHands'
// canonical path, wherever the sandbox's workspace really is.

// corsAllowHeaders are the request headers a browser may always send.
const corsAllowHeaders = "Content-Type, X-Session-API-Key, Authorization"

// cors answers the cross-origin requests of browsers on the configured
// origins (Config.CORSOrigins; "*" is any): a preflight (OPTIONS) from one
// of them is 204 with the methods, the headers asked for (X-Session-API-Key
// among them) and, when asked, private-network access allowed; other
// requests from them get Access-Control-Allow-Origin with their origin.
// Requests from any other origin get no CORS headers, so the browser
// refuses the answer (a preflight reaches the routes and is refused there).
// Without configured origins the handler is h unchanged.
func (s *Server) cors(h http.Handler) http.Handler {
	if len(s.cfg.CORSOrigins) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || !s.originAllowed(origin) {
			h.ServeHTTP(w, r)
			return
		}
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Credentials", "true")
		if r.Method == http.MethodOptions {
			hd.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			allow := corsAllowHeaders
			if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" && headerList(asked) {
				allow += ", " + asked
			}
			hd.Set("Access-Control-Allow-Headers", allow)
			hd.Set("Access-Control-Max-Age", "600")
			if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
				hd.Set("Access-Control-Allow-Private-Network", "true")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// headerList reports whether v is a comma-separated list of header names.
func headerList(v string) bool {
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return false
		}
		for _, c := range name {
			if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// originAllowed reports whether a browser page of origin may call the
// server: a configured origin matches it exactly (case aside; "*" matches
// any), or both are the loopback interface on the same scheme and port
// ("http://localhost:3000" for "http://127.0.0.1:3000": `acs serve` names
// itself by address, the person may type either).
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.CORSOrigins {
		o = strings.TrimRight(o, "/")
		if o == "*" || strings.EqualFold(o, origin) || sameLoopback(o, origin) {
			return true
		}
	}
	return false
}

// sameLoopback reports whether origins a and b both name the loopback
// interface, with the same scheme and port.
func sameLoopback(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || !strings.EqualFold(ua.Scheme, ub.Scheme) || ua.Port() != ub.Port() || ua.Port() == "" {
		return false
	}
	return loopback(ua.Hostname()) && loopback(ub.Hostname())
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// socketOrigins answers 403 to a WebSocket upgrade that socketOriginOK
// refuses, before any route sees it, so every socket route applies the
// same rule.
func (s *Server) socketOrigins(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUpgrade(r) && !s.socketOriginOK(r) {
			httpjson.WriteDetail(w, http.StatusForbidden, "Origin not allowed")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isUpgrade reports whether r is for a socket: it asks to switch protocols
// (any Upgrade header) or its path is under /sockets/.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" || strings.HasPrefix(r.URL.Path, "/sockets/")
}

// socketOriginOK reports whether a WebSocket upgrade may proceed: one
// without an Origin (not a browser), any while no CORS origin is configured
// (the session key is the only credential, and a page cannot learn it), one
// from the server's own origin, or from an allowed one (originAllowed).
// Browsers do not apply CORS to WebSockets, so this is the check that
// refuses a page from elsewhere.
func (s *Server) socketOriginOK(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.CORSOrigins) == 0 || s.originAllowed(origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// CanonicalWorkspace is the path OpenHands clients name the workspace by.
const CanonicalWorkspace = "/workspace/project"

// pathRoutes are the routes that take a workspace path, in the query
// parameter path or (their legacy forms) after the prefix.
var pathRoutes = []string{"/api/git/changes", "/api/git/diff", "/api/file/upload", "/api/file/download"}

// canonicalWorkspace rewrites, in a request to a route that takes a
// workspace path (pathRoutes), a path under CanonicalWorkspace to the same
// path under the project root (projectRoot). The route then confines the
// result as it would any path (pathguard: no ".." or symbolic link leads
// out). A directory CanonicalWorkspace that exists inside the roots is
// taken as it is.
func (s *Server) canonicalWorkspace(r *http.Request) {
	for _, route := range pathRoutes {
		switch {
		case r.URL.Path == route:
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil || len(q["path"]) == 0 {
				return
			}
			changed := false
			for i, p := range q["path"] {
				if np, ok := s.fromCanonical(p); ok {
					q["path"][i], changed = np, true
				}
			}
			if changed {
				r.URL.RawQuery = q.Encode()
			}
			return
		case strings.HasPrefix(r.URL.Path, route+"/"):
			if np, ok := s.fromCanonical(strings.TrimPrefix(r.URL.Path, route)); ok {
				r.URL.Path, r.URL.RawPath = route+np, ""
			}
			return
		}
	}
}

// fromCanonical maps p, when it is CanonicalWorkspace or lies below it
// (after cleaning), to the same place under the project root; ok is false
// for any other path, and when CanonicalWorkspace is a real directory in
// the roots.
func (s *Server) fromCanonical(p string) (string, bool) {
	if p == "" || !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	clean := filepath.Clean(p)
	if !pathguard.Within(CanonicalWorkspace, clean) {
		return "", false
	}
	if fi, err := os.Stat(CanonicalWorkspace); err == nil && fi.IsDir() {
		if _, err := pathguard.Resolve(s.roots(), CanonicalWorkspace); err == nil {
			return "", false
		}
	}
	root := s.projectRoot()
	if root == "" {
		return "", false
	}
	return filepath.Join(root, strings.TrimPrefix(clean, CanonicalWorkspace)), true
}

// projectRoot is the directory CanonicalWorkspace stands for: the working
// directory the conversations share (the only conversation's, or the
// deepest directory holding every conversation's), or the workspace when
// there is no conversation or that directory is not inside the workspace
// or a working directory.
func (s *Server) projectRoot() string {
	ws := s.cfg.WorkspaceDir
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	s.mu.RLock()
	var dirs []string
	for _, c := range s.convs {
		if d := c.WorkDir(); d != "" && filepath.IsAbs(d) {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	s.mu.RUnlock()
	if len(dirs) == 0 {
		return ws
	}
	common := dirs[0]
	for _, d := range dirs[1:] {
		for !pathguard.Within(common, d) {
			common = filepath.Dir(common)
		}
	}
	if pathguard.Within(ws, common) {
		return common
	}
	for _, d := range dirs {
		if d == common {
			return common
		}
	}
	return ws
}
