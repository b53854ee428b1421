package agentserver_test

import (
	"os"
	"slices"
	"testing"

	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

// TestUsableToolsBrowser: server_info lists browser_tool_set when Chromium
// is found and the browser is not turned off (ACS_BROWSER_TOOLS=false).
func TestUsableToolsBrowser(t *testing.T) {
	if _, err := browser.FindChromium(); err != nil {
		if os.Getenv("ACS_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("no Chromium binary found (%v), and ACS_REQUIRE_CHROMIUM=1 requires one", err)
		}
		t.Skipf("skipping: no Chromium binary found (%v)", err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"default", nil, true},
		{"on", map[string]string{"ACS_BROWSER_TOOLS": "true"}, true},
		{"off", map[string]string{"ACS_BROWSER_TOOLS": "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := agentserver.ConfigFromEnv(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			e := buildEnv(t, envOptions{adjust: func(c *agentserver.Config) { c.NoBrowser = cfg.NoBrowser }})
			var info struct {
				UsableTools []string `json:"usable_tools"`
			}
			e.call("GET", "/server_info", nil).json(t, &info)
			if got := slices.Contains(info.UsableTools, "browser_tool_set"); got != tc.want || !slices.Contains(info.UsableTools, "terminal") {
				t.Fatalf("usable_tools %v: browser_tool_set listed %v, want %v", info.UsableTools, got, tc.want)
			}
		})
	}
	if _, err := agentserver.ConfigFromEnv(func(k string) string {
		return map[string]string{"ACS_BROWSER_TOOLS": "maybe"}[k]
	}); err == nil {
		t.Fatal("ACS_BROWSER_TOOLS=maybe accepted")
	}
}
