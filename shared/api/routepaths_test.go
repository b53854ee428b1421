package api

import (
	"regexp"
	"testing"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestRoutePathsAreRoutes: every route a message may refer to reads as
// the method and path of the route of that name.
func TestRoutePathsAreRoutes(t *testing.T) {
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	for name, path := range v1wire.RoutePaths {
		rt, ok := RouteNamed(string(name))
		if !ok {
			t.Errorf("v1wire.RoutePaths names %q, which is no route", name)
			continue
		}
		if want := rt.Method + " " + param.ReplaceAllString(rt.Path, "{id}"); path != want {
			t.Errorf("v1wire.RoutePaths[%q] = %q, want %q", name, path, want)
		}
	}
}

// TestTaskDetailWithRoutes: a start task's detail and its steps' read
// with the routes they refer to written out.
func TestTaskDetailWithRoutes(t *testing.T) {
	d := "save it again with " + acs.RouteUpdateSettings.Ref()
	tj := taskJSON(acs.StartTask{Detail: &d, Steps: []acs.StepTiming{{Status: acs.TaskError, Detail: d}}})
	want := "save it again with POST /api/v1/settings"
	if tj.Detail == nil || *tj.Detail != want || tj.Steps[0].Detail == nil || *tj.Steps[0].Detail != want {
		t.Errorf("task detail %v, step detail %v, want %q", tj.Detail, tj.Steps[0].Detail, want)
	}
	if d != "save it again with {route:update_settings}" {
		t.Errorf("taskJSON changed the stored detail to %q", d)
	}
}
