package tools

import "github.com/acs-project/acs/events"

const browserGoBackDescription = `Go back to the previous page in the current tab's history, like the browser's back button.

The output tells the URL of the page you are back on.`

// browserGoBack describes browser_go_back, a tool of browser_tool_set. It takes
// no arguments: its schema is that of events.BrowserGoBackAction.
func browserGoBack() base {
	return newBase[events.BrowserGoBackAction]("BrowserGoBackTool", browserGoBackDescription, nil)
}
