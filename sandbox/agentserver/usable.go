package agentserver

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/acs-project/acs/sandbox/tools"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

// browserToolSet is the registered name of the browser tools.
const browserToolSet = "browser_tool_set"

// chromium reports, once per process, whether a Chromium binary is found
// (browser.FindChromium: $ACS_CHROMIUM or chromium on PATH).
var chromium = sync.OnceValue(func() bool {
	_, err := browser.FindChromium()
	if err != nil {
		slog.Info("agent server: the browser tools are unusable", "reason", err.Error())
	}
	return err == nil
})

// usableTools lists the tools server_info reports usable: every registered
// tool, except browser_tool_set when the browser is turned off
// (Config.NoBrowser) or no Chromium is found. Callers that start
// conversations (the control plane's V1 start) add the browser tools only
// when they are listed here; a request naming them is still accepted, and
// the browser tools then report the missing Chromium when used.
func (s *Server) usableTools() []string {
	names := tools.Names()
	if s.cfg.NoBrowser || !chromium() {
		names = slices.DeleteFunc(names, func(n string) bool { return n == browserToolSet })
	}
	return names
}
