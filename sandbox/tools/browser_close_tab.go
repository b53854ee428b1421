package tools

import "github.com/acs-project/acs/events"

const browserCloseTabDescription = `Close a browser tab.

Closing the current tab makes another open tab current. Closing the last tab leaves an empty (about:blank) tab.

Parameters:
- tab_id: The {{.TabIDLen}}-character id of the tab to close (from browser_list_tabs or browser_get_state)`

// browserCloseTabArgs are the arguments of browser_close_tab
// (events.BrowserCloseTabAction).
type browserCloseTabArgs struct {
	TabID string `json:"tab_id" jsonschema:"required,minLength={{.TabIDLen}},maxLength={{.TabIDLen}}" description:"{{.TabIDLen}}-character id of the tab to close (from browser_list_tabs)"`
}

var _ = events.BrowserCloseTabAction(browserCloseTabArgs{})

// browserCloseTab describes browser_close_tab, a tool of browser_tool_set.
func browserCloseTab() base {
	return newBase[browserCloseTabArgs]("BrowserCloseTabTool", browserCloseTabDescription, tabIDLimits)
}
