package tools

import "github.com/acs-project/acs/events"

const browserNavigateDescription = `Navigate to a URL in the browser.

This tool opens a web page in the current tab, or in a new tab (which becomes the current tab), and waits for it to load.

Parameters:
- url: The URL to navigate to (required). A bare host such as "example.com" gets https://.
- new_tab: Whether to open the URL in a new tab (optional, default: false)

Examples:
- Navigate to Google: url="https://www.google.com"
- Open GitHub in a new tab: url="https://github.com", new_tab=true

After navigating, call browser_get_state to see the page's interactive elements, or browser_get_content to read its text.`

// browserNavigateArgs are the arguments of browser_navigate
// (events.BrowserNavigateAction).
type browserNavigateArgs struct {
	URL    string `json:"url" jsonschema:"required" description:"The URL to navigate to"`
	NewTab bool   `json:"new_tab" description:"Whether to open in a new tab. Default: false"`
}

var _ = events.BrowserNavigateAction(browserNavigateArgs{})

// browserNavigate describes browser_navigate, a tool of browser_tool_set.
func browserNavigate() base {
	return newBase[browserNavigateArgs]("BrowserNavigateTool", browserNavigateDescription, nil)
}
