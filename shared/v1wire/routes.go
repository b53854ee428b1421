package v1wire

import (
	"regexp"
	"strings"

	"github.com/acs-project/acs/shared/acs"
)

// RoutePaths is how a reference to a route reads in a message: the
// route's method and path, with "{id}" where a reference's id goes.
var RoutePaths = map[acs.Route]string{
	acs.RoutePauseSandbox:   "POST /api/v1/sandboxes/{id}/pause",
	acs.RouteResumeSandbox:  "POST /api/v1/sandboxes/{id}/resume",
	acs.RouteCreateSecret:   "POST /api/v1/secrets",
	acs.RouteUpdateSecret:   "PUT /api/v1/secrets/{id}",
	acs.RouteUpdateSettings: "POST /api/v1/settings",
}

var routeRef = regexp.MustCompile(`\{route:([a-z_]+)(?::([^\s:{}]*))?\}`)

// WithRoutes is msg with each reference to a route (acs.Route.Ref)
// written as its method and path. A reference to a route it does not know
// is left as it is.
func WithRoutes(msg string) string {
	if !strings.Contains(msg, "{route:") {
		return msg
	}
	return routeRef.ReplaceAllStringFunc(msg, func(ref string) string {
		m := routeRef.FindStringSubmatch(ref)
		path, ok := RoutePaths[acs.Route(m[1])]
		if !ok {
			return ref
		}
		if m[2] != "" {
			path = strings.Replace(path, "{id}", m[2], 1)
		}
		return path
	})
}
