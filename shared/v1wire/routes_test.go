package v1wire_test

import (
	"testing"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// TestWithRoutes: a reference reads as its route's method and path, with
// its id in place; other text, and a reference to an unknown route, stay.
func TestWithRoutes(t *testing.T) {
	cases := []struct{ msg, want string }{
		{"no route here", "no route here"},
		{"Pause one (" + acs.RoutePauseSandbox.Ref() + ")", "Pause one (POST /api/v1/sandboxes/{id}/pause)"},
		{"Use " + acs.RouteResumeSandbox.Ref("sb1") + " first", "Use POST /api/v1/sandboxes/sb1/resume first"},
		{acs.RouteUpdateSecret.Ref("GH_TOKEN") + "; " + acs.RouteUpdateSettings.Ref(), "PUT /api/v1/secrets/GH_TOKEN; POST /api/v1/settings"},
		{"{route:no_such_route}", "{route:no_such_route}"},
	}
	for _, tc := range cases {
		if got := v1wire.WithRoutes(tc.msg); got != tc.want {
			t.Errorf("WithRoutes(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
