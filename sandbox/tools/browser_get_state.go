package tools

import "github.com/acs-project/acs/events"

const browserGetStateDescription = `Get the current state of the page: its URL and title, the open tabs, and the interactive elements (links, buttons, inputs, ...) numbered with the indices that browser_click and browser_type take.

Each element is shown as a compact line such as [3]<input type=text name=q placeholder="Search"> or [0]<a href="/about">About us</a>.

Parameters:
- include_screenshot: Whether to include a screenshot of the current viewport (optional, default: false)

Call it after every navigation or page change: indices are only valid until the page changes.`

// browserGetStateArgs are the arguments of browser_get_state
// (events.BrowserGetStateAction).
type browserGetStateArgs struct {
	IncludeScreenshot bool `json:"include_screenshot" description:"Whether to include a screenshot of the current page. Default: false"`
}

var _ = events.BrowserGetStateAction(browserGetStateArgs{})

// browserGetState describes browser_get_state, a tool of browser_tool_set.
func browserGetState() base {
	return newBase[browserGetStateArgs]("BrowserGetStateTool", browserGetStateDescription, nil)
}
