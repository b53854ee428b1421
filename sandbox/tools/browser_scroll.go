package tools

import "github.com/acs-project/acs/events"

const browserScrollDescription = `Scroll the page up or down by one viewport.

Use this tool to bring content outside the viewport into view (for example before taking a screenshot). The output tells the new scroll position and whether the top or bottom was reached.

Parameters:
- direction: "up" or "down" (optional, default: "down")`

// browserScrollArgs are the arguments of browser_scroll
// (events.BrowserScrollAction).
type browserScrollArgs struct {
	Direction events.ScrollDirection `json:"direction" description:"Direction to scroll: 'up' or 'down'. Default: 'down'"`
}

var _ = events.BrowserScrollAction(browserScrollArgs{})

// browserScroll describes browser_scroll, a tool of browser_tool_set.
func browserScroll() base {
	return newBase[browserScrollArgs]("BrowserScrollTool", browserScrollDescription, nil)
}
