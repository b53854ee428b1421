package acs

import "strings"

// A Route names an operation of the API. A message for the user that
// tells them which operation to use holds a reference to it (Ref), never
// its path: the HTTP layer writes each reference as the operation's method
// and path. Services and stored records stay free of routes.
type Route string

// The routes messages refer to, by the API's route names.
const (
	RoutePauseSandbox   Route = "pause_sandbox"
	RouteResumeSandbox  Route = "resume_sandbox"
	RouteCreateSecret   Route = "create_secret"
	RouteUpdateSecret   Route = "update_secret"
	RouteUpdateSettings Route = "update_settings"
)

// Ref is the reference to r in a message. An id, when given, fills the
// route's path parameter; ids hold no space, ':' or brace.
func (r Route) Ref(id ...string) string {
	return "{route:" + strings.Join(append([]string{string(r)}, id...), ":") + "}"
}
