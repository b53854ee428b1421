package tools

import "github.com/acs-project/acs/events"

const browserClickDescription = `Click an element on the page by its index.

Use this tool to click interactive elements such as buttons, links and form controls. The index comes from the output of browser_get_state. The element is scrolled into view first.

Parameters:
- index: The index of the element to click (from browser_get_state)
- new_tab: Whether to open the link in a new tab (optional, default: false). The new tab becomes the current tab.

If the click opens a new tab (for example a link with target=_blank), that tab becomes the current tab.
Important: only use indices from your latest browser_get_state output. Indices change when the page changes; if an index is not found, call browser_get_state again.`

// browserClickArgs are the arguments of browser_click
// (events.BrowserClickAction).
type browserClickArgs struct {
	Index  int  `json:"index" jsonschema:"required,minimum=0" description:"The index of the element to click (from browser_get_state)"`
	NewTab bool `json:"new_tab" description:"Whether to open the link in a new tab. Default: false"`
}

var _ = events.BrowserClickAction(browserClickArgs{})

// browserClick describes browser_click, a tool of browser_tool_set.
func browserClick() base {
	return newBase[browserClickArgs]("BrowserClickTool", browserClickDescription, nil)
}
